// Package atomicfile writes files that appear whole or not at all: the
// bytes go to a temporary file in the target's folder, which is flushed to
// disk and then given its name, and the folder is flushed too. The SDK's
// Save and DownloadFile, the command line's output and the batch's local
// store all write this way.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// A Temp is a new file under a hidden temporary name, in a folder of a
// root, that takes its name only once it is written whole and flushed.
// Write to it, then Flush, then Rename or Link it; Remove it in every case
// (once renamed, Remove does nothing).
type Temp struct {
	*os.File
	root *os.Root
	name string // slash-separated, relative to root
}

// CreateTemp creates a Temp in the folder dir of root ("." for root
// itself), named "."+prefix+random+".tmp", with mode 0644 less the umask,
// as any file the program creates gets (os.CreateTemp would give 0600).
func CreateTemp(root *os.Root, dir, prefix string) (*Temp, error) {
	var rnd [8]byte
	for range 100 {
		_, _ = rand.Read(rnd[:])
		name := path.Join(dir, "."+prefix+hex.EncodeToString(rnd[:])+".tmp")
		f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			if err != nil {
				return nil, err
			}
			return &Temp{File: f, root: root, name: name}, nil
		}
	}
	return nil, fmt.Errorf("no free temporary file name in %s", dir)
}

// Name returns the temporary file's name, relative to its root.
func (t *Temp) Name() string { return t.name }

// Flush flushes the file to disk and closes it.
func (t *Temp) Flush() error {
	err := t.Sync()
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	return err
}

// Rename gives the flushed file the name name, in its folder, replacing
// whatever file had it, and flushes the folder.
func (t *Temp) Rename(name string) error {
	if err := t.root.Rename(t.name, name); err != nil {
		return err
	}
	t.name = ""
	return SyncDir(t.root, path.Dir(name))
}

// Link gives the flushed file the name name as well, never replacing a
// file: fs.ErrExist when name is taken. A hard link does it in one step;
// where links are not supported the name is reserved with an exclusive
// create and then replaced by the file. The folder is flushed.
func (t *Temp) Link(name string) error {
	err := t.root.Link(t.name, name)
	switch {
	case errors.Is(err, fs.ErrExist):
		return err
	case err != nil:
		f, err := t.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_ = f.Close()
		if err := t.root.Rename(t.name, name); err != nil {
			_ = t.root.Remove(name)
			return err
		}
		t.name = ""
	}
	return SyncDir(t.root, path.Dir(name))
}

// Remove closes the file and removes its temporary name, if it still has
// it.
func (t *Temp) Remove() {
	_ = t.Close()
	if t.name != "" {
		_ = t.root.Remove(t.name)
		t.name = ""
	}
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
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, target(path, err)
	}
	defer root.Close()
	t, err := CreateTemp(root, ".", base+".")
	if err != nil {
		return 0, target(path, err)
	}
	defer t.Remove()
	if n, err = write(named{t.File, path}); err != nil {
		return n, err
	}
	if err = t.Flush(); err != nil {
		return n, target(path, err)
	}
	return n, target(path, t.Rename(base))
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

// SyncDir flushes the folder dir of root, so that a name given in it
// survives a crash. Where a folder cannot be flushed (some systems
// refuse), nothing is done.
func SyncDir(root *os.Root, dir string) error {
	d, err := root.Open(dir)
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
