package batch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

// heartbeatKey is where a run keeps its heartbeat: every worker sharing a
// Store reads it there.
func heartbeatKey(run string) string { return "ledger/runs/" + run + ".json" }

// noEnds is a Store that cannot record how an attempt ended: the attempts it
// starts stay claimed, as those of a worker killed in flight do.
type noEnds struct{ batch.Store }

func (s noEnds) Create(ctx context.Context, key string, data []byte) error {
	if strings.HasSuffix(key, ".end.json") {
		return fmt.Errorf("create %s: %w", key, syscall.ENOSPC)
	}
	return s.Store.Create(ctx, key, data)
}

// openOut returns the fixture's store.
func (f *fixture) openOut(*testing.T) batch.Store { return f.store }

// leaveClaimed runs the fixture's one job with a store that records no
// end, so that its attempt stays claimed, and returns the run's token.
func (f *fixture) leaveClaimed(t *testing.T) string {
	t.Helper()
	var mu sync.Mutex
	run := ""
	r, err := batch.New(f.c, noEnds{f.openOut(t)}, batch.Options{Concurrency: 1, Base: filepath.Dir(f.jobs), OnEvent: func(e batch.Event) {
		if e.Type == batch.JobStarted {
			mu.Lock()
			run = e.Record.Run
			mu.Unlock()
		}
	}})
	require.NoError(t, err)
	_, err = checkAndRun(r, batch.File(f.jobs))
	require.ErrorAs(t, err, new(*batch.LedgerError))
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, run, "the claim names its run")
	return run
}

// putHeartbeat writes the heartbeat of run as a live run writes it, with
// the time at, and the system and process of the run as key and value
// pairs in more.
func (f *fixture) putHeartbeat(t *testing.T, run string, at time.Time, more ...any) {
	t.Helper()
	hb := map[string]any{"run": run, "worker": "peer", "time": at.UTC()}
	for i := 0; i+1 < len(more); i += 2 {
		hb[more[i].(string)] = more[i+1]
	}
	b, err := json.Marshal(hb)
	require.NoError(t, err)
	require.NoError(t, f.openOut(t).Put(context.Background(), heartbeatKey(run), b))
}

// planAndRun plans, then runs, the fixture's jobs with one Runner.
func (f *fixture) planAndRun(t *testing.T, o batch.Options) (*batch.Plan, batch.Summary, error) {
	t.Helper()
	o.Base = filepath.Dir(f.jobs)
	r, err := batch.New(f.c, f.openOut(t), o)
	require.NoError(t, err)
	c, err := r.Check(context.Background(), batch.File(f.jobs))
	require.NoError(t, err)
	plan, err := r.Plan(context.Background(), c)
	require.NoError(t, err)
	sum, err := r.Run(context.Background(), c)
	return plan, sum, err
}

func TestAClaimWhoseRunStillBeatsIsLeftToItsWorker(t *testing.T) {
	const op = "image/text-to-image"
	for _, tc := range []struct {
		name   string
		beat   time.Duration // how long ago its run last wrote its heartbeat; 0: never
		resend bool          // Options.ResendUnknown
		sends  int
		want   batch.Summary // the counts that leave it alone
	}{
		{"a fresh heartbeat, with ResendUnknown: in flight elsewhere", time.Second, true, 0, batch.Summary{Elsewhere: 1}},
		{"a fresh heartbeat: in flight elsewhere, not a claim to report", time.Second, false, 0, batch.Summary{Elsewhere: 1}},
		{"a stale heartbeat, with ResendUnknown: its worker is gone", time.Hour, true, 1, batch.Summary{}},
		{"a stale heartbeat: maybe paid, left", time.Hour, false, 0, batch.Summary{Claimed: 1}},
		{"no heartbeat, with ResendUnknown: its run is gone", 0, true, 1, batch.Summary{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.write(t, imageJobs(1)...)
			run := f.leaveClaimed(t)
			require.Equal(t, 1, f.srv.Count(op))
			f.srv.Reset()
			if tc.beat > 0 {
				f.putHeartbeat(t, run, time.Now().Add(-tc.beat))
			}
			listed := 0
			st, err := batch.ReadStatus(context.Background(), f.openOut(t), func(batch.Record) { listed++ })
			require.NoError(t, err)
			assert.Equal(t, 1, st.States[batch.Claimed], "%+v", st)
			if tc.want.Elsewhere > 0 {
				assert.Equal(t, 1, st.InFlight, "the status counts it in flight")
				assert.Zero(t, listed, "and lists it not as maybe paid")
			} else {
				assert.Zero(t, st.InFlight)
				assert.Equal(t, 1, listed, "the status lists it as maybe paid")
			}

			plan, sum, err := f.planAndRun(t, batch.Options{ResendUnknown: tc.resend})
			require.NoError(t, err)
			assert.Equal(t, tc.sends, f.srv.Count(op), "requests that arrived")
			assert.Equal(t, tc.sends, plan.Calls[op], "the plan says what the run did: %+v", plan)
			assert.Equal(t, tc.sends, sum.Done, "%+v", sum)
			for _, got := range []batch.Summary{sum, plan.Summary} {
				assert.Equal(t, tc.want.Elsewhere, got.Elsewhere, "%+v", got)
				assert.Equal(t, tc.want.Claimed, got.Claimed, "%+v", got)
			}
		})
	}
}

func TestAClaimThatNamesNoRunIsSentAgainOnlyWithResendUnknown(t *testing.T) {
	const op = "image/text-to-image"
	f := newFixture(t)
	f.write(t, imageJobs(1)...)
	run := f.leaveClaimed(t)
	f.srv.Reset()
	// The claim as an older version wrote it, without its run; that run's
	// heartbeat is fresh, and is not the claim's.
	f.putHeartbeat(t, run, time.Now())
	dir := f.openOut(t)
	claims := 0
	for key, err := range dir.List(context.Background(), "ledger/") {
		require.NoError(t, err)
		if strings.HasPrefix(key, "ledger/runs/") || strings.Count(filepath.Base(key), ".") != 2 {
			continue // a heartbeat, or an answer or an end
		}
		claims++
		b, err := dir.Get(context.Background(), key)
		require.NoError(t, err)
		var rec map[string]any
		require.NoError(t, json.Unmarshal(b, &rec))
		require.Equal(t, run, rec["run"])
		delete(rec, "run")
		b, err = json.Marshal(rec)
		require.NoError(t, err)
		require.NoError(t, dir.Put(context.Background(), key, b))
	}
	require.Equal(t, 1, claims)

	sum, err := f.run(t, batch.Options{})
	require.NoError(t, err)
	assert.Zero(t, f.srv.Count(op), "left alone without the flag")
	assert.Equal(t, 1, sum.Claimed, "%+v", sum)

	sum, err = f.run(t, batch.Options{ResendUnknown: true})
	require.NoError(t, err)
	assert.Equal(t, 1, f.srv.Count(op), "its worker is taken as gone")
	assert.Equal(t, 1, sum.Done, "%+v", sum)
}

func TestADownloadInFlightOnALiveRunIsNotFetchedAgain(t *testing.T) {
	const op = "audio/text-to-music"
	f := newFixture(t)
	f.write(t, `{"op":"audio/text-to-music","prompt":"tune"}`)
	f.leaveClaimed(t)             // paid, answered, downloaded, its end not recorded
	download := f.leaveClaimed(t) // a download of the answer, its end not recorded
	require.Equal(t, 1, f.srv.Count(op))

	f.putHeartbeat(t, download, time.Now())
	var started atomic.Int32
	o := batch.Options{OnEvent: func(e batch.Event) {
		if e.Type == batch.JobStarted {
			started.Add(1)
		}
	}}
	sum, err := f.run(t, o)
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Elsewhere, "%+v", sum)
	assert.Zero(t, started.Load(), "nothing fetched")

	f.putHeartbeat(t, download, time.Now().Add(-time.Hour))
	sum, err = f.run(t, o)
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Done, "its worker is gone: fetched again, free: %+v", sum)
	assert.Equal(t, 1, f.srv.Count(op), "paid once")
}

func TestAClaimOfAProcessGoneFromThisMachineIsSentAgainAtOnce(t *testing.T) {
	const op = "image/text-to-image"
	system := batch.ThisSystem()
	if system == "" {
		t.Skip("this system does not name itself to its processes")
	}
	ended := exec.Command(os.Args[0], "-test.run=^$")
	require.NoError(t, ended.Run())
	for _, tc := range []struct {
		name  string
		pid   int
		sends int
	}{
		{"its process is gone", ended.Process.Pid, 1},
		{"its process runs", os.Getpid(), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.write(t, imageJobs(1)...)
			run := f.leaveClaimed(t)
			f.srv.Reset()
			f.putHeartbeat(t, run, time.Now(), "system", system, "pid", tc.pid)

			plan, sum, err := f.planAndRun(t, batch.Options{ResendUnknown: true})
			require.NoError(t, err)
			assert.Equal(t, tc.sends, f.srv.Count(op), "requests that arrived")
			assert.Equal(t, tc.sends, plan.Calls[op], "the plan says what the run did: %+v", plan)
			assert.Equal(t, 1-tc.sends, sum.Elsewhere, "%+v", sum)
		})
	}
}

// beatWatch is a Store that counts the writes of heartbeats, and holds each
// claim until the heartbeat was written three times: when the run started,
// and twice more while it went (at 15 s and 30 s, on a bubble's clock: a
// beat every sixth of the 90 s lease).
type beatWatch struct {
	batch.Store
	beats  atomic.Int32
	beaten chan struct{} // closed at the third heartbeat
}

func (s *beatWatch) Put(ctx context.Context, key string, data []byte) error {
	err := s.Store.Put(ctx, key, data)
	if strings.HasPrefix(key, "ledger/runs/") && s.beats.Add(1) == 3 {
		close(s.beaten)
	}
	return err
}

func (s *beatWatch) Create(ctx context.Context, key string, data []byte) error {
	select {
	case <-s.beaten:
	case <-time.After(time.Hour):
		return errors.New("the heartbeat was not written again while the run went")
	}
	return s.Store.Create(ctx, key, data)
}

func TestARunBeatsWhileItGoesAndRemovesItsHeartbeatAtItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, creativetest.WithInMemoryNetwork())
		f.write(t, imageJobs(3)...)
		dir := f.openOut(t)
		store := &beatWatch{Store: dir, beaten: make(chan struct{})}
		var mu sync.Mutex
		seen := map[string]bool{} // heartbeats found while jobs started, by run
		var firstClaim time.Duration
		start := time.Now()
		r, err := batch.New(f.c, store, batch.Options{Worker: "w1", Base: filepath.Dir(f.jobs), OnEvent: func(e batch.Event) {
			if e.Type != batch.JobStarted {
				return
			}
			b, err := dir.Get(context.Background(), heartbeatKey(e.Record.Run))
			var hb struct {
				Run    string    `json:"run"`
				Worker string    `json:"worker"`
				Time   time.Time `json:"time"`
				System string    `json:"system"`
				PID    int       `json:"pid"`
			}
			ok := err == nil && json.Unmarshal(b, &hb) == nil && hb.Run == e.Record.Run && hb.Worker == "w1" &&
				hb.Time.Equal(start.Add(30*time.Second)) && hb.System == batch.ThisSystem() && hb.PID == os.Getpid()
			mu.Lock()
			seen[e.Record.Run] = seen[e.Record.Run] || ok
			if firstClaim == 0 {
				firstClaim = time.Since(start)
			}
			mu.Unlock()
		}})
		require.NoError(t, err)
		sum, err := checkAndRun(r, batch.File(f.jobs))
		require.NoError(t, err)
		assert.Equal(t, 3, sum.Done)
		assert.Equal(t, 30*time.Second, firstClaim, "the claims waited for the beats at 0, 15 s and 30 s")
		require.Len(t, seen, 1, "one run, named in every claim: %v", seen)
		for run, ok := range seen {
			assert.True(t, ok, "the heartbeat of the run, written at 30 s, was there while it went")
			exists, err := dir.Exists(context.Background(), heartbeatKey(run))
			require.NoError(t, err)
			assert.False(t, exists, "the heartbeat is removed when the run ends")
		}
		for key, err := range dir.List(context.Background(), "ledger/runs/") {
			require.NoError(t, err)
			t.Errorf("left behind: %s", key)
		}
	})
}

// noBeats is a Store that writes the first allow heartbeats, then no more.
type noBeats struct {
	batch.Store
	allow   int32
	written atomic.Int32
	refused atomic.Int32
}

func (s *noBeats) Put(ctx context.Context, key string, data []byte) error {
	if strings.HasPrefix(key, "ledger/runs/") && s.written.Add(1) > s.allow {
		s.refused.Add(1)
		return fmt.Errorf("write %s: %w", key, syscall.EACCES)
	}
	return s.Store.Put(ctx, key, data)
}

// A run whose first heartbeat cannot be written claims nothing and sends
// nothing: its claims would look like those of a worker that is gone.
func TestARunWhoseHeartbeatCannotBeWrittenSendsNothing(t *testing.T) {
	f := newFixture(t)
	f.write(t, imageJobs(4)...)
	r, err := batch.New(f.c, &noBeats{Store: f.openOut(t)}, batch.Options{Base: filepath.Dir(f.jobs)})
	require.NoError(t, err)
	sum, err := checkAndRun(r, batch.File(f.jobs))
	var le *batch.LedgerError
	require.ErrorAs(t, err, &le)
	assert.ErrorIs(t, err, syscall.EACCES)
	assert.Equal(t, 4, sum.NotStarted, "%+v", sum)
	assert.Zero(t, f.srv.Count("image/text-to-image"))
}

// A run whose heartbeats stop being written stops claiming 60 s after the
// last one began (the 90 s lease less its 30 s margin, well before another
// worker takes its claims for a dead worker's at 120 s); the calls in
// flight end and are recorded. Calls take 45 s, two at once: four start at
// 0 s and 45 s, the beats from 15 s on fail, and the other four never
// start.
func TestARunWhoseHeartbeatsStopStopsClaiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, creativetest.WithInMemoryNetwork(), creativetest.WithLatency(45*time.Second))
		f.write(t, imageJobs(8)...)
		store := &noBeats{Store: f.openOut(t), allow: 1}
		r, err := batch.New(f.c, store, batch.Options{Base: filepath.Dir(f.jobs), Concurrency: 2})
		require.NoError(t, err)
		sum, err := checkAndRun(r, batch.File(f.jobs))
		var le *batch.LedgerError
		require.ErrorAs(t, err, &le)
		assert.Contains(t, err.Error(), "the run's lease is in doubt: its last heartbeat written began 1m0s ago")
		assert.Empty(t, le.Unrecorded)
		assert.Equal(t, 4, sum.Done, "%+v", sum)
		assert.Equal(t, 4, sum.NotStarted, "%+v", sum)
		assert.Equal(t, 4, f.srv.Count("image/text-to-image"))
		assert.GreaterOrEqual(t, store.refused.Load(), int32(3), "refused at 15 s, 30 s and 45 s")
	})
}

// heldEnds is a Store that holds back how an attempt ended, as a worker
// that has not yet written it.
type heldEnds struct {
	batch.Store
	mu         sync.Mutex
	key        string
	data       []byte
	endsBefore string // a heartbeat key: reading it first writes the held end
}

func (s *heldEnds) Create(ctx context.Context, key string, data []byte) error {
	if strings.HasSuffix(key, ".end.json") && s.endsBefore == "" {
		s.mu.Lock()
		s.key, s.data = key, data
		s.mu.Unlock()
		return fmt.Errorf("create %s: %w", key, syscall.ENOSPC)
	}
	return s.Store.Create(ctx, key, data)
}

func (s *heldEnds) Get(ctx context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	if key == s.endsBefore && s.data != nil {
		if err := s.Store.Create(ctx, s.key, s.data); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		s.data = nil
	}
	s.mu.Unlock()
	return s.Store.Get(ctx, key)
}

// A claim whose worker ends the job, then its run, between a rerun's read
// of the claim and of its heartbeat is not taken for a dead worker's: even
// with ResendUnknown, the job is not paid twice.
func TestAClaimEndedWhileItsHeartbeatIsReadIsNotSentAgain(t *testing.T) {
	const op = "image/text-to-image"
	f := newFixture(t)
	f.write(t, `{"op":"image/text-to-image","prompt":"owl"}`)
	store := &heldEnds{Store: f.store}
	var run string
	r, err := batch.New(f.c, store, batch.Options{Concurrency: 1, Base: filepath.Dir(f.jobs), OnEvent: func(e batch.Event) {
		if e.Type == batch.JobStarted {
			run = e.Record.Run
		}
	}})
	require.NoError(t, err)
	_, err = checkAndRun(r, batch.File(f.jobs))
	require.ErrorAs(t, err, new(*batch.LedgerError))
	require.NotEmpty(t, store.data, "the end was held back")
	require.Equal(t, 1, f.srv.Count(op))

	// The run is gone (no heartbeat): the rerun reads the claim, then the
	// heartbeat, and the end is written in between.
	store.endsBefore = heartbeatKey(run)
	r, err = batch.New(f.c, store, batch.Options{Base: filepath.Dir(f.jobs), ResendUnknown: true})
	require.NoError(t, err)
	sum, err := checkAndRun(r, batch.File(f.jobs))
	require.NoError(t, err)
	assert.Equal(t, 1, sum.DoneBefore, "%+v", sum)
	assert.Equal(t, 1, f.srv.Count(op), "paid once")
}

// A job that may have been paid stays so until an attempt of it ends
// done: an attempt sent again with ResendUnknown that does nothing (not
// sent under a spent budget, refused by the service, failed) leaves the
// job maybe paid, so that a rerun without ResendUnknown does not pay for
// it again, and batch status lists it to review.
func TestAJobMaybePaidStaysSoUntilAnAttemptIsDone(t *testing.T) {
	const op = "image/text-to-image"
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, f *fixture) batch.Options
	}{
		{"not sent: the budget is spent", func(t *testing.T, f *fixture) batch.Options {
			b, err := json.Marshal(map[string]any{"size": 1, "limit": 1, "op": op})
			require.NoError(t, err)
			require.NoError(t, f.store.Create(context.Background(), "ledger/budget/calls/00000000000000000000.json", b))
			return batch.Options{Budget: batch.Budget{MaxCalls: 1}}
		}},
		{"refused by the service, every time", func(t *testing.T, f *fixture) batch.Options {
			f.srv.Fail(op, creativetest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "0", Times: 100})
			return batch.Options{}
		}},
		{"failed: the service said no", func(t *testing.T, f *fixture) batch.Options {
			f.srv.Fail(op, creativetest.Fault{Status: http.StatusBadRequest, Message: "prompt: no"})
			return batch.Options{}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.write(t, imageJobs(1)...)
			f.leaveClaimed(t) // paid, and its end never recorded
			require.Equal(t, 1, f.srv.Count(op))
			o := tc.setup(t, f)
			o.ResendUnknown = true
			sum, err := f.run(t, o)
			require.NoError(t, err)
			assert.Zero(t, sum.Done, "%+v", sum)

			f.srv.Reset()
			sum, err = f.run(t, batch.Options{})
			require.NoError(t, err)
			assert.Zero(t, f.srv.Count(op), "a rerun without ResendUnknown paid again: %+v", sum)
			assert.Equal(t, 1, sum.Unknown, "%+v", sum)
			var review []batch.Record
			st, err := batch.ReadStatus(context.Background(), f.store, func(r batch.Record) { review = append(review, r) })
			require.NoError(t, err)
			assert.Equal(t, map[batch.State]int{batch.Unknown: 1}, st.States)
			require.Len(t, review, 1)
			assert.Contains(t, review[0].Error, "an earlier attempt may have been paid")

			sum, err = f.run(t, batch.Options{ResendUnknown: true})
			require.NoError(t, err)
			assert.Equal(t, 1, f.srv.Count(op), "the caller's say-so sends it")
			assert.Equal(t, 1, sum.Done, "%+v", sum)
		})
	}
}

// stopAtClaim stops its run once a claim of a second attempt is made, as
// a Ctrl-C between the claim and the send would.
type stopAtClaim struct {
	batch.Store
	stop func() int
}

func (s *stopAtClaim) Create(ctx context.Context, key string, data []byte) error {
	err := s.Store.Create(ctx, key, data)
	if err == nil && strings.HasSuffix(key, ".0002.json") {
		s.stop()
	}
	return err
}

// A run with ResendUnknown stopped between its claim of a maybe paid job
// and the send leaves the job maybe paid: a plain rerun sends nothing.
func TestAResendStoppedBeforeItsSendLeavesTheJobMaybePaid(t *testing.T) {
	const op = "image/text-to-image"
	f := newFixture(t)
	f.write(t, imageJobs(1)...)
	f.leaveClaimed(t)
	stopping := &stopAtClaim{Store: f.store}
	r, err := batch.New(f.c, stopping, batch.Options{ResendUnknown: true, Base: filepath.Dir(f.jobs)})
	require.NoError(t, err)
	stopping.stop = r.Stop
	sum, err := checkAndRun(r, batch.File(f.jobs))
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Unknown, "%+v", sum)
	assert.Equal(t, 1, f.srv.Count(op), "the stopped run sent nothing")

	sum, err = f.run(t, batch.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, f.srv.Count(op), "a rerun without ResendUnknown paid again: %+v", sum)
}
