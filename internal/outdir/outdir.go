// Package outdir is the one way into an output folder: every file the
// command line and the batch's local store read or write under --out (the
// ledger database and its side files, results.jsonl, the outputs, the
// results page, temporary files) is opened through a Dir, rooted at the
// folder with an os.Root, so that no name reaches outside it.
//
// A Dir never follows a symbolic link at a name it opens, creates or
// replaces, and never opens a FIFO, a device, a socket or a folder where
// it expects a file: it looks first (Lstat), opens with O_NOFOLLOW and
// O_NONBLOCK where the system has them, creates only with O_EXCL, and
// checks that the file it opened is the regular file it looked at. What it
// refuses it refuses with an error naming the path, matching
// ErrNotRegular. Its errors reach the person who named the folder as they
// are: they name the path and say what is wrong, with no package prefix.
package outdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/creativegen/creative-go/internal/atomicfile"
)

// ErrNotRegular is matched (errors.Is) by the refusal of a name that holds
// something other than a regular file: a symbolic link, a FIFO, a device,
// a socket or a folder.
var ErrNotRegular = errors.New("not a regular file")

// A Dir is an output folder, opened once; its names are slash-separated
// and relative to it. It is safe for concurrent use.
type Dir struct {
	root *os.Root
	path string
}

// Open opens the existing folder at dir.
func Open(dir string) (*Dir, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, folderError("cannot open folder", dir, err)
	}
	return &Dir{root: root, path: dir}, nil
}

// Create opens the folder at dir, making it and its parents first when
// they are missing.
func Create(dir string) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, folderError("cannot create folder", dir, err)
	}
	return Open(dir)
}

// folderError says why the folder dir cannot be opened or made (what is
// "cannot open folder" or "cannot create folder") in the words of a person
// who named it: "/etc/hostname is not a folder", "cannot create folder
// /proc/x: no such file or directory", rather than the system call's
// "mkdir /proc/x: ...". errors.Is and errors.As still reach err.
func folderError(what, dir string, err error) error {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if fi, serr := os.Stat(p); serr == nil && !fi.IsDir() {
			if p == filepath.Clean(dir) {
				return said{fmt.Sprintf("%s is not a folder", dir), err}
			}
			return said{fmt.Sprintf("%s %s: %s is not a folder", what, dir, p), err}
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	return said{fmt.Sprintf("%s %s: %v", what, dir, cause(err)), err}
}

// cause is what went wrong in err, without the system call and the path
// a *fs.PathError names, for a message that names the path itself.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// said is an error told in words of its own, wrapping the error it tells.
type said struct {
	msg string
	err error
}

func (e said) Error() string { return e.msg }
func (e said) Unwrap() error { return e.err }

// Path returns the folder's path, as it was given.
func (d *Dir) Path() string { return d.path }

// Join returns the path of name in the folder, for messages.
func (d *Dir) Join(name string) string { return filepath.Join(d.path, filepath.FromSlash(name)) }

// Root returns the folder's os.Root, for listing folders and removing
// names; files are opened with OpenFile, ReadFile and CreateTemp.
func (d *Dir) Root() *os.Root { return d.root }

// Close closes the folder.
func (d *Dir) Close() error { return d.root.Close() }

// kind names what a file mode says a name holds, for refusals.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a folder"
	}
	return "not a regular file"
}

// refuse is the refusal of name, which holds what mode says.
func (d *Dir) refuse(name string, mode fs.FileMode) error {
	return fmt.Errorf("%s is %s, not a file this program writes: %w; remove it, or give another folder", d.Join(name), kind(mode), ErrNotRegular)
}

// Lstat describes name without following a symbolic link there.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) { return d.root.Lstat(name) }

// Check reports whether name holds a regular file (true), or nothing
// (false). Anything else at name is refused.
func (d *Dir) Check(name string) (bool, error) {
	st, err := d.root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !st.Mode().IsRegular():
		return false, d.refuse(name, st.Mode())
	}
	return true, nil
}

// CheckWritable is Check for a name that is written in place, as SQLite
// writes its database: a file there with more than one name (a hard link
// to another's file) is refused too.
func (d *Dir) CheckWritable(name string) (bool, error) {
	ok, err := d.Check(name)
	if ok {
		if st, lerr := d.root.Lstat(name); lerr == nil && links(st) > 1 {
			return false, d.linked(name, links(st))
		}
	}
	return ok, err
}

// linked is the refusal to write name, a file with n names.
func (d *Dir) linked(name string, n uint64) error {
	return fmt.Errorf("%s has %d names (hard links), so writing it would write another's file too: %w; remove it, or give another folder",
		d.Join(name), n, ErrNotRegular)
}

// OpenFile opens the regular file name with flag (os.O_RDONLY, O_RDWR,
// O_APPEND, O_CREATE, O_EXCL, O_TRUNC as os.OpenFile takes them) and perm.
// A new file is created with O_EXCL, which follows no link; an existing
// one is opened with O_NOFOLLOW and O_NONBLOCK and must be the regular
// file that was looked at, so that nothing put there meanwhile is opened
// and no open waits for a FIFO's other end.
func (d *Dir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	for range 10 {
		st, err := d.root.Lstat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist) && flag&os.O_CREATE != 0:
			f, err := d.root.OpenFile(name, flag|os.O_EXCL|openFlags, perm)
			if errors.Is(err, fs.ErrExist) && flag&os.O_EXCL == 0 {
				continue // made meanwhile: look at it again
			}
			if err != nil {
				return nil, err
			}
			return f, nil
		case err != nil:
			return nil, err
		case !st.Mode().IsRegular():
			return nil, d.refuse(name, st.Mode())
		case flag&os.O_EXCL != 0:
			return nil, &fs.PathError{Op: "open", Path: d.Join(name), Err: fs.ErrExist}
		case flag&(os.O_WRONLY|os.O_RDWR) != 0 && links(st) > 1:
			return nil, d.linked(name, links(st))
		}
		return d.openLooked(name, st, flag, perm)
	}
	return nil, fmt.Errorf("%s keeps changing while it is opened", d.Join(name))
}

// openLooked opens the existing regular file name, which Lstat described
// as st, with O_NOFOLLOW and O_NONBLOCK, and refuses what it opened unless
// it is that file; O_TRUNC empties it only then.
func (d *Dir) openLooked(name string, st fs.FileInfo, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := d.root.OpenFile(name, flag&^(os.O_CREATE|os.O_TRUNC)|openFlags, perm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Join(name), err)
	}
	got, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !got.Mode().IsRegular() || !os.SameFile(st, got) {
		f.Close()
		return nil, fmt.Errorf("%s changed while it was opened: %w", d.Join(name), ErrNotRegular)
	}
	if flag&os.O_TRUNC != 0 {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// ReadFile reads the regular file name whole.
func (d *Dir) ReadFile(name string) ([]byte, error) {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// A Temp is a new file under a hidden temporary name in the folder (see
// atomicfile.Temp), whose Rename refuses a name that holds anything but a
// regular file.
type Temp struct {
	*atomicfile.Temp
	d    *Dir
	lock *os.File // holds the file's lock until Remove (see RemoveDeadTemps)
}

// CreateTemp creates a Temp in the folder dir of d ("." for d itself),
// named "."+prefix+random+".tmp", with O_EXCL, and holds its lock until
// Remove.
func (d *Dir) CreateTemp(dir, prefix string) (*Temp, error) {
	t, err := atomicfile.CreateTemp(d.root, dir, prefix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Join(dir), err)
	}
	lock, err := holdTemp(d.root, t.Name())
	if err != nil {
		t.Remove()
		return nil, fmt.Errorf("%s: %w", d.Join(dir), err)
	}
	return &Temp{Temp: t, d: d, lock: lock}, nil
}

// Remove removes the temporary file, if it still has its name, and lets
// its lock go.
func (t *Temp) Remove() {
	t.Temp.Remove()
	if t.lock != nil {
		_ = t.lock.Close()
		t.lock = nil
	}
}

// Rename gives the flushed file the name name, replacing the regular file
// there, if any, and flushes the folder. A symbolic link, a FIFO, a device,
// a socket or a folder at name is refused and left as it is.
func (t *Temp) Rename(name string) error {
	if _, err := t.d.Check(name); err != nil {
		return err
	}
	return t.Temp.Rename(name)
}

// WriteFile writes name whole or not at all: write fills a temporary file
// beside it, which is flushed and renamed to name (see Temp.Rename). The
// folders of name are made when missing.
func (d *Dir) WriteFile(name string, write func(io.Writer) error) error {
	if err := d.MkdirAll(path.Dir(name)); err != nil {
		return err
	}
	if _, err := d.Check(name); err != nil {
		return err
	}
	t, err := d.CreateTemp(path.Dir(name), path.Base(name)+".")
	if err != nil {
		return err
	}
	defer t.Remove()
	if err := write(t); err != nil {
		return err
	}
	if err := t.Flush(); err != nil {
		return fmt.Errorf("%s: %w", d.Join(name), err)
	}
	return t.Rename(name)
}

// Mkdir makes the folder name, flushed into its parent; a folder already
// there is fine, anything else there (a link to a folder included) is
// refused.
func (d *Dir) Mkdir(name string) error {
	err := d.root.Mkdir(name, 0o755)
	if errors.Is(err, fs.ErrExist) {
		st, lerr := d.root.Lstat(name)
		if lerr == nil && !st.IsDir() {
			return d.refuse(name, st.Mode())
		}
		return nil
	}
	if err != nil {
		return err
	}
	return atomicfile.SyncDir(d.root, path.Dir(name))
}

// MkdirAll makes the folder name and the ones above it that are missing,
// each flushed into its parent.
func (d *Dir) MkdirAll(name string) error {
	if name == "." || name == "" {
		return nil
	}
	if err := d.MkdirAll(path.Dir(name)); err != nil {
		return err
	}
	return d.Mkdir(name)
}

// Move renames the regular file from to to, which must be free: it moves
// nothing but regular files and replaces nothing. Where the file system
// has hard links, to is taken by a link, which fails when to is there
// (fs.ErrExist), and only then is from removed, so that nothing put at to
// meanwhile is replaced either.
func (d *Dir) Move(from, to string) error {
	if ok, err := d.Check(from); err != nil || !ok {
		if err == nil {
			err = &fs.PathError{Op: "move", Path: d.Join(from), Err: fs.ErrNotExist}
		}
		return err
	}
	if ok, err := d.Check(to); err != nil || ok {
		if err == nil {
			err = &fs.PathError{Op: "move", Path: d.Join(to), Err: fs.ErrExist}
		}
		return err
	}
	err := d.root.Link(from, to)
	switch {
	case errors.Is(err, fs.ErrExist):
		return &fs.PathError{Op: "move", Path: d.Join(to), Err: fs.ErrExist}
	case err == nil:
		err = d.unlinkSame(from, to)
	default: // no hard links here
		err = d.root.Rename(from, to)
	}
	if err == nil {
		err = atomicfile.SyncDir(d.root, path.Dir(to))
	}
	if err != nil {
		return err
	}
	return nil
}

// unlinkSame removes the name from, just linked to to, unless from names
// another file by now: that one took its place meanwhile and is left
// there, the file moved being at to all the same.
func (d *Dir) unlinkSame(from, to string) error {
	a, err := d.root.Lstat(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	b, err := d.root.Lstat(to)
	switch {
	case err != nil:
		return err
	case !os.SameFile(a, b):
		return nil
	}
	return d.root.Remove(from)
}

// MoveAside moves the regular file at name to the first free name of
// <stem>.earlier-<n><ext> beside it (n from 1), passing over a name that
// holds anything, and replacing nothing; it returns that name: the file is
// kept, and name is free.
func (d *Dir) MoveAside(name string) (string, error) {
	dir, base := path.Split(name)
	ext := path.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	for n := 1; n <= 1000; n++ {
		to := dir + stem + ".earlier-" + strconv.Itoa(n) + ext
		if _, err := d.root.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
			continue // taken, by whatever
		}
		err := d.Move(name, to)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return to, nil
	}
	return "", fmt.Errorf("no free name to move %s aside to", d.Join(name))
}

// ProveWritable creates a temporary file in the folder and removes it:
// what a write needs is there (the folder can be written, the disk is not
// read-only), or the error says why, naming the folder.
func (d *Dir) ProveWritable() error {
	t, err := d.CreateTemp(".", "probe-")
	if err != nil {
		return said{fmt.Sprintf("folder %s cannot be written: %v", d.path, cause(err)), err}
	}
	_, werr := t.Write([]byte{0})
	ferr := t.Flush()
	t.Remove()
	if err := errors.Join(werr, ferr); err != nil {
		return said{fmt.Sprintf("folder %s cannot be written: %v", d.path, cause(err)), err}
	}
	return nil
}

// OpenInput opens the file at path for reading: an input the command
// line is given (a jobs file, a price list, a link file), not a name
// under an output folder. As a Dir opens its files, a FIFO, a device, a
// socket or a folder is refused at once, before any open that could wait
// for another end: it looks first (Stat), opens with O_NONBLOCK where the
// system has it, and checks that the file it opened is the regular file it
// looked at. A symbolic link is followed: a user's input may be one. The
// refusal matches ErrNotRegular.
func OpenInput(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("outdir: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, refuseInput(path, st.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|inputFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("outdir: %w", err)
	}
	got, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("outdir: %w", err)
	}
	if !got.Mode().IsRegular() || !os.SameFile(st, got) {
		f.Close()
		return nil, fmt.Errorf("outdir: %s changed while it was opened: %w", path, ErrNotRegular)
	}
	return f, nil
}

// refuseInput is the refusal of the input at path, which holds what mode
// says.
func refuseInput(path string, mode fs.FileMode) error {
	return fmt.Errorf("outdir: %s is %s, not a file to read: %w", path, kind(mode), ErrNotRegular)
}
