package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch/sqlledger"
)

// Where a page says to which schema version a ledger is brought, it is
// the version the code writes.
func TestDocsBringLedgersToTheSchemaOfTheCode(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	require.NoError(t, err)
	brought := regexp.MustCompile(`brought\s+to\s+(?:schema\s+|version\s+|this\s+schema)?(\d*)`)
	found := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, m := range brought.FindAllSubmatch(text, -1) {
			found++
			if len(m[1]) == 0 {
				continue // "brought to this schema"
			}
			assert.Equal(t, strconv.Itoa(sqlledger.Version), string(m[1]), "%s: %q", page, m[0])
		}
	}
	require.NotZero(t, found, "no page says to which schema a ledger is brought")
}
