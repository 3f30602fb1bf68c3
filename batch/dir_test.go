package batch_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/storetest"
)

func TestDirKeepsTheStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) batch.Store {
		d, err := batch.NewDir(filepath.Join(t.TempDir(), "out"))
		require.NoError(t, err)
		return d
	})
}

func TestDirRefusesKeysThroughSymlinksThatLeaveIt(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))
	d, err := batch.NewDir(dir)
	require.NoError(t, err)
	defer d.Close()
	_, err = d.Get(t.Context(), "link/secret")
	assert.Error(t, err)
	assert.Error(t, d.Put(t.Context(), "link/new", []byte("x")))
	_, err = os.Stat(filepath.Join(outside, "new"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was written outside the folder")
}

// TestDirRemovesTheTemporaryFilesOfAKilledRun kills a process that holds a
// writer open; the next NewDir removes its temporary file, and not the one
// of a Dir still open.
func TestDirRemovesTheTemporaryFilesOfAKilledRun(t *testing.T) {
	if os.Getenv("BATCH_DIR_CHILD") != "" {
		d, err := batch.NewDir(os.Getenv("BATCH_DIR_CHILD"))
		if err != nil {
			os.Exit(3)
		}
		w, _ := d.NewWriter(t.Context(), "half.bin", nil)
		_, _ = w.Write([]byte("paid bytes, half written"))
		os.Stdout.WriteString("writing\n")
		select {} // killed here
	}
	dir := t.TempDir()
	live, err := batch.NewDir(dir)
	require.NoError(t, err)
	defer live.Close()
	w, err := live.NewWriter(t.Context(), "live.bin", nil)
	require.NoError(t, err)
	_, _ = w.Write([]byte("in progress"))

	cmd := exec.Command(os.Args[0], "-test.run", "^TestDirRemovesTheTemporaryFilesOfAKilledRun$")
	cmd.Env = append(os.Environ(), "BATCH_DIR_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	buf := make([]byte, 8)
	_, err = out.Read(buf)
	require.NoError(t, err)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Equal(t, 4, countFiles(t, filepath.Join(dir, ".tmp")), "two locks and two temporary files")
	journaled := runtime.GOOS == "linux"
	if journaled {
		require.Len(t, journalLogs(t, dir), 2, "a log for each Dir")
	}

	again, err := batch.NewDir(dir)
	require.NoError(t, err)
	assert.Equal(t, 3, countFiles(t, filepath.Join(dir, ".tmp")), "the killed run's folder is gone; the live one and the new one stay")
	if journaled {
		assert.Len(t, journalLogs(t, dir), 2, "the killed run's log is gone; the live one and the new one stay")
	}
	require.NoError(t, w.Close(), "the live writer was not disturbed")
	ok, err := again.Exists(t.Context(), "live.bin")
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, again.Close())
	require.NoError(t, live.Close())
	assert.NoDirExists(t, filepath.Join(dir, ".tmp"), "Close removes its own, and the folder once empty")
}

// journalLogs lists the logs of the journal of the folder dir.
func journalLogs(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, ".journal", "*.log"))
	require.NoError(t, err)
	return names
}

// countFiles counts the regular files under dir.
func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	require.NoError(t, filepath.WalkDir(dir, func(_ string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			n++
		}
		return err
	}))
	return n
}
