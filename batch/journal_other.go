//go:build !linux

package batch

import (
	"errors"
	"os"
)

// bootID cannot name the boot on this system: a Dir keeps no journal and
// syncs every write on its own, so the three below are never called.
func bootID() string { return "" }

func syncFS(*os.File) error     { return errors.ErrUnsupported }
func journalFits(*os.File) bool { return false }
func monotonicNow() int64       { return 0 }
func waitLock(*os.File) error   { return errors.ErrUnsupported }

var datasync = (*os.File).Sync
