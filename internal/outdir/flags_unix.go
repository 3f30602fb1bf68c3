//go:build unix

package outdir

import (
	"io/fs"
	"syscall"
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
