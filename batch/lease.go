package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultLease is the length of a run's lease when Options.Lease is 0.
const DefaultLease = 90 * time.Second

// newRunToken draws a run's token: 16 random bytes in hex.
func newRunToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}

// A lease is a run's right to send the jobs it claimed (see the package's
// doc). Its times are read on the monotonic clock, and on the wall clock
// too, whichever says more time passed: Linux's monotonic clock stands
// still while the whole system sleeps (a closed laptop lid), the wall
// clock does not.
//
// Of a lease of length L (see Options.Lease), the run sends only while
// its last heartbeat that completed began less than L - margin ago; it
// beats every beat, each with a deadline of its own; an engine that
// judges by heartbeats takes it for gone once its heartbeat is older than
// L + L/3 by the database's clock.
type lease struct {
	length   time.Duration // L
	margin   time.Duration // L/3
	beat     time.Duration // L/6: a heartbeat is written this often
	deadline time.Duration // L/9: each heartbeat gives up after it
	t0       time.Time
	began    atomic.Int64            // since t0: the start of the last heartbeat write that completed
	lost     context.Context         // done once the lease is lost for good; its cause says why
	lose     context.CancelCauseFunc // ends the lease for good, for the first why given
	last     atomic.Pointer[error]
}

// newLease is a lease of length l, DefaultLease when 0.
func newLease(l time.Duration) *lease {
	if l <= 0 {
		l = DefaultLease
	}
	lost, lose := context.WithCancelCause(context.Background())
	return &lease{length: l, margin: l / 3, beat: l / 6, deadline: l / 9, t0: time.Now(), lost: lost, lose: lose}
}

// held reports whether the lease is proven at this moment: this is the one
// lease check every send and claim passes.
func (l *lease) held() bool {
	return l.lost.Err() == nil && l.left() > 0
}

// since is the time since t0, by the clock that says more.
func (l *lease) since() time.Duration {
	now := time.Now()
	return max(now.Sub(l.t0), now.Round(0).Sub(l.t0.Round(0)))
}

// left is how long the lease stays proven from now.
func (l *lease) left() time.Duration {
	return l.length - l.margin - (l.since() - time.Duration(l.began.Load()))
}

// doubt says why the lease is in doubt: the last heartbeat's error, or a
// heartbeat that did not return.
func (l *lease) doubt() error {
	ago := (l.since() - time.Duration(l.began.Load())).Round(time.Millisecond)
	cause := fmt.Errorf("a heartbeat did not return within %v", l.deadline)
	if p := l.last.Load(); p != nil {
		cause = *p
	}
	return fmt.Errorf("%w: its last heartbeat began %v ago, and the engine may take its claims for those of a worker that is gone once it is %v old: %w",
		errLeaseInDoubt, ago, l.length+l.length/3, cause)
}

// beatNow renews the run's heartbeat within deadline, and the lease when
// it completed; a run the engine took for gone loses its lease at once.
func (ru *run) beatNow(ctx context.Context, deadline time.Duration) error {
	begin := ru.lease.since()
	wctx, cancel := context.WithTimeout(ctx, deadline)
	err := ru.session.Beat(wctx)
	cancel()
	if errors.Is(err, ErrLeaseLost) {
		ru.lease.lose(fmt.Errorf("%w: %w", errLeaseInDoubt, err))
	}
	if err != nil {
		ru.lease.last.Store(&err)
		return err
	}
	ru.lease.renew(begin)
	return nil
}

// renew renews the lease from begin, the start of a heartbeat write that
// completed, unless it had lapsed before that write began: a lease once
// in doubt is never proven again (the process may have been stopped past
// it, and another worker may have taken its claims over meanwhile).
func (l *lease) renew(begin time.Duration) {
	for {
		old := l.began.Load()
		if begin-time.Duration(old) >= l.length-l.margin {
			l.lose(l.doubt())
			return
		}
		if int64(begin) <= old || l.began.CompareAndSwap(old, int64(begin)) {
			return
		}
	}
}

// keepBeating begins the run's session, before any claim (the lease runs
// from its start), and renews its heartbeat every beat until the returned
// func is called, which ends the session: a session that cannot begin is
// its error, and nothing is claimed. A watchdog of its own, apart from the
// heartbeats, ends the lease the moment it is no longer proven, or its
// session's lock is lost, and stops the run with onLost. The returned func
// waits for a heartbeat under way for one deadline at most.
func (ru *run) keepBeating(ctx context.Context, onLost func(error)) (stop func(), err error) {
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	begin := ru.lease.since()
	sctx, scancel := context.WithTimeout(bctx, ru.lease.margin)
	ru.session, err = ru.ledger.Begin(sctx, RunInfo{Token: ru.token, Worker: ru.o.Worker, Lease: ru.lease.length})
	scancel()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("the run's session: %w", err)
	}
	ru.lease.renew(begin)
	stopBeats := every(ru.lease.beat, func() { _ = ru.beatNow(bctx, ru.lease.deadline) })
	done, beaten := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { ru.watch(done, ru.session.Lost(), onLost) })
	return func() {
		close(done)
		wg.Wait()
		cancel() // a heartbeat under way gives up
		go func() { stopBeats(); close(beaten) }()
		select {
		case <-beaten:
		case <-time.After(ru.lease.deadline):
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ru.lease.deadline)
		defer cancel()
		_ = ru.session.End(dctx)
	}, nil
}

// watch is the lease's watchdog: it wakes when the lease would end, and
// ends it unless a heartbeat written meanwhile renewed it, until done.
func (ru *run) watch(done, lockLost <-chan struct{}, onLost func(error)) {
	l := ru.lease
	t := time.NewTimer(l.left())
	defer t.Stop()
	for {
		var err error
		select {
		case <-done:
			return
		case <-l.lost.Done():
			err = context.Cause(l.lost)
		case <-lockLost:
			err = fmt.Errorf("%w: the session's lock was lost (its connection to the ledger ended)", errLeaseInDoubt)
		case <-t.C:
			if left := l.left(); left > 0 {
				t.Reset(left)
				continue
			}
			err = l.doubt()
		}
		l.lose(err)
		onLost(err)
		return
	}
}

// every calls fn every d, from a goroutine of its own, until the returned
// func is called; that func returns once fn is no longer running.
func every(d time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
