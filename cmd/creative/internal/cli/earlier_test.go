package cli

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch/sqliteledger"
)

// listFiles lists the regular files under dir, relative to it, with their
// contents.
func listFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	}))
	return files
}

// A folder holding what earlier runs wrote and no ledger (ledger.db
// emptied or removed) is refused before anything is sent: a run would pay
// for every job again and write over the earlier outputs. --start-over
// moves those files, and only those, into a folder of their own and
// begins a new ledger.
func TestEarlierOutputsWithoutALedgerAreRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		lose func(t *testing.T, db string)
	}{
		{"empty ledger", func(t *testing.T, db string) { require.NoError(t, os.Truncate(db, 0)) }},
		{"missing ledger", func(t *testing.T, db string) { require.NoError(t, os.Remove(db)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, env := fakeEnv(t)
			jobs := writeJobs(t, 3)
			out := t.TempDir()
			code, _, stderr := runCLI(t, env, "batch", jobs, "--out", out)
			require.Equal(t, 0, code, stderr)
			require.Equal(t, 3, srv.Count("image/text-to-image"))
			require.NoError(t, os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644))
			c.lose(t, filepath.Join(out, sqliteledger.File))
			before := listFiles(t, out)

			srv.Reset()
			code, _, stderr = runCLI(t, env, "batch", jobs, "--out", out)
			assert.Equal(t, exitUsage, code, stderr)
			assert.Contains(t, stderr, "--start-over")
			assert.Contains(t, stderr, "another --out")
			assert.Contains(t, stderr, "nothing was sent")
			assert.Empty(t, srv.Requests())
			assert.Equal(t, before, listFiles(t, out), "the folder is left as it was")

			code, stdout, stderr := runCLI(t, env, "batch", jobs, "--out", out, "--dry-run")
			assert.Equal(t, exitUsage, code, stdout+stderr)
			assert.Empty(t, srv.Requests())

			code, _, stderr = runCLI(t, env, "batch", jobs, "--out", out, "--start-over")
			require.Equal(t, 0, code, stderr)
			assert.Equal(t, 3, srv.Count("image/text-to-image"), "a new ledger pays again")
			after := listFiles(t, out)
			assert.Equal(t, "mine", after["notes.txt"], "a file no run wrote stays")
			var moved []string
			for name, content := range before {
				if name == "notes.txt" {
					continue
				}
				found := false
				for got, gotContent := range after {
					if strings.HasPrefix(got, "earlier-") && strings.HasSuffix(got, "/"+name) {
						found = true
						assert.Equal(t, content, gotContent, name)
					}
				}
				assert.True(t, found, "%s was not moved aside", name)
				moved = append(moved, name)
			}
			sort.Strings(moved)
			assert.NotEmpty(t, moved)
			assert.Contains(t, stderr, "moved ")
		})
	}
}

// A folder that holds other files and no ledger is no earlier run's: a
// first run there goes on.
func TestAFolderOfOtherFilesIsNotAnEarlierRun(t *testing.T) {
	srv, env := fakeEnv(t)
	jobs := writeJobs(t, 2)
	out := filepath.Dir(jobs) // the jobs file's own folder, as --out . is
	require.NoError(t, os.WriteFile(filepath.Join(out, "photo.png"), []byte("x"), 0o644))
	code, _, stderr := runCLI(t, env, "batch", jobs, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 2, srv.Count("image/text-to-image"))
}
