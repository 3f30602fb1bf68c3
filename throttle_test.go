package creative

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

// Throttling: WithRateLimit, and the client-wide pause a 429 or 503 with
// Retry-After asks for. The server stamps every request it receives, so the
// tests assert on what reached it and when.

// stampServer is a test server that records when each request arrived and
// its header.
type stampServer struct {
	*testServer
	mu       sync.Mutex
	arrivals []time.Time
	headers  []http.Header
}

func newStampServer(t *testing.T, h func(n int, w http.ResponseWriter, r *http.Request)) *stampServer {
	t.Helper()
	ss := &stampServer{}
	ss.testServer = newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ss.mu.Lock()
		ss.arrivals = append(ss.arrivals, time.Now())
		ss.headers = append(ss.headers, r.Header.Clone())
		n := len(ss.arrivals)
		ss.mu.Unlock()
		h(n, w, r)
	})
	return ss
}

func (ss *stampServer) stamps() []time.Time {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]time.Time(nil), ss.arrivals...)
}

// header returns the header of the i-th request, counting from 1.
func (ss *stampServer) header(i int) http.Header {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if i < 1 || i > len(ss.headers) {
		return nil
	}
	return ss.headers[i-1]
}

// count is how many requests arrived.
func (ss *stampServer) count() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.arrivals)
}

const musicOK = `{"success":true,"message":"ok","data":"http://127.0.0.1/a.wav"}`

func music(ctx context.Context, c *Client, opts ...Option) error {
	_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"}, opts...)
	return err
}

// A probe that is itself asked to wait again must not leave the client
// paused for good: the next attempt goes once the new wait is over.
func TestARepeatedRetryAfterDoesNotStallTheClient(t *testing.T) {
	for _, status := range []int{429, 503} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			ss := newStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n <= 2 {
					w.Header().Set("Retry-After", "0")
					replyJSON(status, `{"success":false,"message":"slow down"}`)(w, r)
					return
				}
				replyJSON(200, musicOK)(w, r)
			})
			c := newTestClient(t, ss.URL)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			require.NoError(t, music(ctx, c), "two waits of 0 s are within the default two retries")
			assert.Len(t, ss.stamps(), 3)
			require.NoError(t, music(ctx, c), "the client is not paused afterwards")
			assert.Len(t, ss.stamps(), 4)
		})
	}
}

// An attempt that went first after a pause but then gave up waiting for the
// rate limiter hands the first place to the next attempt.
func TestAProbeThatGivesUpOnTheLimiterLetsTheNextOneGo(t *testing.T) {
	ss := newStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) { replyJSON(200, musicOK)(w, r) })
	lim := rate.NewLimiter(0.001, 1)
	c := newTestClient(t, ss.URL, WithRateLimiter(lim))
	require.True(t, lim.Allow(), "the only token is spent: the next one is 1000 s away")
	c.pause.report(&http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"0"}}}, nil) // a pause that has just ended

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.Error(t, music(ctx, c), "the probe cannot get a token before its deadline")

	lim.SetLimit(rate.Inf)
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, music(ctx, c))
	assert.Less(t, time.Since(start), time.Second, "the next call went first at once")
	assert.Len(t, ss.stamps(), 1)
}

// elevenCalls makes 11 calls at once through c and returns how long they
// took together.
func elevenCalls(t *testing.T, c *Client) time.Duration {
	t.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	for range 11 {
		wg.Go(func() { assert.NoError(t, music(context.Background(), c)) })
	}
	wg.Wait()
	return time.Since(start)
}

func TestWithRateLimitSpreadsCallsOverItsBudget(t *testing.T) {
	// 10 a second with a burst of 1: the first call goes at once, the ten
	// others one every 100 ms, so 11 calls take 1 s. A busy machine can
	// only make it slower: the lower bound is firm, the upper one generous
	// and given two tries.
	var took time.Duration
	var span time.Duration
	for range 2 {
		ss := newStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) { replyJSON(200, musicOK)(w, r) })
		c := newTestClient(t, ss.URL, WithRateLimit(10, 1))
		took = elevenCalls(t, c)
		stamps := ss.stamps()
		require.Len(t, stamps, 11)
		span = stamps[10].Sub(stamps[0])
		if took < 2500*time.Millisecond {
			break
		}
	}
	assert.GreaterOrEqual(t, took, 900*time.Millisecond, "11 calls at 10/s")
	assert.Less(t, took, 2500*time.Millisecond, "11 calls at 10/s")
	assert.GreaterOrEqual(t, span, 850*time.Millisecond, "from the first request the server saw to the last")
}

func TestWithRateLimitMakesRetriesWaitForATokenToo(t *testing.T) {
	ss := newStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n <= 2 {
			replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
			return
		}
		replyJSON(200, musicOK)(w, r)
	})
	c := newTestClient(t, ss.URL, WithRateLimit(10, 1)) // backoffs of a millisecond or two
	require.NoError(t, music(context.Background(), c))
	stamps := ss.stamps()
	require.Len(t, stamps, 3)
	for i := 1; i < len(stamps); i++ {
		assert.GreaterOrEqual(t, stamps[i].Sub(stamps[i-1]), 80*time.Millisecond, "retry %d waited for its token", i)
	}
}

func TestTheRateLimitWaitHonoursTheContext(t *testing.T) {
	ss := newStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) { replyJSON(200, musicOK)(w, r) })
	c := newTestClient(t, ss.URL, WithRateLimit(0.5, 1)) // a token every 2 s
	require.NoError(t, music(context.Background(), c), "the first token is there")

	t.Run("a deadline before the next token returns at once", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := music(ctx, c)
		assert.Less(t, time.Since(start), 500*time.Millisecond, "no waiting for a token that comes too late")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var netErr *NetworkError
		assert.ErrorAs(t, err, &netErr)
		assert.Contains(t, err.Error(), "rate limit")
	})
	t.Run("a cancellation ends the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- music(ctx, c) }()
		time.Sleep(50 * time.Millisecond) // into the 2 s wait for a token
		cancelled := time.Now()
		cancel()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled)
			assert.Less(t, time.Since(cancelled), 200*time.Millisecond)
		case <-time.After(5 * time.Second):
			t.Fatal("the call did not return after its context was cancelled")
		}
	})
	assert.Len(t, ss.stamps(), 1, "the refused calls sent nothing")
}

// onMessage is a slog handler that closes a channel the first time a record
// with the message msg is handled.
type onMessage struct {
	msg  string
	once sync.Once
	seen chan struct{}
}

func (h *onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h *onMessage) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *onMessage) WithGroup(string) slog.Handler            { return h }
func (h *onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}

var untilRE = regexp.MustCompile(`wait until (\S+),`)

func TestA429WithRetryAfterPausesTheWholeClientAndOneProbeGoesFirst(t *testing.T) {
	const crowd = 100
	var probeAnswered atomic.Pointer[time.Time]
	ss := newStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 1:
			w.Header().Set("Retry-After", "1")
			replyJSON(429, `{"success":false,"message":"slow down"}`)(w, r)
		case 2:
			// The first request after the pause; the others must wait for
			// its answer, however long it takes.
			time.Sleep(100 * time.Millisecond)
			now := time.Now()
			probeAnswered.Store(&now)
			replyJSON(200, musicOK)(w, r)
		default:
			replyJSON(200, musicOK)(w, r)
		}
	})
	c := newTestClient(t, ss.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The first call gets the 429 and backs off for the second it asks;
	// the client is paused once that call says it is retrying.
	retrying := &onMessage{msg: "creative: retrying", seen: make(chan struct{})}
	first := make(chan error, 1)
	go func() { first <- music(ctx, c, WithLogger(slog.New(retrying))) }()
	select {
	case <-retrying.seen:
	case <-ctx.Done():
		t.Fatal("the first call never retried")
	}

	t.Run("a call whose deadline ends before the pause returns at once, sending nothing", func(t *testing.T) {
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := music(short, c)
		assert.Less(t, time.Since(start), 250*time.Millisecond, "returned at once, not at its deadline")
		assert.ErrorIs(t, err, ErrRateLimited)
		assert.NotErrorIs(t, err, ErrServer)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, 429, apiErr.StatusCode)
		assert.Equal(t, 0, apiErr.Attempts, "nothing was sent")
		assert.Greater(t, apiErr.RetryAfter, time.Duration(0))
		assert.Contains(t, err.Error(), "nothing sent")
		m := untilRE.FindStringSubmatch(err.Error())
		require.Len(t, m, 2, "the message says until when: %v", err)
		until, perr := time.Parse(time.RFC3339, m[1])
		require.NoError(t, perr)
		assert.WithinDuration(t, ss.stamps()[0].Add(time.Second), until, 1500*time.Millisecond)
	})

	var wg sync.WaitGroup
	for range crowd {
		wg.Go(func() { assert.NoError(t, music(ctx, c)) })
	}
	wg.Wait()
	require.NoError(t, <-first)

	stamps := ss.stamps()
	require.Len(t, stamps, crowd+2, "the 429, the first call's retry and one request per call of the crowd")
	pauseEnd := stamps[0].Add(time.Second)
	for i, s := range stamps[1:] {
		assert.False(t, s.Before(pauseEnd), "request %d came %v before the pause ended", i+2, pauseEnd.Sub(s))
	}
	answered := probeAnswered.Load()
	require.NotNil(t, answered)
	for i, s := range stamps[2:] {
		assert.False(t, s.Before(*answered), "request %d came %v before the probe's answer", i+3, answered.Sub(s))
	}
}

// countingLimiter is a RateLimiter of the caller's own: it counts its waits
// and refuses once refuse is set.
type countingLimiter struct {
	mu     sync.Mutex
	waits  int
	refuse error
}

func (l *countingLimiter) Wait(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waits++
	return l.refuse
}

// A limiter of the caller's own is asked before every attempt, retries
// included, and its refusal sends nothing.
func TestWithRateLimiterIsAskedBeforeEveryAttempt(t *testing.T) {
	ss := newStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "0")
			replyJSON(http.StatusTooManyRequests, `{"success":false,"message":"slow down"}`)(w, r)
			return
		}
		replyJSON(200, musicOK)(w, r)
	})
	lim := &countingLimiter{}
	c := newTestClient(t, ss.URL, WithRateLimiter(lim))
	require.NoError(t, music(context.Background(), c))
	assert.Equal(t, 2, lim.waits, "one wait for the refused attempt, one for the retry")
	assert.Len(t, ss.stamps(), 2)

	quota := errors.New("the fleet's quota is spent")
	lim.refuse = quota
	err := music(context.Background(), c)
	require.ErrorIs(t, err, quota)
	assert.Len(t, ss.stamps(), 2, "a refused wait sends nothing")

	_, err = New(WithBaseURL(ss.URL), WithAccessKey("k"), WithRateLimiter(nil))
	require.Error(t, err)
}
