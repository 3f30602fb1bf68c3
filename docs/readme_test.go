// Package docs holds the documentation beyond the README; its tests keep
// the README's Go code compiling, and options.md listing every option,
// against the SDK as it is.
package docs_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goBlocks returns the ```go blocks of a Markdown file, in order.
func goBlocks(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var blocks []string
	rest := string(b)
	for {
		_, after, ok := strings.Cut(rest, "\n```go\n")
		if !ok {
			return blocks
		}
		block, after, ok := strings.Cut(after, "\n```\n")
		require.True(t, ok, "a ```go block without its end in %s", path)
		blocks = append(blocks, block)
		rest = after
	}
}

// fragmentPreamble declares what the README's fragments take as given.
const fragmentPreamble = `
var (
	c       *creative.Client
	ctx     context.Context
	req     creative.TextToImageRequest
	images  []creative.Image
	account struct{ Key, ID string }
)

// makeReport stands for the reader's own code.
func makeReport(ctx context.Context, c *creative.Client) error { return nil }
`

// imports are the packages fragments may use, by the name they use.
var imports = map[string]string{
	"context": `"context"`, "errors": `"errors"`, "fmt": `"fmt"`, "log": `"log"`,
	"time": `"time"`, "testing": `"testing"`, "http": `"net/http"`, "slog": `"log/slog"`,
	"os": `"os"`, "io": `"io"`, "creative": `creative "github.com/creativegen/creative-go"`,
	"ids": `"github.com/creativegen/creative-go/ids"`, "creativetest": `"github.com/creativegen/creative-go/creativetest"`,
	"rate": `"golang.org/x/time/rate"`,
}

// declared finds the names a fragment's own statements declare with :=,
// so that the wrapper can mark them used, as the code after the fragment
// would.
var declared = regexp.MustCompile(`(?m)^(\w+(?:, \w+)*) :=`)

// source turns a README block into a Go file: a whole program as it is,
// declarations after the preamble, statements inside a function that
// returns an error.
func source(block string) string {
	if strings.HasPrefix(block, "package ") {
		return block
	}
	body := block
	if !strings.HasPrefix(block, "func ") {
		var uses strings.Builder
		for _, m := range declared.FindAllStringSubmatch(block, -1) {
			for _, name := range strings.Split(m[1], ",") {
				if name = strings.TrimSpace(name); name != "_" {
					fmt.Fprintf(&uses, "\t_ = %s\n", name)
				}
			}
		}
		body = "func _() error {\n" + block + "\n" + uses.String() + "\treturn nil\n}\n"
	}
	code := fragmentPreamble + body
	var imps []string
	for name, path := range imports {
		if regexp.MustCompile(`\b` + name + `\.`).MatchString(code) {
			imps = append(imps, path)
		}
	}
	return "package readme\n\nimport (\n\t" + strings.Join(imps, "\n\t") + "\n)\n" + code
}

// TestTheREADMEsGoCodeCompiles builds every Go block of the README, each
// as a package of its own inside this module, so that a renamed method or
// a changed signature fails here before a reader copies it.
func TestTheREADMEsGoCodeCompiles(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	blocks := goBlocks(t, filepath.Join("..", "README.md"))
	require.GreaterOrEqual(t, len(blocks), 5, "the README's Go blocks were not found")
	// A directory whose name starts with _ is skipped by ./... patterns,
	// so other builds of the module do not see it.
	dir, err := os.MkdirTemp(".", "_readme-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	for i, block := range blocks {
		sub := filepath.Join(dir, fmt.Sprintf("block%d", i+1))
		require.NoError(t, os.Mkdir(sub, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(sub, "block.go"), []byte(source(block)), 0o644))
	}
	for i := range blocks {
		pkg := "./" + filepath.ToSlash(filepath.Join(dir, fmt.Sprintf("block%d", i+1)))
		out, err := exec.Command(goTool, "vet", pkg).CombinedOutput()
		if err != nil {
			src, _ := os.ReadFile(filepath.Join(pkg, "block.go"))
			t.Errorf("README Go block %d does not compile:\n%s\n%s", i+1, out, src)
		}
	}
}

// TestTheREADMEStaysShort keeps the README to what a first reading needs:
// at most 220 lines, the rest in this folder.
func TestTheREADMEStaysShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	require.NoError(t, err)
	lines := strings.Count(string(b), "\n")
	require.LessOrEqual(t, lines, 220, "README.md has %d lines: move detail to docs/", lines)
}
