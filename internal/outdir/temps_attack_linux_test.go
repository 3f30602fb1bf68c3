//go:build linux

package outdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A folder named like a temporary file is never removed, even when it
// takes a dead temporary file's place between the sweep's look at the
// name and its removal (here: the two swapped, again and again, by
// renameat2's exchange, while the sweep runs).
func TestAttackRemoveDeadTempsNeverRemovesAFolderSwappedIn(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a, b := filepath.Join(dir, ".p-x.tmp"), filepath.Join(dir, "swap")
	old := time.Now().Add(-time.Hour)
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	makeDead := func(name string) {
		if err := os.WriteFile(name, []byte("dead"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(name, old, old); err != nil {
			t.Fatal(err)
		}
	}
	makeDead(a)
	for range 3000 {
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() {
			for !stop.Load() {
				if unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE) != nil {
					return // the file was removed
				}
			}
		})
		_, _ = d.RemoveDeadTemps(".", "p")
		stop.Store(true)
		wg.Wait()
		var folders int
		for _, name := range []string{a, b} {
			st, err := os.Lstat(name)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				makeDead(name) // the dead file went, as it should: another
			case err != nil:
				t.Fatal(err)
			case st.IsDir():
				folders++
			}
		}
		if folders != 1 {
			t.Fatal("the sweep removed a folder named like a temporary file")
		}
	}
}
