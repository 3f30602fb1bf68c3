package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
)

// runsPrefix holds the heartbeats of the runs under way, beside the jobs.
const runsPrefix = ledgerPrefix + "runs/"

// DefaultLease is the length of a run's lease when Options.Lease is 0.
const DefaultLease = 90 * time.Second

// The times of a lease of length L (see the package's doc): the run sends
// only while its last heartbeat write that completed began less than
// L - margin ago; it writes one every beat, each with a deadline of its
// own; others take it for gone once its heartbeat is older than L + skew.
type leaseTimes struct {
	length   time.Duration // L
	margin   time.Duration // L/3
	beat     time.Duration // L/6: a heartbeat is written this often
	deadline time.Duration // L/9: each heartbeat write gives up after it
	skew     time.Duration // L/3: what others allow for clocks that disagree
}

func timesOf(l time.Duration) leaseTimes {
	if l <= 0 {
		l = DefaultLease
	}
	return leaseTimes{length: l, margin: l / 3, beat: l / 6, deadline: l / 9, skew: l / 3}
}

// A heartbeat is the object that says a run goes on (see the package's doc).
type heartbeat struct {
	Run    string    `json:"run"`
	Worker string    `json:"worker,omitempty"`
	Time   time.Time `json:"time"`
	// LeaseMS is the run's lease in milliseconds (0: DefaultLease).
	LeaseMS int64 `json:"leaseMs,omitempty"`
	// System names the system the run's process runs on, where it can be
	// named (see thisSystem), and PID is that process: a run on the same
	// system sees at once that a killed worker is gone, without waiting
	// for its heartbeat to go stale.
	System string `json:"system,omitempty"`
	PID    int    `json:"pid,omitempty"`
}

// lease is the length of the lease hb states, kept within a second and an
// hour whatever the object says.
func (hb *heartbeat) lease() time.Duration {
	if hb.LeaseMS <= 0 {
		return DefaultLease
	}
	return min(max(time.Duration(hb.LeaseMS)*time.Millisecond, time.Second), time.Hour)
}

func heartbeatKey(token string) string { return runsPrefix + token + ".json" }

// tokenLen is the length of a run's token: 16 random bytes in hex.
const tokenLen = 32

func newRunToken() string {
	var b [tokenLen / 2]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}

// isRunToken reports whether s is a token newRunToken could draw, so that
// a record read from the Store names no other key.
func isRunToken(s string) bool {
	_, err := hex.DecodeString(s)
	return len(s) == tokenLen && err == nil
}

// A lease is a run's right to send the jobs it claimed (see the package's
// doc). Its times are read on the monotonic clock, and on the wall clock
// too, whichever says more time passed: Linux's monotonic clock stands
// still while the whole system sleeps (a closed laptop lid), the wall
// clock does not.
type lease struct {
	leaseTimes
	t0    time.Time
	began atomic.Int64 // since t0: the start of the last heartbeat write that completed
	lost  chan struct{}
	once  sync.Once
	why   error // set before lost is closed
	last  atomic.Pointer[error]
}

func newLease(t leaseTimes) *lease {
	return &lease{leaseTimes: t, t0: time.Now(), lost: make(chan struct{})}
}

// held reports whether the lease is proven at this moment: this is the one
// lease check every send and claim passes.
func (l *lease) held() bool {
	select {
	case <-l.lost:
		return false
	default:
	}
	return l.left() > 0
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

// lose ends the lease for good, for why.
func (l *lease) lose(why error) {
	l.once.Do(func() { l.why = why; close(l.lost) })
}

// doubt says why the lease is in doubt: the last heartbeat write's error,
// or a write that did not return.
func (l *lease) doubt() error {
	ago := (l.since() - time.Duration(l.began.Load())).Round(time.Millisecond)
	cause := fmt.Errorf("a heartbeat write did not return within %v", l.deadline)
	if p := l.last.Load(); p != nil {
		cause = *p
	}
	return fmt.Errorf("%w: its last heartbeat written began %v ago, and another worker takes its claims for those of a worker that is gone once it is %v old: %w",
		errLeaseInDoubt, ago, l.length+l.skew, cause)
}

// beatNow writes the run's heartbeat within deadline, and renews the
// lease when the write completed.
func (ru *run) beatNow(ctx context.Context, deadline time.Duration) error {
	begin := ru.lease.since()
	b, err := json.Marshal(heartbeat{Run: ru.token, Worker: ru.o.Worker, Time: time.Now().UTC(), LeaseMS: ru.lease.length.Milliseconds(),
		System: thisSystem(), PID: os.Getpid()})
	if err == nil {
		wctx, cancel := context.WithTimeout(ctx, deadline)
		err = ru.store.Put(wctx, heartbeatKey(ru.token), b)
		cancel()
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

// keepBeating takes the run's lock on this machine, writes the run's
// heartbeat now, before any claim, and again every beat until the returned
// func is called, which removes both: a rerun right after the run ended is
// not held back by them. A first heartbeat that cannot be written is its
// error: nothing is claimed. A watchdog of its own, apart from the writes,
// ends the lease the moment it is no longer proven, and stops the run
// with onLost. The returned func waits for a heartbeat write under way
// for one write's deadline at most: a store that ignores it does not hold
// the run's end.
func (ru *run) keepBeating(ctx context.Context, onLost func(error)) (stop func(), err error) {
	unlock := lockRun(lockFolder(ru.store), ru.token)
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// The first write may take the margin: nothing is claimed before it
	// completes, and the lease runs from its start.
	if err := ru.beatNow(bctx, ru.lease.margin); err != nil {
		cancel()
		unlock()
		return nil, fmt.Errorf("the run's heartbeat: %w", err)
	}
	done, beaten := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(beaten)
		t := time.NewTicker(ru.lease.beat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = ru.beatNow(bctx, ru.lease.deadline)
			}
		}
	}()
	var wg sync.WaitGroup
	wg.Go(func() { ru.watch(done, onLost) })
	return func() {
		close(done)
		wg.Wait()
		cancel() // a write under way gives up
		select {
		case <-beaten:
		case <-time.After(ru.lease.deadline):
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ru.lease.deadline)
		defer cancel()
		_ = ru.store.Delete(dctx, heartbeatKey(ru.token))
		unlock()
	}, nil
}

// watch is the lease's watchdog: it wakes when the lease would end, and
// ends it unless a heartbeat written meanwhile renewed it, until done.
func (ru *run) watch(done <-chan struct{}, onLost func(error)) {
	l := ru.lease
	t := time.NewTimer(l.left())
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		if left := l.left(); left > 0 {
			t.Reset(left)
			continue
		}
		err := l.doubt()
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
