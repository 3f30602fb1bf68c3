// Package atomicfile writes files that appear whole or not at all: the
// bytes go to a temporary file in the target's folder, which is flushed to
// disk and then given its name, and the folder is flushed too. The SDK's
// Save and DownloadFile and the command line's output all write this way.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// CreateTemp creates a new, empty, hidden file in dir named
// "."+prefix+random+".tmp", with mode 0644 less the umask, as any file the
// program creates gets (os.CreateTemp would give 0600).
func CreateTemp(dir, prefix string) (*os.File, error) {
	var rnd [8]byte
	for range 100 {
		_, _ = rand.Read(rnd[:])
		name := filepath.Join(dir, "."+prefix+hex.EncodeToString(rnd[:])+".tmp")
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no free temporary file name in %s", dir)
}

// Write lets write fill a temporary file beside path and, once it
// succeeded, flushes the file, renames it to path (replacing what was
// there) and flushes the folder. On any failure the temporary file is
// removed and path is untouched. An error of write is returned as it is,
// but for errors of the file system (write's own writes to the file
// included), which are *fs.PathError naming path, not the temporary file.
func Write(path string, write func(io.Writer) (int64, error)) (n int64, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := CreateTemp(dir, base+".")
	if err != nil {
		return 0, target(path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if n, err = write(named{f, path}); err != nil {
		return n, err
	}
	if err = Close(f); err != nil {
		return n, target(path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return n, target(path, err)
	}
	return n, target(path, SyncDir(dir))
}

// named writes to a temporary file, its errors naming the target path.
type named struct {
	f    *os.File
	path string
}

func (w named) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	return n, target(w.path, err)
}

// Close flushes f to disk and closes it.
func Close(f *os.File) error {
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Link gives the complete temporary file tmp the name name as well, never
// replacing a file: fs.ErrExist when name is taken. A hard link does it in
// one step; where links are not supported the name is reserved with an
// exclusive create and then replaced by the file. The folder is flushed.
// The caller removes tmp.
func Link(tmp, name string) error {
	err := os.Link(tmp, name)
	switch {
	case errors.Is(err, fs.ErrExist):
		return err
	case err != nil:
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_ = f.Close()
		if err := os.Rename(tmp, name); err != nil {
			_ = os.Remove(name)
			return err
		}
	}
	return SyncDir(filepath.Dir(name))
}

// SyncDir flushes the folder dir, so that a name given in it survives a
// crash. Where a folder cannot be flushed (some systems refuse), nothing
// is done.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) && !isInvalid(err) {
		return err
	}
	return nil
}

// target makes a file system error name path, the file the caller asked
// for, instead of the temporary file it happened on.
func target(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: path, Err: pe.Err}
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return &fs.PathError{Op: le.Op, Path: path, Err: le.Err}
	}
	return err
}
