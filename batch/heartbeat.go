package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
)

// runsPrefix holds the heartbeats of the runs under way, beside the jobs.
const runsPrefix = ledgerPrefix + "runs/"

// A run writes its heartbeat every heartbeatEvery; one that missed
// staleBeats of them is taken as gone.
const (
	heartbeatEvery = 30 * time.Second
	staleBeats     = 3
)

// A heartbeat is the object that says a run goes on (see the package's doc).
type heartbeat struct {
	Run    string    `json:"run"`
	Worker string    `json:"worker,omitempty"`
	Time   time.Time `json:"time"`
	// System names the system the run's process runs on, where it can be
	// named (see thisSystem), and PID is that process: a run on the same
	// system sees at once that a killed worker is gone, without waiting
	// for its heartbeat to go stale.
	System string `json:"system,omitempty"`
	PID    int    `json:"pid,omitempty"`
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

// beating reports whether the run with token still goes: its heartbeat is
// fresh and, when written on this system, its process is still there. No
// token (an older ledger's record), or a heartbeat missing, stale or
// unreadable, is a run that is gone. An error is the Store's.
func beating(ctx context.Context, s Store, token string) (bool, error) {
	if !isRunToken(token) {
		return false, nil
	}
	b, err := s.Get(ctx, heartbeatKey(token))
	if errors.Is(err, ErrNotExist) {
		return false, nil
	}
	var hb heartbeat
	if err != nil || json.Unmarshal(b, &hb) != nil {
		return false, err
	}
	if hb.System != "" && hb.System == thisSystem() && processGone(hb.PID) {
		return false, nil // killed, on this system
	}
	return time.Since(hb.Time) < staleBeats*heartbeatEvery, nil
}

// assess reads the last attempt of the job with key and says what a run
// does with it, reading a heartbeat only for a claim with no end.
func (r *Runner) assess(ctx context.Context, key string) (*record, int, action, error) {
	last, n, err := latest(ctx, r.store, key)
	if err != nil || last == nil || last.State != Claimed {
		return last, n, decide(last, &r.o, false), err
	}
	live, err := beating(ctx, r.store, last.Run)
	if err != nil || live {
		return last, n, decide(last, &r.o, live), err
	}
	// The claim's run looked gone: it may have ended the job, then itself,
	// between the two reads, so the claim is taken over only if it still
	// stands. When attempt n+1 is made, taking it over finds it taken.
	again, m, err := latest(ctx, r.store, key)
	if err == nil && m == n {
		last = again
	}
	return last, n, decide(last, &r.o, false), err
}

// beatNow writes the run's heartbeat.
func (ru *run) beatNow(ctx context.Context) error {
	b, err := json.Marshal(heartbeat{Run: ru.token, Worker: ru.o.Worker, Time: time.Now().UTC(), System: thisSystem(), PID: os.Getpid()})
	if err == nil {
		err = ru.store.Put(ctx, heartbeatKey(ru.token), b)
	}
	return err
}

// keepBeating writes the run's heartbeat now, before any claim, and again
// every heartbeatEvery until the returned func is called, which removes
// it: a rerun right after the run ended is not held back by it. A first
// heartbeat that cannot be written is its error: nothing is claimed. Once
// none could be written for all but the last beat before the run would
// look gone, the run stops claiming (a *LedgerError): another worker would
// soon take its claims for those of a worker that is gone, and with
// Options.ResendUnknown send them again.
func (ru *run) keepBeating(ctx context.Context) (stop func(), err error) {
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if err := ru.beatNow(bctx); err != nil {
		cancel()
		return nil, fmt.Errorf("the run's heartbeat: %w", err)
	}
	last := time.Now()
	stopTicks := every(heartbeatEvery, func() {
		err := ru.beatNow(bctx)
		switch {
		case err == nil:
			last = time.Now()
		case bctx.Err() == nil && time.Since(last) >= (staleBeats-1)*heartbeatEvery:
			ru.failLedger(fmt.Errorf("no heartbeat of the run could be written for %v, so other workers would soon take its claims for those of a worker that is gone: %w",
				time.Since(last).Round(time.Second), err), nil)
		}
	})
	return func() {
		cancel() // a write under way gives up
		stopTicks()
		_ = ru.store.Delete(context.WithoutCancel(ctx), heartbeatKey(ru.token))
	}, nil
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
