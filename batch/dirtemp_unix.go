//go:build unix

package batch

import (
	"errors"
	"io/fs"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// temps is this Dir's folder of temporary files, held open: a temporary
// file is made, linked or renamed to its key, and removed by calls
// relative to it and to the key's folder, with no walk of their paths
// from the root each time (a Create costs a third of what it costs
// through the root's paths).
type temps struct{ dir *os.File }

// openTemps opens the folder of temporary files that openTemp made.
func (d *Dir) openTemps() error {
	f, err := d.root.Open(d.tmp)
	d.temps.dir = f
	return err
}

// closeTemps closes what openTemps opened.
func (d *Dir) closeTemps() {
	if d.temps.dir != nil {
		d.temps.dir.Close()
	}
}

// createTemp makes a new temporary file for writing, and returns it and
// its name for placeTemp and removeTemp.
func (d *Dir) createTemp() (*os.File, string, error) {
	name := randomName()
	fd, err := unix.Openat(int(d.temps.dir.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, "", &fs.PathError{Op: "create", Path: d.tmp + "/" + name, Err: err}
	}
	return os.NewFile(uintptr(fd), d.tmp+"/"+name), name, nil
}

// removeTemp removes a temporary file; one linked to a key stays there.
func (d *Dir) removeTemp(name string) {
	_ = unix.Unlinkat(int(d.temps.dir.Fd()), name, 0)
}

// placeTemp makes the temporary file name the object key: by a link,
// which fails if key exists, or when replace is set by a rename over it.
// The key's folder is opened through the root, and made when missing, so
// no key leaves the root.
func (d *Dir) placeTemp(name, key string, replace bool) error {
	dir := path.Dir(key)
	df, err := d.root.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err = d.root.MkdirAll(dir, 0o755); err == nil {
			df, err = d.root.Open(dir)
		}
	}
	if err != nil {
		return err
	}
	defer df.Close()
	if replace {
		err = unix.Renameat(int(d.temps.dir.Fd()), name, int(df.Fd()), path.Base(key))
	} else {
		err = unix.Linkat(int(d.temps.dir.Fd()), name, int(df.Fd()), path.Base(key), 0)
	}
	if err != nil {
		return &fs.PathError{Op: "place", Path: key, Err: err}
	}
	return nil
}
