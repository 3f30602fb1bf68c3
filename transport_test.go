package creative

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

// One attempt on its way (transport.go): the rate limiter, the middleware
// and the per-attempt timeout.

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

// The rate limiter's waits are timers: these tests run in a synctest
// bubble, their server in memory, so a token 100 ms away is 100 ms of the
// bubble's clock away, give or take the few nanoseconds the limiter's
// floating-point sums round off.
const tokenRounding = time.Microsecond

func TestWithRateLimitSpreadsCallsOverItsBudget(t *testing.T) {
	// 10 a second with a burst of 1: the first call goes at once, the ten
	// others one every 100 ms, so 11 calls take 1 s.
	synctest.Test(t, func(t *testing.T) {
		ss := newMemStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) { replyJSON(200, musicOK)(w, r) })
		c := ss.client(t, WithRateLimiter(rate.NewLimiter(10, 1)))
		took := elevenCalls(t, c)
		stamps := ss.stamps()
		require.Len(t, stamps, 11)
		assert.InDelta(t, time.Second, took, float64(tokenRounding), "11 calls at 10/s")
		for i := 1; i < len(stamps); i++ {
			assert.WithinDuration(t, stamps[i-1].Add(100*time.Millisecond), stamps[i], tokenRounding, "request %d came a token after the one before", i+1)
		}
	})
}

func TestWithRateLimitMakesRetriesWaitForATokenToo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newMemStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n <= 2 {
				replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
				return
			}
			replyJSON(200, musicOK)(w, r)
		})
		c := ss.client(t, WithRateLimiter(rate.NewLimiter(10, 1))) // backoffs of a millisecond or two
		require.NoError(t, music(context.Background(), c))
		stamps := ss.stamps()
		require.Len(t, stamps, 3)
		for i := 1; i < len(stamps); i++ {
			assert.WithinDuration(t, stamps[i-1].Add(100*time.Millisecond), stamps[i], tokenRounding, "retry %d waited for its token", i)
		}
	})
}

func TestTheRateLimitWaitHonoursTheContext(t *testing.T) {
	// A client at 0.5 a second, whose first token is spent: the next is
	// 2 s away.
	start := func(t *testing.T) (*stampServer, *Client) {
		ss := newMemStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) { replyJSON(200, musicOK)(w, r) })
		c := ss.client(t, WithRateLimiter(rate.NewLimiter(0.5, 1)))
		require.NoError(t, music(context.Background(), c), "the first token is there")
		return ss, c
	}
	t.Run("a deadline before the next token returns at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ss, c := start(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			err := music(ctx, c)
			assert.Zero(t, time.Since(start), "no waiting for a token that comes too late")
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.ErrorIs(t, err, ErrNotSent)
			var netErr *NetworkError
			assert.ErrorAs(t, err, &netErr)
			assert.Contains(t, err.Error(), "rate limit")
			assert.Len(t, ss.stamps(), 1, "the refused call sent nothing")
		})
	})
	t.Run("a cancellation ends the wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ss, c := start(t)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- music(ctx, c) }()
			synctest.Wait() // the call waits for its token
			start := time.Now()
			cancel()
			synctest.Wait()
			select {
			case err := <-done:
				assert.ErrorIs(t, err, context.Canceled)
			default:
				t.Fatal("the call did not return at once after its context was cancelled")
			}
			assert.Zero(t, time.Since(start), "no time passed")
			assert.Len(t, ss.stamps(), 1, "the cancelled call sent nothing")
		})
	})
}

// countingLimiter is a RateLimiter of the caller's own: it counts its waits
// and refuses once refuse is set.
type countingLimiter struct {
	mu     sync.Mutex
	waits  int
	refuse error
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
	assert.ErrorIs(t, err, ErrNotSent)
	assert.Len(t, ss.stamps(), 2, "a refused wait sends nothing")

	_, err = New(WithBaseURL(ss.URL), WithAccessKey("k"), WithRateLimiter(nil))
	require.Error(t, err)
}

func TestWithRequestTimeout(t *testing.T) {
	// The per-attempt timeout is a timer: each case runs in a synctest
	// bubble, its server in memory.
	for _, p := range placements {
		t.Run(p.name+": a stall after the request arrived is an unknown outcome, not sent again", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ss := newMemStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
					if n == 1 {
						stall(r)
						return
					}
					replyJSON(200, musicOK)(w, r)
				})
				c, call := p.put(t, ss.testServer, WithRequestTimeout(250*time.Millisecond))
				start := time.Now()
				err := music(context.Background(), c, call...)
				assert.Equal(t, 250*time.Millisecond, time.Since(start), "the attempt ended at its timeout")
				assert.ErrorIs(t, err, ErrOutcomeUnknown)
				var netErr *NetworkError
				require.ErrorAs(t, err, &netErr)
				assert.Equal(t, 1, netErr.Attempts)
				assert.Contains(t, err.Error(), "WithRequestTimeout")
				assert.Contains(t, err.Error(), "the service may have done the work and charged for it, so it was not sent again, after 1 attempt")
				assert.Equal(t, 1, ss.count())
			})
		})
		t.Run(p.name+": with WithRetryMayPayAgain the stalled attempt is retried and the second succeeds", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ss := newMemStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
					if n == 1 {
						stall(r)
						return
					}
					replyJSON(200, musicOK)(w, r)
				})
				c, call := p.put(t, ss.testServer, WithRequestTimeout(100*time.Millisecond), WithRetryMayPayAgain())
				require.NoError(t, music(context.Background(), c, call...))
				stamps := ss.stamps()
				require.Len(t, stamps, 2)
				retry := stamps[1].Sub(stamps[0])
				assert.GreaterOrEqual(t, retry, 100*time.Millisecond, "the first attempt ran to its timeout")
				assert.LessOrEqual(t, retry, 101*time.Millisecond, "and was retried after a backoff of at most 1 ms")
			})
		})
	}
	t.Run("an attempt that stalls every time fails saying so", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ss := newMemStampServer(t, func(_ int, _ http.ResponseWriter, r *http.Request) { stall(r) })
			c := ss.client(t)
			err := music(context.Background(), c, WithRequestTimeout(50*time.Millisecond), WithMaxRetries(1), WithRetryMayPayAgain())
			var netErr *NetworkError
			require.ErrorAs(t, err, &netErr)
			assert.Equal(t, 2, netErr.Attempts)
			assert.Equal(t, 2, ss.count())
			assert.Contains(t, err.Error(), "WithRequestTimeout")
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			assert.Contains(t, err.Error(), "charged for it, up to 2 times, in 2 attempts with WithRetryMayPayAgain")
		})
	})
	t.Run("it bounds the wait for the headers, not the body", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ss := newMemStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(200)
				_, _ = io.WriteString(w, musicOK[:10])
				w.(http.Flusher).Flush()
				time.Sleep(300 * time.Millisecond) // the body's end comes after the timeout
				_, _ = io.WriteString(w, musicOK[10:])
			})
			c := ss.client(t)
			start := time.Now()
			require.NoError(t, music(context.Background(), c, WithRequestTimeout(100*time.Millisecond)))
			assert.Equal(t, 300*time.Millisecond, time.Since(start), "the body was read to its end")
			assert.Equal(t, 1, ss.count())
		})
	})
}

func TestWithMiddleware(t *testing.T) {
	for _, p := range placements {
		t.Run(p.name+": runs once per attempt, retries included", func(t *testing.T) {
			ss := newStampServer(t, replies(503, 200))
			tr := &tracer{}
			c, call := p.put(t, ss.testServer, WithMiddleware(tr.mw("a")))
			require.NoError(t, music(context.Background(), c, call...))
			assert.Equal(t, []string{"a>", "<a 503", "a>", "<a 200"}, tr.steps)
			assert.Equal(t, 2, ss.count())
		})
	}
	t.Run("the client's wrap the call's; in one list the first is outermost", func(t *testing.T) {
		ss := newStampServer(t, replies(200))
		tr := &tracer{}
		c := newTestClient(t, ss.URL, WithMiddleware(tr.mw("client1"), tr.mw("client2")))
		require.NoError(t, music(context.Background(), c, WithMiddleware(tr.mw("call1")), WithMiddleware(tr.mw("call2"))))
		assert.Equal(t, []string{"client1>", "client2>", "call1>", "call2>", "<call2 200", "<call1 200", "<client2 200", "<client1 200"}, tr.steps)

		tr.steps = nil
		require.NoError(t, music(context.Background(), c))
		assert.Equal(t, []string{"client1>", "client2>", "<client2 200", "<client1 200"}, tr.steps, "the call's are gone on the next call")
	})
	t.Run("it can read and change the request", func(t *testing.T) {
		ss := newStampServer(t, replies(503, 200))
		var seen []string
		attempt := 0
		stamp := func(req *http.Request, next MiddlewareNext) (*http.Response, error) {
			attempt++
			seen = append(seen, req.Method+" "+req.URL.Path+" "+req.Header.Get("Content-Type"))
			req.Header.Set("X-Attempt", strconv.Itoa(attempt))
			return next(req)
		}
		c := newTestClient(t, ss.URL)
		require.NoError(t, music(context.Background(), c, WithMiddleware(stamp)))
		assert.Equal(t, []string{"POST /audio/v1/text-to-music application/json", "POST /audio/v1/text-to-music application/json"}, seen)
		assert.Equal(t, "1", ss.header(1).Get("X-Attempt"))
		assert.Equal(t, "2", ss.header(2).Get("X-Attempt"))
	})
	t.Run("one that refuses to send fails the call without a retry, sending nothing", func(t *testing.T) {
		ss := newStampServer(t, replies(200))
		calls := 0
		refuse := func(*http.Request, MiddlewareNext) (*http.Response, error) {
			calls++
			return nil, errors.New("budget exhausted")
		}
		err := music(context.Background(), newTestClient(t, ss.URL), WithMiddleware(refuse))
		assert.ErrorContains(t, err, "budget exhausted")
		assert.Equal(t, 1, calls)
		assert.Equal(t, 0, ss.count())
	})
	t.Run("a nil middleware is refused", func(t *testing.T) {
		_, err := New(WithBaseURL("https://api.example.com"), WithAccessKey("k"), WithMiddleware(nil))
		assert.ErrorContains(t, err, "nil Middleware")
	})
}

func (l *countingLimiter) Wait(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waits++
	return l.refuse
}

// What the transport saw of a request decides whether it may have arrived:
// httptrace's word first, and without it, an upload's body read to its end
// (over HTTP/2 the word may come after RoundTrip returned).
func TestTheTransportTellsAWrittenRequest(t *testing.T) {
	tests := []struct {
		name     string
		wrote    int32
		bodyRead bool
		want     bool
	}{
		{"no word, body not read to its end", wroteNothing, false, false},
		{"no word, body read to its end", wroteNothing, true, true},
		{"writing failed, though the body was read (a failed flush)", wroteFailed, true, false},
		{"written whole", wroteWhole, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr transport
			tr.wrote.Store(tt.wrote)
			tr.bodyRead.Store(tt.bodyRead)
			assert.Equal(t, tt.want, tr.written())
		})
	}
	t.Run("a failure never undoes written whole", func(t *testing.T) {
		var tr transport
		tr.wroteRequest(httptrace.WroteRequestInfo{})
		tr.wroteRequest(httptrace.WroteRequestInfo{Err: io.ErrClosedPipe})
		assert.True(t, tr.written())
		tr.clear()
		assert.False(t, tr.written(), "until the next attempt starts")
	})
	t.Run("a watched body read to its end marks the attempt", func(t *testing.T) {
		var tr transport
		r := tr.watch(strings.NewReader("body"))
		_, _ = io.Copy(io.Discard, r)
		assert.True(t, tr.written())
	})
}

// Over HTTP/2, a stream reset after the service read the whole JSON body is
// an unknown outcome, never a retry. (When httptrace's word that the
// request was written comes late, headers that went out decide: that rule
// is held by TestWrittenTakesHeadersThatWentOutAsArrived, since a loopback
// server cannot make the word come late on demand.)
func TestHTTP2AResetAfterTheWholeBodyIsAnUnknownOutcome(t *testing.T) {
	var whole, arrived, h2 atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		if r.ProtoMajor == 2 {
			h2.Add(1)
		}
		if _, err := io.Copy(io.Discard, r.Body); err == nil {
			whole.Add(1)
		}
		panic(http.ErrAbortHandler) // resets the stream, with no answer
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c, err := New(WithBaseURL(srv.URL), WithAccessKey(testKey), WithHTTPClient(srv.Client()),
		WithRetryWait(time.Millisecond, time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	var resp *http.Response
	err = music(ctx, c, WithResponseInto(&resp))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrOutcomeUnknown, "%v", err)
	assert.Equal(t, int64(1), arrived.Load(), "not sent again")
	assert.Equal(t, int64(1), whole.Load())
	assert.Equal(t, int64(1), h2.Load(), "the request came over HTTP/2")
}

// What the transport saw of an attempt decides whether it may have arrived:
// with no word from httptrace yet, headers that went out count as arrived.
func TestWrittenTakesHeadersThatWentOutAsArrived(t *testing.T) {
	var tr transport
	assert.False(t, tr.written(), "nothing seen: not sent")
	tr.wroteHeaders()
	assert.True(t, tr.written(), "headers out, no word of the body: maybe arrived")
	tr.wroteRequest(httptrace.WroteRequestInfo{Err: io.ErrUnexpectedEOF})
	assert.False(t, tr.written(), "httptrace said the write failed: not sent whole")
	tr.clear()
	assert.False(t, tr.written(), "a new attempt starts with nothing seen")
	tr.wroteRequest(httptrace.WroteRequestInfo{})
	assert.True(t, tr.written())
}
