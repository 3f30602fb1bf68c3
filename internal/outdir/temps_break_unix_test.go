//go:build unix

package outdir

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// What only looks like a dead temporary file is never removed: a link
// named like one (nor what it points to), a folder, a FIFO, and a
// temporary file in a subfolder; nor does a FIFO make the sweep wait.
func TestRemoveDeadTempsRemovesNothingElse(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	old := time.Now().Add(-2 * tempQuiet)
	target := filepath.Join(outside, ".out-0123456789abcdef.tmp")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(target, []byte("keep"), 0o644))
	must(os.Chtimes(target, old, old))
	must(os.Symlink(target, filepath.Join(dir, ".out-1111111111111111.tmp")))
	must(os.Symlink(outside, filepath.Join(dir, ".out-2222222222222222.tmp")))
	must(os.Mkdir(filepath.Join(dir, ".out-3333333333333333.tmp"), 0o755))
	must(os.WriteFile(filepath.Join(dir, ".out-3333333333333333.tmp", "x"), []byte("keep"), 0o644))
	must(syscall.Mkfifo(filepath.Join(dir, ".out-4444444444444444.tmp"), 0o644))
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "sub", ".out-5555555555555555.tmp"), []byte("keep"), 0o644))
	for _, p := range []string{".out-3333333333333333.tmp", ".out-4444444444444444.tmp", "sub/.out-5555555555555555.tmp", "sub"} {
		must(os.Chtimes(filepath.Join(dir, p), old, old))
	}
	// A hard link of a person's file under a temporary name: removing the
	// name leaves the file.
	must(os.WriteFile(filepath.Join(dir, "mine.txt"), []byte("keep"), 0o644))
	must(os.Link(filepath.Join(dir, "mine.txt"), filepath.Join(dir, ".out-6666666666666666.tmp")))
	must(os.Chtimes(filepath.Join(dir, "mine.txt"), old, old))
	d, err := Open(dir)
	must(err)
	defer d.Close()
	done := make(chan int, 1)
	go func() {
		n, err := d.RemoveDeadTemps(".", "out-")
		if err != nil {
			t.Error(err)
		}
		done <- n
	}()
	select {
	case n := <-done:
		if n != 1 {
			t.Errorf("removed %d, want 1 (the hard link's name)", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("RemoveDeadTemps waits on a FIFO")
	}
	for _, p := range []string{target, filepath.Join(dir, "mine.txt"), filepath.Join(dir, ".out-3333333333333333.tmp", "x"), filepath.Join(dir, "sub", ".out-5555555555555555.tmp")} {
		if b, err := os.ReadFile(p); err != nil || string(b) != "keep" {
			t.Errorf("%s: %q, %v: want it kept", p, b, err)
		}
	}
	for _, p := range []string{".out-1111111111111111.tmp", ".out-2222222222222222.tmp", ".out-4444444444444444.tmp"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}
