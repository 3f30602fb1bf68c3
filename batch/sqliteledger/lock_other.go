//go:build !unix

package sqliteledger

import (
	"context"

	"github.com/creativegen/creative-go/batch/sqlledger"
)

// A noLock stands for a run's lock where the system has no flock: a run
// is live until it ends.
type noLock struct{}

func (noLock) Check(context.Context) error { return nil }
func (noLock) Lost() <-chan struct{}       { return nil }
func (noLock) Release() error              { return nil }

func lockRun(string, string) (sqlledger.Lock, error) { return noLock{}, nil }

// probeRun cannot tell: it says held, so that no live run is taken for
// gone.
func probeRun(string, string) (bool, error) { return true, nil }
