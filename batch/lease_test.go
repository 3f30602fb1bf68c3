package batch_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

// hungBeats is a Store on another machine (no lock of its runs can be
// seen) whose heartbeat writes after the first hang as a PUT on a stalled
// connection does, whatever the write's deadline, until release is closed.
type hungBeats struct {
	batch.Store
	beats   atomic.Int32
	release chan struct{}
}

func (s *hungBeats) Put(ctx context.Context, key string, data []byte) error {
	if strings.HasPrefix(key, "ledger/runs/") && s.beats.Add(1) > 1 {
		<-s.release
		return context.DeadlineExceeded
	}
	return s.Store.Put(ctx, key, data)
}

// RunLockFolder says that the runs of this store keep no lock that its
// readers could see, as on another machine.
func (s *hungBeats) RunLockFolder() string { return "" }

// otherMachine is a Store seen from another machine: the locks of the
// runs that share it cannot be seen.
type otherMachine struct{ batch.Store }

func (otherMachine) RunLockFolder() string { return "" }

// sendTimes is call middleware that notes when each attempt went out.
type sendTimes struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
}

func (s *sendTimes) option() creative.Option {
	return creative.WithMiddleware(func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
		s.mu.Lock()
		s.at = append(s.at, time.Since(s.start))
		s.mu.Unlock()
		return next(req)
	})
}

// A run whose heartbeat writes hang (every one after the first) sends
// nothing once its lease is in doubt: the watchdog shares nothing with the
// hung write. Calls take 45 s, two at once: four are sent at 0 s and 45 s,
// the lease is in doubt at 60 s (90 s less its 30 s margin), the four in
// flight end and are recorded, and nothing else is claimed or sent.
func TestARunWhoseHeartbeatWritesHangSendsNothingOnceItsLeaseIsInDoubt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const op = "image/text-to-image"
		f := newFixture(t, creativetest.WithInMemoryNetwork(), creativetest.WithLatency(45*time.Second))
		f.write(t, imageJobs(8)...)
		store := &hungBeats{Store: f.store, release: make(chan struct{})}
		sent := &sendTimes{start: time.Now()}
		r, err := batch.New(f.c, store, batch.Options{Base: filepath.Dir(f.jobs), Concurrency: 2, CallOptions: []creative.Option{sent.option()}})
		require.NoError(t, err)
		sum, err := checkAndRun(r, batch.File(f.jobs))
		close(store.release)
		var le *batch.LedgerError
		require.ErrorAs(t, err, &le)
		assert.Contains(t, err.Error(), "the run's lease is in doubt")
		assert.Contains(t, sum.Stopped, "the run's lease is in doubt")
		assert.Equal(t, 4, f.srv.Count(op), "sent at 0 s and 45 s only")
		for _, at := range sent.at {
			assert.Less(t, at, time.Minute, "sent while the lease was proven: %v", sent.at)
		}
		assert.Equal(t, 4, sum.Done, "%+v", sum)
		assert.Equal(t, 4, sum.NotStarted, "%+v", sum)
		st, err := batch.ReadStatus(context.Background(), f.store, nil)
		require.NoError(t, err)
		assert.Equal(t, 4, st.States[batch.Done], "the answers that came after the lease was in doubt are in the ledger: %+v", st)
		assert.Equal(t, 4, st.Jobs)
	})
}

// The case end to end on one ledger: the first worker's heartbeat
// writes hang and its calls take 200 s; a second worker with
// ResendUnknown starts at 130 s, when the first's heartbeat is older than
// its lease plus the skew allowance, and sends again the two jobs the
// first has in flight (the first sent nothing after 60 s). When the
// first's answers come, their records are fenced by the attempt's number:
// the second worker's takeover holds it, so the first's records are
// refused, its answers handed back in its LedgerError, and the ledger
// shows each job done once.
func TestARecordAfterTheLeaseLapsedNeverShowsAJobDoneTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const op = "image/text-to-image"
		f := newFixture(t, creativetest.WithInMemoryNetwork(), creativetest.WithLatency(200*time.Second))
		f.write(t, imageJobs(4)...)
		store := &hungBeats{Store: f.store, release: make(chan struct{})}
		var once sync.Once
		release := func() { once.Do(func() { close(store.release) }) }
		defer func() { release(); synctest.Wait() }()
		sent := &sendTimes{start: time.Now()}
		r1, err := batch.New(f.c, store, batch.Options{Base: filepath.Dir(f.jobs), Concurrency: 2, Worker: "w1", CallOptions: []creative.Option{sent.option()}})
		require.NoError(t, err)
		var sum1 batch.Summary
		var err1 error
		done := make(chan struct{})
		go func() {
			defer close(done)
			sum1, err1 = checkAndRun(r1, batch.File(f.jobs))
		}()
		time.Sleep(130 * time.Second)
		synctest.Wait()
		sent.mu.Lock()
		require.Equal(t, []time.Duration{0, 0}, sent.at, "the first worker sent two, then its lease was in doubt")
		sent.mu.Unlock()

		r2, err := batch.New(f.c, otherMachine{f.store}, batch.Options{Base: filepath.Dir(f.jobs), Concurrency: 4, Worker: "w2", ResendUnknown: true})
		require.NoError(t, err)
		sum2, err2 := checkAndRun(r2, batch.File(f.jobs))
		<-done
		release()
		require.NoError(t, err2)
		assert.Equal(t, 4, sum2.Done, "%+v", sum2)
		assert.Equal(t, 6, f.srv.Count(op), "two paid twice, resent by the user's leave once their worker's lease had lapsed")

		var le *batch.LedgerError
		require.ErrorAs(t, err1, &le)
		assert.Len(t, le.Unrecorded, 2, "the first worker's answers, refused by the fence, are handed back")
		assert.Len(t, le.MaybePaid, 0)
		assert.Zero(t, sum1.Done, "%+v", sum1)

		st, err := batch.ReadStatus(context.Background(), f.store, nil)
		require.NoError(t, err)
		assert.Equal(t, 4, st.Jobs)
		assert.Equal(t, 4, st.States[batch.Done], "%+v", st)
	})
}

// A key the service refuses stops the run at its first answer: nothing
// more is claimed or sent, and the summary says why in one line.
func TestARefusedKeyStopsTheRun(t *testing.T) {
	const op = "image/text-to-image"
	f := newFixture(t)
	f.write(t, imageJobs(50)...)
	f.srv.Fail(op, creativetest.Fault{Status: http.StatusUnauthorized, Times: 1000, Message: "x-access-key: not a valid key"})
	sum, err := f.run(t, batch.Options{Concurrency: 1})
	var ae *creative.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusUnauthorized, ae.StatusCode)
	assert.Contains(t, err.Error(), "the service refused the access key")
	assert.Equal(t, "the service refused the access key (HTTP Unauthorized)", sum.Stopped)
	assert.Equal(t, 1, f.srv.Count(op), "one request, not fifty")
	assert.Equal(t, 1, sum.Failed)
	assert.Equal(t, 49, sum.NotStarted, "%+v", sum)
}

// Only an answer every job would get alike stops a run: a base URL that
// is not the service's stops it at once; an answer wrong for its job
// alone (too large, not the envelope) fails that job, and the run goes on.
func TestOnlyAnAnswerEveryJobGetsAlikeStopsTheRun(t *testing.T) {
	const op, jobs = "image/text-to-image", 5
	for _, tc := range []struct {
		name    string
		fault   creativetest.Fault
		opts    []creative.Option
		stopped string // "" when the run goes on
	}{
		{"403: the key refused", creativetest.Fault{Status: http.StatusForbidden}, nil, "the service refused the access key (HTTP Forbidden)"},
		{"404: no such path", creativetest.Fault{Status: http.StatusNotFound}, nil, "the base URL does not answer as the service (HTTP Not Found)"},
		{"405: no POST here", creativetest.Fault{Status: http.StatusMethodNotAllowed}, nil, "the base URL does not answer as the service (HTTP Method Not Allowed)"},
		{"200 with a web page", creativetest.Fault{Status: http.StatusOK, Body: "<html>welcome</html>"}, nil, "the base URL does not answer as the service (a web page)"},
		{"200 JSON that is not the envelope", creativetest.Fault{Status: http.StatusOK, Body: `{"hello":1}`, ContentType: "application/json"}, nil, ""},
		{"an answer past the size allowed", creativetest.Fault{Times: -1}, []creative.Option{creative.WithMaxResponseBytes(64)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.write(t, imageJobs(jobs)...)
			if tc.fault.Times >= 0 {
				tc.fault.Times = 1000
				f.srv.Fail(op, tc.fault)
			}
			sum, err := f.run(t, batch.Options{Concurrency: 1, CallOptions: tc.opts})
			assert.Equal(t, tc.stopped, sum.Stopped)
			if tc.stopped != "" {
				require.Error(t, err)
				assert.Equal(t, 1, f.srv.Count(op), "one request, then nothing more is sent")
				assert.Equal(t, jobs-1, sum.NotStarted, "%+v", sum)
				return
			}
			assert.Equal(t, jobs, f.srv.Count(op), "every job sent: the answer was its own")
			assert.Zero(t, sum.NotStarted, "%+v", sum)
			assert.Zero(t, sum.Done, "%+v", sum)
		})
	}
}

// storeClock is a Store seen from another machine that tells when each
// object was written by its own clock: at, whatever the writer said.
type storeClock struct {
	otherMachine
	at time.Time
}

func (s storeClock) ModTime(context.Context, string) (time.Time, error) { return s.at, nil }

// A heartbeat's age is read by the store's clock where the store has one:
// a worker whose clock runs ahead cannot keep its run looking alive, and
// one whose clock runs behind does not make it look gone.
func TestAHeartbeatsAgeIsReadByTheStoresClock(t *testing.T) {
	const op = "image/text-to-image"
	for _, tc := range []struct {
		name          string
		written, said time.Duration // ago: by the store's clock, by the writer's
		sends         int
	}{
		{"the writer's clock ahead: gone by the store's", 3 * time.Minute, 0, 1},
		{"the writer's clock behind: live by the store's", time.Second, time.Hour, 0},
		{"within the lease and the skew allowance: live", 119 * time.Second, 119 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.write(t, imageJobs(1)...)
			run := f.leaveClaimed(t)
			f.srv.Reset()
			f.putHeartbeat(t, run, time.Now().Add(-tc.said))
			store := storeClock{otherMachine{f.store}, time.Now().Add(-tc.written)}
			r, err := batch.New(f.c, store, batch.Options{Base: filepath.Dir(f.jobs), ResendUnknown: true})
			require.NoError(t, err)
			sum, err := checkAndRun(r, batch.File(f.jobs))
			require.NoError(t, err)
			assert.Equal(t, tc.sends, f.srv.Count(op))
			assert.Equal(t, 1-tc.sends, sum.Elsewhere, "%+v", sum)
		})
	}
}

// A job left to another worker's run that is killed before this run ends
// is counted, in this run's summary, as claimed by a worker that is gone
// (maybe paid), not as in flight on a worker that still runs.
func TestASurvivorsSummaryCountsAKilledWorkersClaimAsGone(t *testing.T) {
	f := newFixture(t)
	f.write(t, imageJobs(1)...)
	run := f.leaveClaimed(t)
	f.srv.Reset()
	f.putHeartbeat(t, run, time.Now())
	r, err := batch.New(f.c, otherMachine{f.store}, batch.Options{Base: filepath.Dir(f.jobs), OnEvent: func(e batch.Event) {
		if e.Type == batch.JobSkipped {
			f.putHeartbeat(t, run, time.Now().Add(-time.Hour)) // its worker is killed now
		}
	}})
	require.NoError(t, err)
	sum, err := checkAndRun(r, batch.File(f.jobs))
	require.NoError(t, err)
	assert.Zero(t, f.srv.Count("image/text-to-image"))
	assert.Zero(t, sum.Elsewhere, "%+v", sum)
	assert.Equal(t, 1, sum.Claimed, "%+v", sum)
}

// A retry is a send too: a call that waits to retry (a 429 answered at
// 20 s that asked for 50 s) when its run's lease falls in doubt (at 60 s)
// does not send again, and ends without a second request.
func TestARetryWaitingWhenTheLeaseFallsInDoubtIsNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const op = "image/text-to-image"
		f := newFixture(t, creativetest.WithInMemoryNetwork(), creativetest.WithLatency(20*time.Second))
		f.write(t, imageJobs(1)...)
		f.srv.Fail(op, creativetest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "50"})
		store := &noBeats{Store: otherMachine{f.store}, allow: 1}
		c := f.srv.Client(creative.WithRetryWait(time.Second, 200*time.Second))
		r, err := batch.New(c, store, batch.Options{Base: filepath.Dir(f.jobs), Concurrency: 1})
		require.NoError(t, err)
		sum, err := checkAndRun(r, batch.File(f.jobs))
		var le *batch.LedgerError
		require.ErrorAs(t, err, &le)
		assert.Contains(t, err.Error(), "the run's lease is in doubt")
		assert.Equal(t, 1, f.srv.Count(op), "the 429 only: the retry was not sent")
		assert.Equal(t, 1, sum.Requests, "%+v", sum)
		st, err := batch.ReadStatus(context.Background(), f.store, nil)
		require.NoError(t, err)
		assert.Equal(t, 1, sum.Refused, "the service did not do it: a rerun sends it: %+v", sum)
		assert.Equal(t, 1, st.States[batch.Refused], "recorded, though after the lease was in doubt: %+v", st)
	})
}
