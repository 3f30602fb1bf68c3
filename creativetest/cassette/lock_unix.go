//go:build unix

package cassette

import (
	"os"
	"syscall"
)

// lockExclusive takes f's lock for this process alone, waiting for it.
func lockExclusive(f *os.File) error { return flock(f, syscall.LOCK_EX) }

// tryLockExclusive takes f's lock for this process alone when no other
// process holds it, and reports whether it did.
func tryLockExclusive(f *os.File) (bool, error) {
	err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if err == syscall.EWOULDBLOCK {
		return false, nil
	}
	return err == nil, err
}

// lockShared takes f's lock beside other processes that share it,
// waiting while one holds it alone.
func lockShared(f *os.File) error { return flock(f, syscall.LOCK_SH) }

// unlock lets go of f's lock.
func unlock(f *os.File) error { return flock(f, syscall.LOCK_UN) }

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}
