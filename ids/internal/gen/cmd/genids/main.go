// Command genids writes ids_gen.go from ids.json; `go generate ./ids/...`
// runs it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/creativegen/creative-go/ids/internal/gen"
)

func main() {
	in := flag.String("in", "ids.json", "data file to read")
	out := flag.String("out", "ids_gen.go", "Go file to write")
	flag.Parse()
	data, err := os.ReadFile(*in)
	if err == nil {
		var src []byte
		if src, err = gen.Generate(data); err == nil {
			err = os.WriteFile(*out, src, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genids:", err)
		os.Exit(1)
	}
}
