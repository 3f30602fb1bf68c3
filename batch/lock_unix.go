//go:build unix

package batch

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/creativegen/creative-go/internal/outdir"
)

// lockFolder is the folder of the runs' locks for s: the store's own folder
// when it is one (its processes are those of one machine, whatever their
// view of process ids), else one of this user's under the system's
// temporary folder, which the runs of this machine share.
func lockFolder(s Store) string {
	if f, ok := s.(interface{ RunLockFolder() string }); ok {
		return f.RunLockFolder()
	}
	return filepath.Join(os.TempDir(), "creative-batch-runs-"+strconv.Itoa(os.Getuid()))
}

// openLockFile opens the lock file of the run with token in dir, creating
// it when create is set, through the folder's gate (package outdir): a
// link, a FIFO or a device in its place is refused, never opened. It is
// the one place a lock file is opened.
func openLockFile(dir, token string, create bool) (*os.File, error) {
	d, err := outdir.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	flag := os.O_RDONLY
	if create {
		flag = os.O_RDWR | os.O_CREATE
	}
	return d.OpenFile(".run-"+token+".lock", flag, 0o644)
}

// lockRun takes the run's lock, held by this process until the returned
// func is called (or the process ends, however it ends): another process
// of this machine that finds it held knows the run goes, even while the
// process is suspended. A lock that cannot be taken leaves the run to be
// judged by its heartbeat alone.
func lockRun(dir, token string) (unlock func()) {
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil || !ownFolder(dir) {
		return func() {}
	}
	f, err := openLockFile(dir, token, true)
	if err != nil {
		return func() {}
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		_ = os.Remove(f.Name()) // a free lock would say the run ended
		f.Close()
		return func() {}
	}
	return func() {
		_ = os.Remove(f.Name())
		f.Close()
	}
}

// ownFolder reports whether dir is a folder, not a symbolic link, of this
// process's user: under a temporary folder others write to, one made by
// another user is not trusted with the runs' locks.
func ownFolder(dir string) bool {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Getuid()
}

// A lockState is what a run's lock says of it.
type lockState int

const (
	lockUnknown lockState = iota // no lock file: the heartbeat says
	lockHeld                     // its process lives
	lockFree                     // its process ended
)

// probeRun reads the lock of the run with token in dir without waiting.
func probeRun(dir, token string) lockState {
	if dir == "" {
		return lockUnknown
	}
	f, err := openLockFile(dir, token, false)
	if err != nil {
		return lockUnknown
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	switch {
	case err == nil:
		_ = os.Remove(f.Name()) // left by a process that was killed
		return lockFree
	case errors.Is(err, syscall.EWOULDBLOCK):
		return lockHeld
	}
	return lockUnknown
}
