package sqlitestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/internal/outdir"
)

// Files are opened through the folder's outdir.Dir, so that no key, no
// symbolic link, FIFO or device put in the folder, reaches outside it or
// stops a run.

// tempPrefix starts the names of the store's temporary files.
const tempPrefix = "store-"

// NewWriter streams an object to key: a temporary file that Close flushes
// and puts at key (see place), flushing the folder, then records as key's
// row. Meta is not kept: a folder has no place for it.
func (s *Store) NewWriter(ctx context.Context, key string, _ map[string]string) (io.WriteCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := s.dir.MkdirAll(path.Dir(key)); err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	if _, err := s.dir.Check(key); err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	t, err := s.dir.CreateTemp(path.Dir(key), tempPrefix)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	return &fileWriter{ctx: ctx, s: s, key: key, t: t}, nil
}

// A fileWriter is a temporary file that becomes key when closed whole.
type fileWriter struct {
	ctx    context.Context
	s      *Store
	key    string
	t      *outdir.Temp
	err    error // the first failed Write
	closed bool
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

// Close puts the file in place and records it, unless a Write failed or
// the context ended: then it leaves nothing and returns why.
func (w *fileWriter) Close() error {
	if w.closed {
		return fmt.Errorf("sqlitestore: %s: writer already closed", w.key)
	}
	w.closed = true
	defer w.t.Remove()
	if err := cmp.Or(w.err, w.ctx.Err()); err != nil {
		return err
	}
	err := w.t.Flush()
	if err == nil {
		err = w.s.place(w.ctx, w.t, w.key)
	}
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", w.key, err)
	}
	return w.s.w.do(context.WithoutCancel(w.ctx), opFile, w.key, nil)
}

// place gives the flushed temporary file t the name key. It replaces the
// file at key only when the ledger records that file as key's object (a
// writer's earlier object, replaced as Put replaces). A file there that
// the ledger does not know may hold an answer paid for (an output of a run
// whose ledger was lost, or of one killed before it recorded it): it is
// moved aside to a free name beside it and kept, never written over.
func (s *Store) place(ctx context.Context, t *outdir.Temp, key string) error {
	for range 10 {
		err := t.Link(key)
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		_, isFile, err := s.row(context.WithoutCancel(ctx), key)
		switch {
		case err == nil && isFile:
			return t.Rename(key)
		case err != nil && !errors.Is(err, batch.ErrNotExist):
			return err
		}
		if _, err := s.dir.MoveAside(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return fmt.Errorf("%s keeps being taken while the answer is put there", s.dir.Join(key))
}

// staleTemp is the age past which a temporary file at the top of the
// folder is taken as left by a process that was killed.
const staleTemp = 24 * time.Hour

// sweep removes the temporary files under the folder that no process has
// written for staleTemp: outputs are written beside their keys, in
// subfolders too. It reads each folder a page of names at a time (one may
// hold a million outputs), goes into folders but never through a symbolic
// link, and no deeper than maxSweepDepth.
func (s *Store) sweep() { s.sweepDir(".", 0) }

// maxSweepDepth bounds how deep sweep goes under the folder.
const maxSweepDepth = 32

func (s *Store) sweepDir(dir string, depth int) {
	f, err := s.root.Open(dir)
	if err != nil {
		return
	}
	defer f.Close()
	for {
		entries, err := f.ReadDir(listPage)
		for _, e := range entries {
			n := path.Join(dir, e.Name())
			switch {
			case e.IsDir() && depth < maxSweepDepth: // a link is no folder here: ReadDir does not follow it
				s.sweepDir(n, depth+1)
			case strings.HasPrefix(e.Name(), "."+tempPrefix) && strings.HasSuffix(e.Name(), ".tmp") && e.Type().IsRegular():
				if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
					_ = s.root.Remove(n)
				}
			}
		}
		if err != nil || len(entries) == 0 {
			return
		}
	}
}
