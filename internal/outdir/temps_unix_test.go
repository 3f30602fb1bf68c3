//go:build unix

package outdir

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRemoveDeadTempsKeepsWhatALiveWriterHolds: of the temporary files of
// a prefix, those no one holds the lock of and unwritten for a minute are
// removed; a live writer's is kept however old, a fresh one kept, other
// names left alone.
func TestRemoveDeadTempsKeepsWhatALiveWriterHolds(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	live, err := d.CreateTemp(".", "out-")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	old := time.Now().Add(-2 * tempQuiet)
	files := map[string]bool{ // name -> kept
		live.Name():         true,
		".out-dead.tmp":     false, // a killed writer's: no one holds its lock
		".out-fresh.tmp":    true,
		".other-dead.tmp":   true,
		"out-visible.tmp":   true,
		".out-dead.tmp.png": true,
	}
	for name := range files {
		p := filepath.Join(dir, name)
		if name != live.Name() {
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if name != ".out-fresh.tmp" {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := d.RemoveDeadTemps(".", "out-")
	if err != nil || n != 1 {
		t.Fatalf("RemoveDeadTemps = %d, %v; want 1 removed", n, err)
	}
	for name, kept := range files {
		if _, err := os.Lstat(filepath.Join(dir, name)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", name, err == nil, kept)
		}
	}
	// The writer removes its own.
	if _, err := live.Write([]byte("answer")); err != nil {
		t.Fatal(err)
	}
	name := live.Name()
	live.Remove()
	if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
		t.Fatalf("the writer's file after Remove: %v", err)
	}
}
