//go:build unix

package batch

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"sync"

	"golang.org/x/sys/unix"
)

// temps is this Dir's folder of temporary files, held open: a temporary
// file is made, linked or renamed to its key, and removed by calls
// relative to it and to the key's folder, with no walk of their paths
// from the root each time (a Create costs a third of what it costs
// through the root's paths).
type temps struct {
	mu  sync.RWMutex // held to read while the folder is used, to write by closeTemps
	dir *os.File
}

// openTemps opens the folder of temporary files that openTemp made.
func (d *Dir) openTemps() error {
	f, err := d.root.Open(d.tmp)
	d.temps.dir = f
	return err
}

// closeTemps closes what openTemps opened, once no call uses it.
func (d *Dir) closeTemps() {
	d.temps.mu.Lock()
	defer d.temps.mu.Unlock()
	if d.temps.dir != nil {
		d.temps.dir.Close()
		d.temps.dir = nil
	}
}

// tempsFd returns the open folder's descriptor and holds it open until
// done is called; an error once the Dir is closed.
func (d *Dir) tempsFd() (fd int, done func(), err error) {
	d.temps.mu.RLock()
	if d.temps.dir == nil {
		d.temps.mu.RUnlock()
		return -1, nil, fs.ErrClosed
	}
	return int(d.temps.dir.Fd()), d.temps.mu.RUnlock, nil
}

// createTemp makes a new temporary file for writing, and returns it and
// its name for placeTemp and removeTemp.
func (d *Dir) createTemp() (*os.File, string, error) {
	dfd, done, err := d.tempsFd()
	if err != nil {
		return nil, "", err
	}
	defer done()
	name := randomName()
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, "", &fs.PathError{Op: "create", Path: d.tmp + "/" + name, Err: err}
	}
	return os.NewFile(uintptr(fd), d.tmp+"/"+name), name, nil
}

// removeTemp removes a temporary file; one linked to a key stays there.
func (d *Dir) removeTemp(name string) {
	if dfd, done, err := d.tempsFd(); err == nil {
		_ = unix.Unlinkat(dfd, name, 0)
		done()
	}
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
	tfd, done, err := d.tempsFd()
	if err != nil {
		return err
	}
	defer done()
	if replace {
		err = unix.Renameat(tfd, name, int(df.Fd()), path.Base(key))
	} else {
		err = unix.Linkat(tfd, name, int(df.Fd()), path.Base(key), 0)
	}
	if err != nil {
		return &fs.PathError{Op: "place", Path: key, Err: err}
	}
	return nil
}
