package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOptionsMdListsEveryOption keeps docs/options.md's word: every
// exported With* function of the SDK's package (read from its source, test
// files aside) is in it, written as `WithName(`.
func TestOptionsMdListsEveryOption(t *testing.T) {
	doc, err := os.ReadFile("options.md")
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join("..", "*.go"))
	require.NoError(t, err)
	var options []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if ok && fn.Recv == nil && fn.Name.IsExported() && strings.HasPrefix(fn.Name.Name, "With") {
				options = append(options, fn.Name.Name)
			}
		}
	}
	require.GreaterOrEqual(t, len(options), 15, "the SDK's options were not found")
	for _, o := range options {
		assert.Contains(t, string(doc), "`"+o+"(", "docs/options.md says it lists every option, and misses %s", o)
	}
}
