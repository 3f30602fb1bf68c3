package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entries lists dir's names, for the check that nothing is left behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func writeString(s string) func(io.Writer) (int64, error) {
	return func(w io.Writer) (int64, error) {
		n, err := io.WriteString(w, s)
		return int64(n), err
	}
}

func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.png")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := Write(path, writeString("new bytes"))
	if err != nil || n != 9 {
		t.Fatalf("Write = %d, %v", n, err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new bytes" {
		t.Fatalf("file holds %q, %v", got, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// 0644 less the umask: never more, and readable by its owner.
	if perm := st.Mode().Perm(); perm&^0o644 != 0 || perm&0o600 != 0o600 {
		t.Fatalf("mode %v, want 0644 less the umask", perm)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("left behind: %v", names)
	}
}

// A failure of write leaves the old file and no temporary file, and comes
// back as it was.
func TestWriteFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.png")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	_, err := Write(path, func(w io.Writer) (int64, error) {
		_, _ = io.WriteString(w, "half")
		return 4, boom
	})
	if err != boom {
		t.Fatalf("err = %v, want write's own error", err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "old" {
		t.Fatalf("the old file became %q", got)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("left behind: %v", names)
	}
}

// Errors of the file system name the file asked for, never the temporary
// one, and keep their cause for errors.Is.
func TestWriteErrorsNameTarget(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such", "out.png")
	taken := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(taken, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{missing, taken} {
		_, err := Write(path, writeString("x"))
		pe, ok := errors.AsType[*fs.PathError](err)
		if !ok || pe.Path != path || strings.Contains(err.Error(), ".tmp") {
			t.Fatalf("Write(%s) = %v, want an *fs.PathError naming it", path, err)
		}
	}
	if _, err := Write(missing, writeString("x")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing folder: %v, want fs.ErrNotExist", err)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("left behind: %v", names)
	}
}

// Link never replaces a file: a second name that is taken is fs.ErrExist,
// and the file there is untouched.
func TestLinkNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tmp, err := CreateTemp(root, ".", "creative-")
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Remove()
	if !strings.HasPrefix(tmp.Name(), ".creative-") || !strings.HasSuffix(tmp.Name(), ".tmp") {
		t.Fatalf("temporary name %s", tmp.Name())
	}
	if _, err := io.WriteString(tmp, "result"); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.png"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Link("a.png"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Link onto a taken name: %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.png")); string(got) != "mine" {
		t.Fatalf("the taken file became %q", got)
	}
	if err := tmp.Link("a-1.png"); err != nil {
		t.Fatal(err)
	}
	tmp.Remove()
	if got, _ := os.ReadFile(filepath.Join(dir, "a-1.png")); string(got) != "result" {
		t.Fatalf("linked file holds %q", got)
	}
	if names := entries(t, dir); len(names) != 2 {
		t.Fatalf("left behind: %v", names)
	}
}
