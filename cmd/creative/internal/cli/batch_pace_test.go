package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

func TestBatchCtrlCLetsCallsInFlightFinishAndTheRerunRepeatsNone(t *testing.T) {
	srv, env := fakeEnv(t)
	path := writeJobs(t, 24)
	out := t.TempDir()
	signals := make(chan os.Signal, 2)
	calls := watchPrompts(srv)
	calls.hook = func(n int, _ *http.Request) {
		if n == 6 {
			signals <- os.Interrupt // Ctrl-C while this call is in flight
		}
	}
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, signals: signals}
	code := a.run([]string{"batch", path, "--out", out, "--concurrency", "4"})
	assert.Equal(t, 130, code, stderr.String())
	assert.Contains(t, stderr.String(), "creative: batch: stopping: letting")
	assert.Contains(t, stderr.String(), "not started")
	assert.True(t, strings.HasSuffix(stderr.String(), "creative: interrupted\n"))
	first := calls.take()
	done := 0
	for _, r := range readResults(t, out) {
		if r.State == batch.Done {
			done++
		} else {
			assert.Equal(t, batch.Refused, r.State, "only jobs stopped before they were sent are not done: %+v", r)
		}
	}
	assert.Equal(t, len(first), done, "every call made finished and was recorded")
	assert.Less(t, len(first), 24, "the batch stopped starting jobs")
	noTempFiles(t, out)

	calls.hook = nil
	code, _, errs := runCLI(t, env, "batch", path, "--out", out, "--concurrency", "4")
	require.Equal(t, 0, code, errs)
	second := calls.take()
	assert.Len(t, second, 24-len(first), "the rerun sends only the jobs not done")
	for _, p := range second {
		assert.NotContains(t, first, p, "no call repeated")
	}
	t.Logf("Ctrl-C at the 6th call: %d calls made, the rerun made %d", len(first), len(second))
}

func TestBatchSecondCtrlCCancelsTheCallsInFlight(t *testing.T) {
	srv, env := fakeEnv(t)
	path := writeJobs(t, 8)
	out := t.TempDir()
	signals := make(chan os.Signal, 2)
	calls := watchPrompts(srv)
	calls.hook = func(n int, r *http.Request) {
		if n == 2 {
			signals <- os.Interrupt
			signals <- os.Interrupt
		}
		<-r.Context().Done() // never answers: only cancelling ends it
	}
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, signals: signals}
	code := a.run([]string{"batch", path, "--out", out, "--concurrency", "2"})
	assert.Equal(t, 130, code, stderr.String())
	assert.Contains(t, stderr.String(), "cancelling the calls in flight")
	recs := readResults(t, out)
	require.Len(t, recs, 2)
	for _, r := range recs {
		assert.Equal(t, batch.Unknown, r.State, "a cancelled call may have been paid")
		assert.Contains(t, r.Error, "context canceled")
	}
	noTempFiles(t, out)
}

// pngAnswer is a text-to-image answer of one tiny PNG.
const pngAnswer = `{"success":true,"message":"ok","data":[{"base64":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}]}`

// stamps answers the calls of text-to-image with one small PNG, or as
// fail says for the call numbered n (from 1), and keeps the time each call
// arrived.
type stamps struct {
	mu    sync.Mutex
	times []time.Time
}

func stampCalls(srv *creativetest.Server, fail func(n int, w http.ResponseWriter) bool) *stamps {
	s := &stamps{}
	srv.Handle("image/text-to-image", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.times = append(s.times, time.Now())
		n := len(s.times)
		s.mu.Unlock()
		if fail != nil && fail(n, w) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, pngAnswer)
	})
	return s
}

func (s *stamps) all() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.times)
}

// Every attempt waits for a token of --rate, retries included: seven
// requests a tenth of a second apart, on the bubble's clock.
func TestBatchRateSpacesEveryAttemptRetriesIncluded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate = 10
		srv, a, stderr := inMemory(t, nil)
		calls := stampCalls(srv, func(n int, w http.ResponseWriter) bool {
			if n <= 2 {
				w.WriteHeader(http.StatusServiceUnavailable) // retried after a backoff
				return true
			}
			return false
		})
		path := writeJobs(t, 5)
		out := t.TempDir()
		code := a.run([]string{"batch", path, "--out", out, "--concurrency", "4", "--rate", fmt.Sprint(rate)})
		require.Equal(t, 0, code, stderr.String())
		times := calls.all()
		require.Len(t, times, 7, "five jobs, two of them retried")
		for i := 1; i < len(times); i++ {
			// x/time/rate's sums of float64 make 100 ms 99.999999 ms.
			assert.GreaterOrEqual(t, times[i].Sub(times[i-1]), time.Second/rate-time.Microsecond, "requests %d and %d", i, i+1)
		}
		attempts := 0
		for _, r := range readResults(t, out) {
			attempts += r.Requests
		}
		assert.Equal(t, 7, attempts)
	})
}

// The first Ctrl-C ends at once the jobs waiting for a token: with one
// token every 2 s, the run ends when the one call in flight does, 200 ms
// after it went.
func TestBatchCtrlCStopsTheJobsWaitingForTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		signals := make(chan os.Signal, 2)
		srv, a, stderr := inMemory(t, signals)
		calls := stampCalls(srv, func(n int, _ http.ResponseWriter) bool {
			if n == 1 {
				signals <- os.Interrupt            // three workers now wait for a token
				time.Sleep(200 * time.Millisecond) // and this call is in flight
			}
			return false
		})
		path := writeJobs(t, 12)
		out := t.TempDir()
		start := time.Now()
		code := a.run([]string{"batch", path, "--out", out, "--concurrency", "4", "--rate", "0.5"})
		took := time.Since(start)
		assert.Equal(t, 130, code, stderr.String())
		assert.Len(t, calls.all(), 1, "no job waiting for the rate was sent after Ctrl-C")
		assert.Contains(t, stderr.String(), "creative: batch: stopping: letting 1 call in flight finish")
		// A worker that had claimed its job waits for a token and ends it
		// refused; one that had not yet claimed (the ledger's writes are
		// real I/O, which the bubble does not wait for) leaves it not
		// started. Either way nothing more was sent and a rerun runs them.
		assert.Regexp(t, `creative: batch: 1 done, ([0-9]+ refused or not sent \(a rerun sends them again\), )?[0-9]+ not started`, stderr.String())
		assert.Equal(t, 200*time.Millisecond, took, "the waits for tokens ended at Ctrl-C: the next token was 2 s away")
		states := map[batch.State]int{}
		for _, r := range readResults(t, out) {
			states[r.State]++
		}
		assert.Equal(t, 1, states[batch.Done])
		for state := range states {
			assert.Contains(t, []batch.State{batch.Done, batch.Refused}, state, "the stopped jobs were not sent (refused): a rerun runs them")
		}
		noTempFiles(t, out)
	})
}

// A 429 asking for a second pauses every worker: after it, on the
// bubble's clock, nothing but the one probe goes before the second is
// over, and the run takes that second.
func TestBatchA429PausesEveryWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, a, stderr := inMemory(t, nil)
		var pausedAt time.Time // when the 429 was answered
		calls := stampCalls(srv, func(n int, w http.ResponseWriter) bool {
			if n == 3 {
				pausedAt = time.Now()
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return true
			}
			return false
		})
		path := writeJobs(t, 24)
		out := t.TempDir()
		start := time.Now()
		code := a.run([]string{"batch", path, "--out", out, "--concurrency", "4"})
		took := time.Since(start)
		require.Equal(t, 0, code, stderr.String())
		times := calls.all()
		require.Len(t, times, 25, "24 jobs, one of them retried")
		during := 0
		for _, at := range times {
			if d := at.Sub(pausedAt); d > 0 && d < time.Second {
				during++
			}
		}
		assert.Zero(t, during, "requests in the paused second, across workers")
		assert.GreaterOrEqual(t, took, time.Second)
		retried := 0
		for _, r := range readResults(t, out) {
			assert.Equal(t, batch.Done, r.State)
			if r.Requests == 2 {
				retried++
			}
		}
		assert.Equal(t, 1, retried)
	})
}
