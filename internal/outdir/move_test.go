package outdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Move replaces nothing, and MoveAside keeps the file under the first free
// name beside it.
func TestMoveReplacesNothing(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"a.png": "a", "b.png": "b", "a.earlier-1.png": "older"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Whatever holds a name, a folder included, is passed over.
	if err := os.Mkdir(filepath.Join(dir, "a.earlier-2.png"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Move("a.png", "b.png"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Move onto a file = %v, want fs.ErrExist", err)
	}
	to, err := d.MoveAside("a.png")
	if err != nil || to != "a.earlier-3.png" {
		t.Fatalf("MoveAside = %q, %v; want a.earlier-3.png", to, err)
	}
	for name, want := range map[string]string{"b.png": "b", "a.earlier-1.png": "older", "a.earlier-3.png": "a"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s holds %q, %v; want %q", name, b, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "a.png")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a.png is still there after MoveAside: %v", err)
	}
}
