// Command cassettecheck fails when a cassette holds anything that looks
// like an access key: run it in CI over the cassettes a change commits.
//
//	go run github.com/creativegen/creative-go/creativetest/cassette/cassettecheck [-pattern regexp] dir...
//
// It looks for CREATIVE_ACCESS_KEY when set, in every form the SDK's
// redactor knows, for matches of -pattern (the shape of your keys), and
// for fields, headers and query parameters named as secrets whose value
// is not redacted (see cassette.Check). It exits 1 with the findings, 2 on
// a usage error.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"

	"github.com/creativegen/creative-go/creativetest/cassette"
)

func main() {
	var patterns []*regexp.Regexp
	flag.Func("pattern", "a regular expression your keys match, such as `ck_[A-Za-z0-9]{32}` (repeatable)", func(s string) error {
		re, err := regexp.Compile(s)
		if err == nil {
			patterns = append(patterns, re)
		}
		return err
	})
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: cassettecheck [-pattern regexp] dir...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	failed := false
	for _, dir := range flag.Args() {
		if err := cassette.Check(dir, &cassette.CheckOptions{Patterns: patterns}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}
