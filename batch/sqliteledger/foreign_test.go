package sqliteledger

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A database of another program is refused, never written, whatever its
// PRAGMA user_version says: programs number their schemas too, and one at
// the ledger's version, with tables of other names or of the ledger's
// (runs, jobs), is no ledger.
func TestADatabaseOfAnotherProgramAtTheLedgersVersionIsRefused(t *testing.T) {
	dir := t.TempDir()
	db := rawDB(t, filepath.Join(dir, File))
	_, err := db.Exec(`CREATE TABLE jobs (name TEXT); INSERT INTO jobs VALUES ('theirs'); PRAGMA user_version = 3`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	l, err := Open(dir)
	if l != nil {
		_ = l.Close()
	}
	require.ErrorIs(t, err, errNotLedger)
	db = rawDB(t, filepath.Join(dir, File))
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM sqlite_schema`).Scan(&n))
	assert.Equal(t, 1, n, "the database is left as it was")
}
