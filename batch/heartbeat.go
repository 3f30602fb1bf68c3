package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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

// beatNow writes the run's heartbeat. One that cannot be written does not
// stop the run: the ledger, not the heartbeat, is the record, and the
// run's claims then look like those of a worker that is gone.
func (ru *run) beatNow(ctx context.Context) {
	b, err := json.Marshal(heartbeat{Run: ru.token, Worker: ru.o.Worker, Time: time.Now().UTC(), System: thisSystem(), PID: os.Getpid()})
	if err == nil {
		_ = ru.store.Put(ctx, heartbeatKey(ru.token), b)
	}
}

// keepBeating writes the run's heartbeat now, before any claim, and again
// every heartbeatEvery until the returned func is called, which removes
// it: a rerun right after the run ended is not held back by it.
func (ru *run) keepBeating(ctx context.Context) (stop func()) {
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ru.beatNow(bctx)
	stopTicks := every(heartbeatEvery, func() { ru.beatNow(bctx) })
	return func() {
		cancel() // a write under way gives up
		stopTicks()
		_ = ru.store.Delete(context.WithoutCancel(ctx), heartbeatKey(ru.token))
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
