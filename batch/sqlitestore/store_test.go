package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/storetest"
)

// local says every folder is on a local file system.
func local(string) (string, error) { return "", nil }

// openT opens a Store on dir, closed when the test ends.
func openT(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestStoreKeepsTheStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) batch.Store {
		s, err := Open(t.TempDir())
		require.NoError(t, err)
		return s
	})
}

// The ledger is rows of ledger.db, the outputs are plain files beside it.
func TestTheLedgerIsTheDatabaseAndOutputsAreFiles(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	ctx := t.Context()
	require.NoError(t, s.Create(ctx, "ledger/3fa/job.0001.json", []byte(`{"state":"claimed"}`)))
	w, err := s.NewWriter(ctx, "000001-text-to-image-3fa9c1.png", nil)
	require.NoError(t, err)
	_, err = w.Write([]byte("\x89PNG"))
	require.NoError(t, err)
	require.NoError(t, w.Close())

	b, err := os.ReadFile(filepath.Join(dir, "000001-text-to-image-3fa9c1.png"))
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(b), "an output is a file people open")
	_, err = os.Stat(filepath.Join(dir, "ledger"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no ledger folder")
	var data string
	require.NoError(t, s.db.QueryRow(`SELECT CAST(data AS TEXT) FROM objects WHERE key = ?`, "ledger/3fa/job.0001.json").Scan(&data))
	assert.Equal(t, `{"state":"claimed"}`, data)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.True(t, strings.HasPrefix(e.Name(), DBFile) || e.Name() == "000001-text-to-image-3fa9c1.png", "left in the folder: %s", e.Name())
	}
	var isFile bool
	require.NoError(t, s.db.QueryRow(`SELECT data IS NULL FROM objects WHERE key = ?`, "000001-text-to-image-3fa9c1.png").Scan(&isFile))
	assert.True(t, isFile, "an output is recorded as a file once in place")
	for _, key := range []string{DBFile, DBFile + "-wal", ".hidden", "a/.hidden"} {
		assert.Error(t, s.Put(ctx, key, []byte("x")), "the key %s is the store's own", key)
	}
}

// Deleting an output removes its row and its file.
func TestDeletingAnOutputRemovesItsFile(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	ctx := t.Context()
	w, err := s.NewWriter(ctx, "out/000001.png", nil)
	require.NoError(t, err)
	_, err = w.Write([]byte("\x89PNG"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, s.Delete(ctx, "out/000001.png"))
	_, err = os.Stat(filepath.Join(dir, "out", "000001.png"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = s.Get(ctx, "out/000001.png")
	assert.ErrorIs(t, err, batch.ErrNotExist)
	var rows int
	require.NoError(t, s.db.QueryRow(`SELECT count(*) FROM objects`).Scan(&rows))
	assert.Zero(t, rows)
}

// Opening the folder removes the temporary files a killed process left a
// day ago or more, and nothing else.
func TestOpeningSweepsTheTemporaryFilesOfKilledProcesses(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-25 * time.Hour)
	files := map[string]bool{ // name: kept
		"." + tempPrefix + "0123456789abcdef.tmp": false,
		"." + tempPrefix + "fedcba9876543210.tmp": true, // fresh: a process may write it
		".other.tmp":          true,
		"000001-a-3fa9c1.png": true,
		"sub/deeper/." + tempPrefix + "00112233445566ff.tmp": false, // outputs under subfolders have their temporaries beside them
	}
	outside := t.TempDir()
	outsideTemp := filepath.Join(outside, "."+tempPrefix+"aabbccddeeff0011.tmp")
	require.NoError(t, os.WriteFile(outsideTemp, []byte("x"), 0o644))
	require.NoError(t, os.Chtimes(outsideTemp, old, old))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "away")))
	for name, kept := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
		if !kept || name == ".other.tmp" || name == "000001-a-3fa9c1.png" {
			require.NoError(t, os.Chtimes(p, old, old))
		}
	}
	openT(t, dir)
	for name, kept := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.Equal(t, kept, err == nil, "%s kept", name)
	}
	assert.FileExists(t, outsideTemp, "the sweep follows no link out of the folder")
}

// A symbolic link in the folder cannot take a key outside it.
func TestKeysThroughSymlinksThatLeaveTheFolderAreRefused(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "away")))
	s := openT(t, dir)
	ctx := t.Context()
	require.NoError(t, s.Put(ctx, "away/x.png", []byte("x")), "a small object is a row, not a file")
	_, err := s.NewWriter(ctx, "away/z.png", nil)
	assert.Error(t, err)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written outside the folder")
}

// The writes waiting at one moment share a transaction: one sync of the
// WAL for many claims.
func TestConcurrentCreatesShareCommits(t *testing.T) {
	s := openT(t, t.TempDir())
	const writers, each = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				errs <- s.Create(t.Context(), fmt.Sprintf("ledger/%03x/%d.json", w, i), []byte("{}"))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	commits := s.w.commits.Load()
	t.Logf("%d creates in %d commits", writers*each, commits)
	assert.Less(t, commits, int64(writers*each), "creates waiting together are committed together")
	var n int
	require.NoError(t, s.db.QueryRow(`SELECT count(*) FROM objects`).Scan(&n))
	assert.Equal(t, writers*each, n)
}

// Two Stores on one folder, as two processes open it, share one ledger:
// a key created by one exists for the other.
func TestTwoStoresOnOneFolderShareTheLedger(t *testing.T) {
	dir := t.TempDir()
	a, b := openT(t, dir), openT(t, dir)
	ctx := t.Context()
	require.NoError(t, a.Create(ctx, "ledger/abc/j.0001.json", []byte("a")))
	err := b.Create(ctx, "ledger/abc/j.0001.json", []byte("b"))
	require.ErrorIs(t, err, batch.ErrExist)
	got, err := b.Get(ctx, "ledger/abc/j.0001.json")
	require.NoError(t, err)
	assert.Equal(t, "a", string(got))
}

func TestAFolderOnANetworkFileSystemIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	_, err := open(dir, func(string) (string, error) { return "NFS", nil }, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "network file system (NFS)")
	assert.Contains(t, err.Error(), "a bucket URL")
	_, err = os.Stat(dir)
	assert.ErrorIs(t, err, os.ErrNotExist, "no folder is made")

	// This machine's own temporary folder is local.
	name, err := networkFS(t.TempDir())
	require.NoError(t, err)
	assert.Empty(t, name)
}

func TestTheSchemaIsVersioned(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	require.NoError(t, err)
	var v int
	require.NoError(t, s.db.QueryRow(`PRAGMA user_version`).Scan(&v))
	assert.Equal(t, schemaVersion, v)
	var mode string
	require.NoError(t, s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	assert.Equal(t, "wal", mode)
	var sync int
	require.NoError(t, s.db.QueryRow(`PRAGMA synchronous`).Scan(&sync))
	assert.Equal(t, 2, sync, "synchronous=FULL")
	_, err = s.db.Exec(`PRAGMA user_version = 99`)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	_, err = Open(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "version 99, written by a newer version")
}

// oldFolder writes a folder as the earlier version of the ledger left it:
// records as files under ledger/, an output beside them.
func oldFolder(t *testing.T) (dir string, records map[string]string) {
	t.Helper()
	dir = t.TempDir()
	records = map[string]string{
		"ledger/3fa/3fa00000000000000000000000000001.0001.json":     `{"job":"3fa00000000000000000000000000001","state":"claimed","attempt":1}`,
		"ledger/3fa/3fa00000000000000000000000000001.0001.end.json": `{"job":"3fa00000000000000000000000000001","state":"done","attempt":1}`,
		"ledger/runs/0123456789abcdef0123456789abcdef.json":         `{"run":"0123456789abcdef0123456789abcdef"}`,
	}
	for key, data := range records {
		p := filepath.Join(dir, filepath.FromSlash(key))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "000001-text-to-image-3fa000.png"), []byte("png"), 0o644))
	return dir, records
}

func TestTheLedgerFolderOfAnEarlierVersionIsImportedOnce(t *testing.T) {
	dir, records := oldFolder(t)
	before, err := os.ReadFile(filepath.Join(dir, "ledger/3fa/3fa00000000000000000000000000001.0001.end.json"))
	require.NoError(t, err)
	s, err := Open(dir)
	require.NoError(t, err)
	ctx := t.Context()
	for key, data := range records {
		got, err := s.Get(ctx, key)
		require.NoError(t, err, key)
		assert.Equal(t, data, string(got))
	}
	var keys []string
	for k, err := range s.List(ctx, "") {
		require.NoError(t, err)
		keys = append(keys, k)
	}
	assert.Len(t, keys, len(records)+1, "the records and the output, each once: %q", keys)
	after, err := os.ReadFile(filepath.Join(dir, "ledger/3fa/3fa00000000000000000000000000001.0001.end.json"))
	require.NoError(t, err)
	assert.Equal(t, before, after, "the old files are left as they were")
	require.NoError(t, s.Close())

	// Imported once: a file changed since is not read again.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ledger/3fa/3fa00000000000000000000000000002.0001.json"), []byte(`{}`), 0o644))
	s = openT(t, dir)
	ok, err := s.Exists(ctx, "ledger/3fa/3fa00000000000000000000000000002.0001.json")
	require.NoError(t, err)
	assert.False(t, ok, "the folder is imported only when the database is made")
}

// The outputs of an earlier version are read a page of names at a time:
// more than a page of them are all imported.
func TestEveryOutputOfAnEarlierVersionIsImported(t *testing.T) {
	dir, _ := oldFolder(t)
	n := 3*listPage + 7
	for i := range n {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("out-%04d.png", i)), []byte("png"), 0o644))
	}
	s := openT(t, dir)
	count := 0
	for k, err := range s.List(t.Context(), "out-") {
		require.NoError(t, err)
		ok, err := s.Exists(t.Context(), k)
		require.NoError(t, err)
		assert.True(t, ok, k)
		count++
	}
	assert.Equal(t, n, count)
}

// A ledger that is not the folder itself (a symbolic link to where it was
// moved, say) is refused: taken as no ledger, its claims and ended jobs
// would be forgotten and paid for again.
func TestAnEarlierVersionsLedgerThatIsNotAFolderIsRefused(t *testing.T) {
	dir, _ := oldFolder(t)
	moved := filepath.Join(t.TempDir(), "ledger")
	require.NoError(t, os.Rename(filepath.Join(dir, "ledger"), moved))
	require.NoError(t, os.Symlink(moved, filepath.Join(dir, "ledger")))
	_, err := Open(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not the folder of records an earlier version kept")

	// The folder put back, the import is made then.
	require.NoError(t, os.Remove(filepath.Join(dir, "ledger")))
	require.NoError(t, os.Rename(moved, filepath.Join(dir, "ledger")))
	s := openT(t, dir)
	ok, err := s.Exists(t.Context(), "ledger/3fa/3fa00000000000000000000000000001.0001.end.json")
	require.NoError(t, err)
	assert.True(t, ok, "imported once the folder is back")
}

func TestAnEarlierVersionsFolderThatDidNotCloseIsRefused(t *testing.T) {
	dir, _ := oldFolder(t)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".journal"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".journal", "0123abcd.log"), []byte("entries"), 0o644))
	_, err := Open(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), ".journal/ holds its log")

	require.NoError(t, os.RemoveAll(filepath.Join(dir, ".journal")))
	s := openT(t, dir)
	ok, err := s.Exists(t.Context(), "ledger/3fa/3fa00000000000000000000000000001.0001.end.json")
	require.NoError(t, err)
	assert.True(t, ok, "imported once the journal is gone")
}

// query runs q on the Store's database.
func query(t *testing.T, db *sql.DB, q string) [][]string {
	t.Helper()
	rows, err := db.Query(q)
	require.NoError(t, err, q)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
		}
		out = append(out, row)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestAWriteAfterCloseFails(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "a second Close is harmless")
	err = s.Create(context.Background(), "ledger/abc/x.json", nil)
	require.Error(t, err)
	assert.False(t, errors.Is(err, batch.ErrExist))
}
