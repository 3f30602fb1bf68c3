package page

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
)

// WriteFile writes the page to the file at path, atomically: the page goes
// to a temporary file in the same folder, which is flushed to disk and then
// renamed over path, so that a browser (or a crash) sees the old page or
// the new one whole, never half of one. A runner calls it again as jobs
// finish to keep the page current.
func WriteFile(path, title string, entries iter.Seq[Entry]) error {
	return writeAtomic(path, func(w io.Writer) error { return Write(w, title, entries) })
}

// writeAtomic lets write fill a temporary file beside path, then flushes
// it, renames it to path and flushes the folder. On failure the temporary
// file is removed and path is left as it was.
func writeAtomic(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("page: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	// os.CreateTemp makes the file 0600; a page is as readable as any
	// other file the program writes.
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("page: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("page: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("page: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("page: %w", err)
	}
	return syncDir(dir)
}

// syncDir flushes the folder dir, so that a rename in it survives a crash.
// Systems that cannot open a folder for it (Windows) are left as they are.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	err = d.Sync()
	_ = d.Close()
	if err != nil && !errors.Is(err, os.ErrInvalid) && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("page: %w", err)
	}
	return nil
}
