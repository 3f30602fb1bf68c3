//go:build unix

package outdir

import (
	"io/fs"
	"os"
	"path"
	"syscall"

	"golang.org/x/sys/unix"
)

// openFlags are added to every open of an existing name: no link is
// followed, and a FIFO that took the file's place is not waited for.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// links returns how many names the file st describes has: a file with
// more than one may be another's, linked in.
func links(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Nlink)
	}
	return 1
}

// inputFlags are added to the open of an input: a FIFO that took the
// file's place is not waited for.
const inputFlags = syscall.O_NONBLOCK

// holdTemp takes the lock of the temporary file name, held while the
// returned file is open: a process's locks go when it ends, however it
// ends.
func holdTemp(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|openFlags, 0)
	if err == nil {
		if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
		}
	}
	return f, err
}

// tryLock takes the lock of f unless another holds it.
func tryLock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// removeFile removes the name name of root if it is not a folder: unlink,
// never rmdir, so that a folder that took a file's name is left.
func removeFile(root *os.Root, name string) error {
	dir, err := root.Open(path.Dir(name))
	if err != nil {
		return err
	}
	defer dir.Close()
	return unix.Unlinkat(int(dir.Fd()), path.Base(name), 0)
}
