//go:build !unix

package outdir

import (
	"io/fs"
	"os"
)

// openFlags are added to every open of an existing name: none on a system
// without O_NOFOLLOW and O_NONBLOCK, where the look before the open and
// the check after it do the work.
const openFlags = 0

// links returns how many names the file st describes has: 1 where the
// system does not say.
func links(fs.FileInfo) uint64 { return 1 }

// inputFlags are added to the open of an input: none here (see openFlags).
const inputFlags = 0

// holdTemp holds no lock here: RemoveDeadTemps removes nothing.
func holdTemp(*os.Root, string) (*os.File, error) { return nil, nil }

// tryLock says no: without flock no temporary file is known dead.
func tryLock(*os.File) bool { return false }

// removeFile removes the file name of root (see RemoveDeadTemps: never
// called here).
func removeFile(root *os.Root, name string) error { return root.Remove(name) }
