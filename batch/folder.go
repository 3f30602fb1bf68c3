package batch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/creativegen/creative-go/internal/outdir"
)

// A Folder is a Store in a local folder: every file is written through the
// folder's gate (no name leaves it, no symbolic link or FIFO at a name is
// followed), under a temporary name, flushed, then renamed to its key and
// the folder flushed. Names starting with a dot are the folder's own.
type Folder struct{ dir *outdir.Dir }

// OpenFolder opens the folder at p as a Store, making it when needed.
func OpenFolder(p string) (*Folder, error) {
	d, err := outdir.Create(p)
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	return &Folder{dir: d}, nil
}

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
	if err := f.dir.MkdirAll(path.Dir(key)); err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	if _, err := f.dir.Check(key); err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	t, err := f.dir.CreateTemp(path.Dir(key), "out-")
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	return &folderWriter{ctx: ctx, key: key, t: t}, nil
}

// Exists reports whether key holds a regular file.
func (f *Folder) Exists(_ context.Context, key string) (bool, error) {
	if err := f.check(key); err != nil {
		return false, err
	}
	ok, err := f.dir.Check(key)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return ok, err
}

// Close closes the folder.
func (f *Folder) Close() error { return f.dir.Close() }

// A folderWriter is a temporary file that becomes key when closed whole.
type folderWriter struct {
	ctx    context.Context
	key    string
	t      *outdir.Temp
	err    error
	closed bool
}

func (w *folderWriter) Write(p []byte) (int, error) {
	if w.err == nil {
		w.err = w.ctx.Err()
	}
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.t.Write(p)
	if err != nil {
		w.err = fmt.Errorf("batch: %w", err)
	}
	return n, w.err
}

func (w *folderWriter) Close() error {
	if w.closed {
		return fmt.Errorf("batch: %s: writer already closed", w.key)
	}
	w.closed = true
	defer w.t.Remove()
	if err := cmp.Or(w.err, w.ctx.Err()); err != nil {
		return err
	}
	err := w.t.Flush()
	if err == nil {
		err = w.t.Rename(w.key)
	}
	if err != nil {
		return fmt.Errorf("batch: %s: %w", w.key, err)
	}
	return nil
}
