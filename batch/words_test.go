package batch_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// flagName is a command-line flag such as --repay-expired.
var flagName = regexp.MustCompile(`(^|[^-\w])--[a-z][a-z-]*`)

// The library says what happened in its own words (Options.RepayLost, a
// PostgreSQL ledger): no message of batch or its ledgers, nor its page,
// names a flag of a command line, which says for itself which flag helps.
func TestMessagesNameNoCommandLineFlag(t *testing.T) {
	var files []string
	for _, dir := range []string{".", "sqlledger", "sqliteledger", "pgledger"} {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if !strings.HasSuffix(n, "_test.go") {
				files = append(files, n)
			}
		}
	}
	if len(files) < 20 {
		t.Fatalf("found %d source files: run from the package's folder", len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
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
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			if m := flagName.FindString(s); m != "" {
				t.Errorf("%s: %q names the flag %s", fset.Position(lit.Pos()), s, strings.TrimLeft(m, " ("))
			}
			return true
		})
	}
	page, err := os.ReadFile(filepath.Join("page", "page.js"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), "creative ") {
		t.Errorf("page.js names a command: %s", regexp.MustCompile(`[^"]*creative [^"]*`).Find(page))
	}
}
