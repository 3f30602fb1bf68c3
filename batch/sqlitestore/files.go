package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/internal/atomicfile"
)

// The objects that are not the ledger's are files under the folder, opened
// through an os.Root, so that no key, and no symbolic link met on the way,
// reaches outside it.

// tempPrefix starts the names of the store's temporary files.
const tempPrefix = "store-"

// temp creates a temporary file in the folder of key, making the folders
// it needs.
func (s *Store) temp(key string) (*atomicfile.Temp, error) {
	dir := path.Dir(key)
	if err := s.mkdirs(dir); err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	t, err := atomicfile.CreateTemp(s.root, dir, tempPrefix)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	return t, nil
}

// mkdirs makes the folders of dir that are missing, each flushed into its
// parent, so that a file put in them survives a crash.
func (s *Store) mkdirs(dir string) error {
	if dir == "." {
		return nil
	}
	if err := s.mkdirs(path.Dir(dir)); err != nil {
		return err
	}
	err := s.root.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return atomicfile.SyncDir(s.root, path.Dir(dir))
}

// createFile writes the file key only if it does not exist: the bytes are
// flushed under a temporary name, then linked to key, which fails if key
// exists, so a reader never sees a part of it.
func (s *Store) createFile(key string, data []byte) error {
	t, err := s.temp(key)
	if err != nil {
		return err
	}
	defer t.Remove()
	_, err = t.Write(data)
	if ferr := t.Flush(); err == nil {
		err = ferr
	}
	if err == nil {
		err = t.Link(key)
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("sqlitestore: %s: %w", key, batch.ErrExist)
	}
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", key, err)
	}
	return nil
}

func (s *Store) readFile(key string) ([]byte, error) {
	b, err := s.root.ReadFile(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sqlitestore: %s: %w", key, batch.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	return b, nil
}

func (s *Store) fileExists(key string) (bool, error) {
	st, err := s.root.Stat(key)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sqlitestore: %w", err)
	}
	return st.Mode().IsRegular(), nil
}

func (s *Store) removeFile(key string) error {
	err := s.root.Remove(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = atomicfile.SyncDir(s.root, path.Dir(key))
	}
	if err != nil {
		return fmt.Errorf("sqlitestore: %w", err)
	}
	return nil
}

// A fileWriter is a temporary file that becomes key when closed whole.
type fileWriter struct {
	ctx    context.Context
	key    string
	t      *atomicfile.Temp
	err    error // the first failed Write
	closed bool
}

func (s *Store) newFileWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	t, err := s.temp(key)
	if err != nil {
		return nil, err
	}
	return &fileWriter{ctx: ctx, key: key, t: t}, nil
}

func (w *fileWriter) Write(p []byte) (int, error) {
	if w.err == nil {
		w.err = w.ctx.Err()
	}
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.t.Write(p)
	if err != nil {
		w.err = fmt.Errorf("sqlitestore: %w", err)
	}
	return n, w.err
}

// abort removes the temporary file.
func (w *fileWriter) abort() {
	w.closed = true
	w.t.Remove()
}

// Close flushes the file and renames it to its key, flushing the folder,
// unless a Write failed or the context ended: then it leaves nothing and
// returns why.
func (w *fileWriter) Close() error {
	if w.closed {
		return fmt.Errorf("sqlitestore: %s: writer already closed", w.key)
	}
	defer w.abort()
	err := w.err
	if err == nil {
		err = w.ctx.Err()
	}
	if err != nil {
		return err
	}
	if err := w.t.Flush(); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", w.key, err)
	}
	if err := w.t.Rename(w.key); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", w.key, err)
	}
	return nil
}

// listFiles yields the files under prefix in lexical order, walking the
// folders depth first; names starting with a dot, and the reserved names
// at the top, are not keys. Each folder's names are read and sorted at
// once: the folders of outputs are flat.
func (s *Store) listFiles(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		start, _ := path.Split(prefix)
		s.walk(ctx, strings.TrimSuffix(start, "/"), prefix, yield)
	}
}

// walk yields the files under dir whose keys start with prefix; it
// returns false when yield asked to stop.
func (s *Store) walk(ctx context.Context, dir, prefix string, yield func(string, error) bool) bool {
	name := dir
	if name == "" {
		name = "."
	}
	entries, err := fs.ReadDir(s.root.FS(), name)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return yield("", fmt.Errorf("sqlitestore: %w", err))
	}
	// A folder "a" holds the keys "a/...", which sort after "a.png".
	sortKey := func(e fs.DirEntry) string {
		if e.IsDir() {
			return e.Name() + "/"
		}
		return e.Name()
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(sortKey(a), sortKey(b)) })
	for _, e := range entries {
		key := path.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), ".") || dir == "" && reserved[e.Name()] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return yield("", err)
		}
		switch {
		case e.IsDir():
			if strings.HasPrefix(key+"/", prefix) || strings.HasPrefix(prefix, key+"/") {
				if !s.walk(ctx, key, prefix, yield) {
					return false
				}
			}
		case e.Type().IsRegular() && strings.HasPrefix(key, prefix):
			if !yield(key, nil) {
				return false
			}
		}
	}
	return true
}

// staleTemp is the age past which a temporary file at the top of the
// folder is taken as left by a process that was killed.
const staleTemp = 24 * time.Hour

// sweep removes the temporary files at the top of the folder that no
// process has written for staleTemp. It reads the folder a page of names
// at a time: it may hold a million outputs.
func (s *Store) sweep() {
	f, err := s.root.Open(".")
	if err != nil {
		return
	}
	defer f.Close()
	for {
		entries, err := f.ReadDir(listPage)
		for _, e := range entries {
			n := e.Name()
			if !strings.HasPrefix(n, "."+tempPrefix) || !strings.HasSuffix(n, ".tmp") || !e.Type().IsRegular() {
				continue
			}
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
				_ = s.root.Remove(n)
			}
		}
		if err != nil || len(entries) == 0 {
			return
		}
	}
}
