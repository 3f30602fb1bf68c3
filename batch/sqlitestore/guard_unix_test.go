//go:build unix

package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/internal/outdir"
)

// rawDB opens the database file at path as a plain SQLite database, to
// make or read one as another program would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func pragma(t *testing.T, db *sql.DB, name string) int64 {
	t.Helper()
	var v int64
	require.NoError(t, db.QueryRow("PRAGMA "+name).Scan(&v))
	return v
}

// A database that is not a ledger is refused, never adopted: it is left
// as it was, without the ledger's tables. A ledger made before ledgers had
// an application id is opened, and given one; a new ledger has it.
func TestADatabaseThatIsNotALedgerIsRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup string
	}{
		{"another program's tables", `CREATE TABLE users (name TEXT)`},
		{"another program's application id", `PRAGMA application_id = 1234`},
		{"another program's tables and version", `CREATE TABLE objects (key TEXT PRIMARY KEY, data BLOB); CREATE TABLE users (name TEXT); PRAGMA user_version = 1`},
		{"another program's version, no tables", `PRAGMA user_version = 7`},
		{"another program's tables beside version 2's", `CREATE TABLE objects (seq INTEGER PRIMARY KEY, key TEXT, data BLOB, stage TEXT, last INTEGER); CREATE TABLE users (name TEXT); PRAGMA user_version = 2`},
		{"version 1's objects at version 2", `CREATE TABLE objects (key TEXT PRIMARY KEY, data BLOB); PRAGMA user_version = 2`},
		{"version 1's objects and a view at version 2", `CREATE TABLE objects (key TEXT PRIMARY KEY, data BLOB); CREATE VIEW jobs AS SELECT 1; PRAGMA user_version = 2`},
		{"version 2's objects at version 3", `CREATE TABLE objects (seq INTEGER PRIMARY KEY, key TEXT, data BLOB, stage TEXT, last INTEGER); PRAGMA user_version = 3`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, DBFile)
			db := rawDB(t, path)
			_, err := db.Exec(c.setup)
			require.NoError(t, err)
			before := tables(t, db)
			require.NoError(t, db.Close())
			raw, err := os.ReadFile(path)
			require.NoError(t, err)

			s, err := Open(dir)
			if err == nil {
				s.Close()
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "not a ledger")
			assert.Contains(t, err.Error(), path)
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, raw, after, "the database was changed")
			es, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, es, 1, "files were made beside the database")
			assert.Equal(t, before, tables(t, rawDB(t, path)), "the database was given tables")
		})
	}
	t.Run("a ledger of version 1 without an application id is ours", func(t *testing.T) {
		dir, _, _, want := v1Ledger(t, false)
		assert.Zero(t, pragma(t, rawDB(t, filepath.Join(dir, DBFile)), "application_id"))
		s := openT(t, dir)
		for key, data := range want {
			got, err := s.Get(context.Background(), key)
			require.NoError(t, err, key)
			assert.Equal(t, data, string(got))
		}
		assert.EqualValues(t, 2, pragma(t, s.db, "user_version"))
		require.NoError(t, s.Close())
		assert.EqualValues(t, applicationID, pragma(t, rawDB(t, filepath.Join(dir, DBFile)), "application_id"), "given once opened")
	})
	t.Run("a ledger without an application id is ours", func(t *testing.T) {
		dir := t.TempDir()
		s := openT(t, dir)
		require.NoError(t, s.Put(context.Background(), "ledger/abc/x.json", []byte(`{}`)))
		require.NoError(t, s.Close())
		db := rawDB(t, filepath.Join(dir, DBFile))
		assert.EqualValues(t, applicationID, pragma(t, db, "application_id"), "a new ledger's")
		_, err := db.Exec(`PRAGMA application_id = 0`)
		require.NoError(t, err)
		require.NoError(t, db.Close())

		s = openT(t, dir)
		got, err := s.Get(context.Background(), "ledger/abc/x.json")
		require.NoError(t, err)
		assert.Equal(t, `{}`, string(got))
		require.NoError(t, s.Close())
		assert.EqualValues(t, applicationID, pragma(t, rawDB(t, filepath.Join(dir, DBFile)), "application_id"), "given once opened")
	})
}

func tables(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_schema ORDER BY name`)
	require.NoError(t, err)
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	return strings.Join(names, " ")
}

// A link, a FIFO, a folder or a device at the name of the database or of
// one of its side files is refused before SQLite opens anything by path:
// nothing is written outside the folder and no open waits on a FIFO.
func TestTheDatabaseFilesGoThroughTheGate(t *testing.T) {
	plants := map[string]func(path, outside string) error{
		"symlink outside": func(path, outside string) error { return os.Symlink(outside, path) },
		"dangling symlink": func(path, outside string) error {
			return os.Symlink(outside+".new", path)
		},
		"hard link": func(path, outside string) error { return os.Link(outside, path) },
		"FIFO":      func(path, _ string) error { return syscall.Mkfifo(path, 0o644) },
		"folder":    func(path, _ string) error { return os.Mkdir(path, 0o755) },
		"device":    func(path, _ string) error { return syscall.Mknod(path, syscall.S_IFCHR|0o666, 1<<8|3) },
	}
	for _, name := range dbFiles {
		for kind, plant := range plants {
			t.Run(name+"/"+kind, func(t *testing.T) {
				top := t.TempDir()
				dir := filepath.Join(top, "out")
				require.NoError(t, os.Mkdir(dir, 0o755))
				outside := filepath.Join(top, "outside")
				require.NoError(t, os.WriteFile(outside, []byte("keep"), 0o644))
				if err := plant(filepath.Join(dir, name), outside); err != nil {
					t.Skip(kind, "cannot be made here:", err)
				}
				s, err := Open(dir)
				if err == nil {
					s.Close()
				}
				require.Error(t, err)
				assert.True(t, errors.Is(err, outdir.ErrNotRegular), err)
				assert.Contains(t, err.Error(), filepath.Join(dir, name))
				b, _ := os.ReadFile(outside)
				assert.Equal(t, "keep", string(b))
				entries, _ := os.ReadDir(top)
				assert.Len(t, entries, 2, "only the folder and the file outside it")
				es, _ := os.ReadDir(dir)
				assert.Len(t, es, 1, "nothing made in the folder but what was planted")
			})
		}
	}
}
