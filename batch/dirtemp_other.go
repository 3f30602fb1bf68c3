//go:build !unix

package batch

import (
	"errors"
	"io/fs"
	"os"
	"path"
)

// temps is empty here: temporary files are reached by their paths under
// the root.
type temps struct{}

func (d *Dir) openTemps() error { return nil }
func (d *Dir) closeTemps()      {}

// createTemp makes a new temporary file for writing, and returns it and
// its name for placeTemp and removeTemp.
func (d *Dir) createTemp() (*os.File, string, error) {
	name := d.tmp + "/" + randomName()
	f, err := d.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	return f, name, err
}

// removeTemp removes a temporary file; one linked to a key stays there.
func (d *Dir) removeTemp(name string) { _ = d.root.Remove(name) }

// placeTemp makes the temporary file name the object key: by a link,
// which fails if key exists, or when replace is set by a rename over it.
func (d *Dir) placeTemp(name, key string, replace bool) error {
	place := d.root.Link
	if replace {
		place = d.root.Rename
	}
	err := place(name, key)
	if errors.Is(err, fs.ErrNotExist) {
		// Its folder is new: make it, then try again.
		if err = d.root.MkdirAll(path.Dir(key), 0o755); err == nil {
			err = place(name, key)
		}
	}
	return err
}
