//go:build windows

package cassette

import (
	"os"

	winapi "golang.org/x/sys/windows"
)

// The locks of Windows (LockFileEx) on the first byte of the file, as
// flock's are on the whole file elsewhere.

func lockFile(f *os.File, flags uint32) error {
	var ol winapi.Overlapped
	return winapi.LockFileEx(winapi.Handle(f.Fd()), flags, 0, 1, 0, &ol)
}

// lockExclusive takes f's lock for this process alone, waiting for it.
func lockExclusive(f *os.File) error { return lockFile(f, winapi.LOCKFILE_EXCLUSIVE_LOCK) }

// tryLockExclusive takes f's lock for this process alone when no other
// process holds it, and reports whether it did.
func tryLockExclusive(f *os.File) (bool, error) {
	err := lockFile(f, winapi.LOCKFILE_EXCLUSIVE_LOCK|winapi.LOCKFILE_FAIL_IMMEDIATELY)
	if err == winapi.ERROR_LOCK_VIOLATION {
		return false, nil
	}
	return err == nil, err
}

// lockShared takes f's lock beside other processes that share it,
// waiting while one holds it alone.
func lockShared(f *os.File) error { return lockFile(f, 0) }

// unlock lets go of f's lock.
func unlock(f *os.File) error {
	var ol winapi.Overlapped
	return winapi.UnlockFileEx(winapi.Handle(f.Fd()), 0, 1, 0, &ol)
}
