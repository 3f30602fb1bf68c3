//go:build unix

package sqliteledger

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/creativegen/creative-go/batch/sqlledger"
	"github.com/creativegen/creative-go/internal/outdir"
)

// lockName is the name of the lock file of the run with token.
func lockName(token string) string { return ".run-" + token + ".lock" }

// openLockFile opens the lock file of the run with token in dir, with
// flag, through the folder's gate (package outdir): a link, a FIFO or a
// device in its place is refused, never opened.
func openLockFile(dir, token string, flag int) (*os.File, error) {
	d, err := outdir.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.OpenFile(lockName(token), flag, 0o644)
}

// A flock is a run's lock: held by its process until released, or until
// the process ends, however it ends.
type flock struct{ f *os.File }

func (dir runLocks) lock(_ context.Context, token string) (sqlledger.Lock, error) {
	f, err := openLockFile(string(dir), token, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = os.Remove(f.Name())
		f.Close()
		return nil, err
	}
	return &flock{f: f}, nil
}

func (l *flock) Check(context.Context) error { return nil }
func (l *flock) Lost() <-chan struct{}       { return nil }

// Release removes the file, then lets the lock go: a prober finds no file,
// and a run with none is gone.
func (l *flock) Release() error {
	_ = os.Remove(l.f.Name())
	return l.f.Close()
}

// probe reads the lock of the run with token in dir without waiting:
// held by a live process, or free (its file is gone, or no process holds
// it, and it is removed).
func (dir runLocks) probe(_ context.Context, _ sqlledger.Querier, token string) (bool, error) {
	f, err := openLockFile(string(dir), token, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	switch {
	case err == nil:
		_ = os.Remove(f.Name()) // left by a process that was killed
		return false, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	}
	return false, err
}
