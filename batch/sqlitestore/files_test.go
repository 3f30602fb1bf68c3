package sqlitestore

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeKey writes data to key with a writer of s.
func writeKey(t *testing.T, s *Store, key, data string) {
	t.Helper()
	w, err := s.NewWriter(t.Context(), key, nil)
	require.NoError(t, err)
	_, err = io.WriteString(w, data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
}

func getT(t *testing.T, s *Store, key string) string {
	t.Helper()
	b, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	return string(b)
}

func readT(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// A file at an output's name that the ledger does not know may hold an
// answer paid for by a run whose ledger was lost: the new output takes the
// name, and the earlier file is kept beside it, never written over. A
// file the ledger wrote itself is replaced, as the store's contract says.
func TestAnOutputNeverWritesOverAFileTheLedgerDoesNotKnow(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "out"), 0o755))
	key := "out/000001-text-to-image-3fa9c1.png"
	earlier := filepath.Join(dir, "out", "000001-text-to-image-3fa9c1.earlier-1.png")
	require.NoError(t, os.WriteFile(filepath.Join(dir, key), []byte("paid before"), 0o644))
	// A name a move aside would take is taken too: it is not replaced.
	require.NoError(t, os.WriteFile(earlier, []byte("paid long before"), 0o644))
	s := openT(t, dir)

	writeKey(t, s, key, "paid now")
	assert.Equal(t, "paid now", getT(t, s, key))
	assert.Equal(t, "paid long before", readT(t, earlier))
	assert.Equal(t, "paid before", readT(t, filepath.Join(dir, "out", "000001-text-to-image-3fa9c1.earlier-2.png")))

	writeKey(t, s, key, "written again")
	assert.Equal(t, "written again", getT(t, s, key))
	es, err := os.ReadDir(filepath.Join(dir, "out"))
	require.NoError(t, err)
	assert.Len(t, es, 3, "a file the ledger wrote is replaced, not moved aside")
}
