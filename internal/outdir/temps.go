package outdir

import (
	"io"
	"os"
	"path"
	"strings"
	"time"
)

// tempQuiet is how long a temporary file must have gone unwritten before
// RemoveDeadTemps removes it: a guard for a folder shared over a network
// file system, where another machine's lock may not be seen.
const tempQuiet = time.Minute

// RemoveDeadTemps removes from the folder dir of d the temporary files
// named "."+prefix+...+".tmp" that a writer killed mid-write left: those
// whose lock (each Temp holds its own from its making until Remove, and a
// process's locks go when it ends, however it ends) no one holds, and
// unwritten for a minute. A live writer's file is never removed. It
// reads the folder a page of names at a time (and looks at none but
// those of temporary files), and returns how many it
// removed. On a system without flock it removes none.
func (d *Dir) RemoveDeadTemps(dir, prefix string) (removed int, err error) {
	f, err := d.root.Open(dir)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	for {
		// Names only: on a file system that gives no type with a name,
		// ReadDir would look at each of the folder's files.
		names, err := f.Readdirnames(256)
		for _, n := range names {
			if strings.HasPrefix(n, "."+prefix) && strings.HasSuffix(n, ".tmp") && d.removeDead(path.Join(dir, n)) {
				removed++
			}
		}
		if err == io.EOF || err == nil && len(names) == 0 {
			return removed, nil
		}
		if err != nil {
			return removed, err
		}
	}
}

// removeDead removes the temporary file name if it is dead (see
// RemoveDeadTemps), holding its lock meanwhile.
func (d *Dir) removeDead(name string) bool {
	st, err := d.root.Lstat(name)
	if err != nil || !st.Mode().IsRegular() || time.Since(st.ModTime()) < tempQuiet {
		return false
	}
	f, err := d.root.OpenFile(name, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	return tryLock(f) && d.root.Remove(name) == nil
}
