package batch

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"strings"

	"github.com/creativegen/creative-go/internal/outdir"
)

// A Folder is a Store in a local folder: every file is written through the
// folder's gate (no name leaves it, no symbolic link or FIFO at a name is
// followed), under a temporary name, flushed, then given its key and the
// folder flushed. A file already at the key that holds other bytes (an
// answer paid for by a run whose record was lost, or a person's file) is
// never written over, but for index.html: it is moved aside to
// <name>.earlier-<n><ext> and kept. Names starting with a dot are the
// folder's own.
type Folder struct{ dir *outdir.Dir }

// OpenFolder opens the folder at p as a Store, making it when needed, and
// removes the temporary files of writers killed mid-write there (a live
// writer's never: outdir.Dir.RemoveDeadTemps).
func OpenFolder(p string) (*Folder, error) {
	d, err := outdir.Create(p)
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	_, _ = d.RemoveDeadTemps(".", tempPrefix)
	return &Folder{dir: d}, nil
}

// tempPrefix starts the names of the folder's temporary files.
const tempPrefix = "out-"

func (f *Folder) check(key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if strings.HasPrefix(key, ".") || strings.Contains(key, "/.") {
		return fmt.Errorf("batch: key %q names a hidden file", key)
	}
	return nil
}

// NewWriter writes key through a temporary file beside it.
func (f *Folder) NewWriter(ctx context.Context, key string, _ map[string]string) (io.WriteCloser, error) {
	if err := f.check(key); err != nil {
		return nil, err
	}
	var t *outdir.Temp
	err := f.dir.MkdirAll(path.Dir(key))
	if err == nil {
		_, err = f.dir.Check(key)
	}
	if err == nil {
		t, err = f.dir.CreateTemp(path.Dir(key), tempPrefix)
	}
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	return &folderWriter{ctx: ctx, dir: f.dir, key: key, t: t}, nil
}

// Exists reports whether key holds a regular file.
func (f *Folder) Exists(_ context.Context, key string) (bool, error) {
	if err := f.check(key); err != nil {
		return false, err
	}
	return f.dir.Check(key)
}

// List yields the names in the folder of prefix that start with it,
// reading the folder a page of names at a time.
func (f *Folder) List(_ context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		dir, base := path.Split(prefix)
		d, err := f.dir.Root().Open(path.Clean("./" + dir))
		if err == nil {
			defer d.Close()
		}
		for err == nil {
			var es []fs.DirEntry
			es, err = d.ReadDir(256)
			for _, e := range es {
				if n := e.Name(); strings.HasPrefix(n, base) && !strings.HasPrefix(n, ".") && e.Type().IsRegular() && !yield(dir+n, nil) {
					return
				}
			}
			if err == nil && len(es) == 0 {
				return
			}
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, fs.ErrNotExist) { // a folder not there holds no names
			yield("", fmt.Errorf("batch: %w", err))
		}
	}
}

// Get reads key whole.
func (f *Folder) Get(_ context.Context, key string) ([]byte, error) {
	if err := f.check(key); err != nil {
		return nil, err
	}
	return f.dir.ReadFile(key)
}

// NewReader opens the file key for reading as a stream, through the
// folder's gate, or returns an error matching fs.ErrNotExist.
func (f *Folder) NewReader(_ context.Context, key string) (io.ReadCloser, error) {
	if err := f.check(key); err != nil {
		return nil, err
	}
	return f.dir.OpenFile(key, os.O_RDONLY, 0)
}

// Delete removes the file key.
func (f *Folder) Delete(_ context.Context, key string) error {
	if err := f.check(key); err != nil {
		return err
	}
	if err := f.dir.Root().Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("batch: %w", err)
	}
	return nil
}

// Close closes the folder.
func (f *Folder) Close() error { return f.dir.Close() }

// A folderWriter is a temporary file that becomes key when closed whole.
type folderWriter struct {
	ctx context.Context
	dir *outdir.Dir
	key string
	t   *outdir.Temp
	err error
}

func (w *folderWriter) Write(p []byte) (int, error) {
	if w.err = cmp.Or(w.err, w.ctx.Err()); w.err != nil {
		return 0, w.err
	}
	n, err := w.t.Write(p)
	if err != nil {
		w.err = fmt.Errorf("batch: %w", err)
	}
	return n, w.err
}

// Close gives the file its key; a second Close finds the file closed,
// and fails.
func (w *folderWriter) Close() error {
	defer w.t.Remove()
	if err := cmp.Or(w.err, w.ctx.Err()); err != nil {
		return err
	}
	err := w.t.Flush()
	if err == nil {
		err = w.place()
	}
	if err != nil {
		return fmt.Errorf("batch: %s: %w", w.key, err)
	}
	return nil
}

// place gives the flushed file its key: a file there with the same bytes
// is replaced, one with other bytes moved aside and kept; the page every
// run writes again, index.html, is replaced.
func (w *folderWriter) place() error {
	if w.key == IndexFile {
		return w.t.Rename(w.key)
	}
	for range 10 {
		err := w.t.Link(w.key)
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		if same, err := w.same(); err != nil {
			return err
		} else if same {
			return w.t.Rename(w.key)
		}
		if _, err := w.dir.MoveAside(w.key); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return fmt.Errorf("%s keeps being taken while the answer is put there", w.dir.Join(w.key))
}

// same reports whether the file at the key holds the temporary file's
// bytes.
func (w *folderWriter) same() (bool, error) {
	a, err := w.dir.OpenFile(w.key, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer a.Close()
	b, err := w.dir.Root().Open(w.t.Name())
	if err != nil {
		return false, err
	}
	defer b.Close()
	ra, rb := bufio.NewReader(a), bufio.NewReader(b)
	for {
		x, errA := ra.ReadByte()
		y, errB := rb.ReadByte()
		switch {
		case errA == io.EOF && errB == io.EOF:
			return true, nil
		case errA != nil || errB != nil || x != y:
			return false, nil
		}
	}
}
