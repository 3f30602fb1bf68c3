//go:build !unix && !windows

package cassette

import "os"

// This system has no file locks the cassette uses: one process at a time
// may record into a cassette (the goroutines of that process may record
// at once). Recorders of several processes at once are for Unix and
// Windows.

func lockExclusive(*os.File) error { return nil }

func tryLockExclusive(*os.File) (bool, error) { return true, nil }

func lockShared(*os.File) error { return nil }

func unlock(*os.File) error { return nil }
