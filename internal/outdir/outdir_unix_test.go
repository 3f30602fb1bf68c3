//go:build unix

package outdir

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A plant puts something other than a regular file at path: what a
// neighbour with write access to the folder could put there. outside is a
// file outside the folder that nothing may write.
type plant struct {
	name string
	make func(t *testing.T, path, outside string)
}

var plants = []plant{
	{"symlink outside", func(t *testing.T, path, outside string) { must(t, os.Symlink(outside, path)) }},
	{"dangling symlink outside", func(t *testing.T, path, outside string) {
		must(t, os.Symlink(outside+".new", path))
	}},
	{"symlink inside", func(t *testing.T, path, _ string) {
		must(t, os.WriteFile(filepath.Join(filepath.Dir(path), "inside"), []byte("inside"), 0o644))
		must(t, os.Symlink("inside", path))
	}},
	{"symlink to /dev/null", func(t *testing.T, path, _ string) { must(t, os.Symlink("/dev/null", path)) }},
	{"FIFO", func(t *testing.T, path, _ string) { must(t, syscall.Mkfifo(path, 0o644)) }},
	{"folder", func(t *testing.T, path, _ string) { must(t, os.Mkdir(path, 0o755)) }},
	{"hard link", func(t *testing.T, path, outside string) {
		if err := os.Link(outside, path); err != nil {
			t.Skip("no hard links here:", err)
		}
	}},
	{"socket", func(t *testing.T, path, _ string) {
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Skip("no unix sockets here:", err)
		}
		t.Cleanup(func() { l.Close() })
	}},
	{"device", func(t *testing.T, path, _ string) {
		// /dev/null's numbers, 1 and 3: a device node needs root.
		if err := syscall.Mknod(path, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Skip("mknod needs root:", err)
		}
	}},
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Every way the gate writes or reads a name refuses whatever is planted
// there, naming the path, at once (a FIFO never blocks it), and leaves the
// file outside the folder as it was.
func TestEveryOpenRefusesWhatIsPlanted(t *testing.T) {
	ways := []struct {
		name string
		do   func(d *Dir, name string) error
	}{
		{"append", func(d *Dir, name string) error {
			f, err := d.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
			if err == nil {
				_, _ = f.WriteString("appended\n")
				f.Close()
			}
			return err
		}},
		{"read", func(d *Dir, name string) error { _, err := d.ReadFile(name); return err }},
		{"write whole", func(d *Dir, name string) error {
			return d.WriteFile(name, func(w io.Writer) error { _, err := io.WriteString(w, "page"); return err })
		}},
		{"temporary renamed", func(d *Dir, name string) error {
			tmp, err := d.CreateTemp(".", "x-")
			if err != nil {
				return err
			}
			defer tmp.Remove()
			_, _ = tmp.WriteString("output")
			if err := tmp.Flush(); err != nil {
				return err
			}
			return tmp.Rename(name)
		}},
		{"check", func(d *Dir, name string) error { _, err := d.Check(name); return err }},
		{"move onto", func(d *Dir, name string) error {
			must(t, os.WriteFile(d.Join("from"), []byte("x"), 0o644))
			return d.Move("from", name)
		}},
		{"move aside", func(d *Dir, name string) error { _, err := d.MoveAside(name); return err }},
	}
	for _, p := range plants {
		for _, w := range ways {
			t.Run(p.name+"/"+w.name, func(t *testing.T) {
				if p.name == "hard link" && (w.name == "read" || w.name == "check" || w.name == "temporary renamed" || w.name == "write whole" || w.name == "move aside") {
					t.Skip("a second name of a regular file is read, replaced (renamed over) and moved harmlessly")
				}
				top := t.TempDir()
				folder := filepath.Join(top, "out")
				must(t, os.Mkdir(folder, 0o755))
				outside := filepath.Join(top, "outside")
				must(t, os.WriteFile(outside, []byte("keep"), 0o644))
				p.make(t, filepath.Join(folder, "results.jsonl"), outside)
				d, err := Open(folder)
				must(t, err)
				defer d.Close()

				done := make(chan error, 1)
				go func() { done <- w.do(d, "results.jsonl") }()
				err = <-done // a FIFO blocks here without O_NONBLOCK and the look first
				if err == nil {
					t.Fatalf("%s at results.jsonl was not refused", p.name)
				}
				if !errors.Is(err, ErrNotRegular) && !errors.Is(err, os.ErrExist) {
					t.Errorf("error %v does not match ErrNotRegular", err)
				}
				if !strings.Contains(err.Error(), filepath.Join(folder, "results.jsonl")) {
					t.Errorf("error %q does not name the path", err)
				}
				if b, _ := os.ReadFile(outside); string(b) != "keep" {
					t.Errorf("the file outside holds %q", b)
				}
				if _, err := os.Lstat(outside + ".new"); err == nil {
					t.Error("a file was made outside the folder")
				}
			})
		}
	}
}

// A file that is there is opened, appended to and read; a missing one is
// created; O_EXCL keeps its meaning.
func TestRegularFilesAreOpened(t *testing.T) {
	d, err := Create(filepath.Join(t.TempDir(), "a", "b"))
	must(t, err)
	defer d.Close()
	for range 2 {
		f, err := d.OpenFile("log", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		must(t, err)
		_, err = f.WriteString("line\n")
		must(t, err)
		must(t, f.Close())
	}
	b, err := d.ReadFile("log")
	must(t, err)
	if string(b) != "line\nline\n" {
		t.Errorf("log holds %q", b)
	}
	if _, err := d.OpenFile("log", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, os.ErrExist) {
		t.Errorf("O_EXCL on a file there: %v", err)
	}
	if _, err := d.ReadFile("missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reading a missing file: %v", err)
	}
	must(t, d.WriteFile("sub/page.html", func(w io.Writer) error { _, err := io.WriteString(w, "old"); return err }))
	must(t, d.MkdirAll("sub/deeper"))
	must(t, d.WriteFile("sub/page.html", func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }))
	b, err = d.ReadFile("sub/page.html")
	must(t, err)
	if string(b) != "new" {
		t.Errorf("page holds %q", b)
	}
	must(t, d.ProveWritable())
	es, err := os.ReadDir(d.Path())
	must(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "log sub" {
		t.Errorf("the folder holds %v: a temporary file was left", names)
	}
}

// A folder that cannot be written is found before anything is written to
// it: here a folder removed while it is open, where no file can be made.
func TestProveWritableNamesTheFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	d, err := Create(dir)
	must(t, err)
	defer d.Close()
	must(t, os.Remove(dir))
	err = d.ProveWritable()
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("ProveWritable of a removed folder: %v", err)
	}
}

// A link to a folder where the gate would make one is refused.
func TestMkdirRefusesALink(t *testing.T) {
	top := t.TempDir()
	must(t, os.Mkdir(filepath.Join(top, "out"), 0o755))
	must(t, os.Symlink(top, filepath.Join(top, "out", "sub")))
	d, err := Open(filepath.Join(top, "out"))
	must(t, err)
	defer d.Close()
	if err := d.MkdirAll("sub/x"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("MkdirAll through a link: %v", err)
	}
}
