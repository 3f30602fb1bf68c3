package batchcmd

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// libraryWords are the names package batch gives what a flag sets.
var libraryWords = regexp.MustCompile(`Options\.[A-Z]\w*|\(pgledger\)|an operation is an API path`)

// Every option or ledger the library's texts name is told as the flag
// that sets it: a text of package batch (or its ledgers) that names one
// reads, through inFlags, with no library name left and a flag in its
// place.
func TestEveryLibraryWordHasItsFlag(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..", "batch")
	fset := token.NewFileSet()
	found := 0
	for _, dir := range []string{".", "sqlledger", "sqliteledger", "pgledger"} {
		names, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil || !libraryWords.MatchString(s) {
					return true
				}
				found++
				said := inFlags(s)
				if left := libraryWords.FindString(said); left != "" {
					t.Errorf("%s: %q keeps %s", fset.Position(lit.Pos()), said, left)
				}
				if !strings.Contains(said, "--") {
					t.Errorf("%s: %q names no flag", fset.Position(lit.Pos()), said)
				}
				return true
			})
		}
	}
	if found < 3 {
		t.Fatalf("found %d texts naming an option or a ledger in package batch; want the ones it has (3 or more)", found)
	}
}
