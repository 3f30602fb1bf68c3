package creative

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Refused answers (408, 429, 503) are retried; 500, 502 and 504 may have
// been paid for, so only WithRetryMayPayAgain retries them; anything else
// will not change on a retry.
func TestRetryableStatusesAreRetriedExactlyTheConfiguredNumberOfTimes(t *testing.T) {
	const (
		never = iota
		always
		onlyPayingAgain
	)
	tests := []struct {
		status int
		retry  int
	}{
		{408, always}, {429, always}, {503, always},
		{500, onlyPayingAgain}, {502, onlyPayingAgain}, {504, onlyPayingAgain},
		{400, never}, {401, never}, {403, never}, {404, never}, {409, never}, {422, never}, {501, never}, {505, never},
	}
	for _, tt := range tests {
		for _, retries := range []int{0, 1, 3} {
			for _, payAgain := range []bool{false, true} {
				name := strconv.Itoa(tt.status) + " with " + strconv.Itoa(retries) + " retries"
				if payAgain {
					name += ", WithRetryMayPayAgain"
				}
				t.Run(name, func(t *testing.T) {
					ts := newTestServer(t, replyJSON(tt.status, `{"success":false,"message":"no"}`))
					opts := []Option{WithMaxRetries(retries)}
					if payAgain {
						opts = append(opts, WithRetryMayPayAgain())
					}
					c := newTestClient(t, ts.URL, opts...)
					_, err := c.GenerateQR(context.Background(), GenerateQRRequest{URL: "https://example.com", Prompt: "p"})
					var apiErr *APIError
					require.ErrorAs(t, err, &apiErr)
					want := 1
					if tt.retry == always || (tt.retry == onlyPayingAgain && payAgain) {
						want = retries + 1
					}
					assert.Equal(t, int64(want), ts.hits.Load(), "requests sent")
					assert.Equal(t, want, apiErr.Attempts)
					assert.Equal(t, tt.status, apiErr.StatusCode)
					if want > 1 {
						assert.Contains(t, err.Error(), "after "+strconv.Itoa(want)+" attempts")
					}
					assert.Equal(t, tt.retry == onlyPayingAgain, errors.Is(err, ErrOutcomeUnknown), "ErrOutcomeUnknown")
					assert.Equal(t, tt.retry == always, errors.Is(err, ErrRefused), "ErrRefused")
					assert.NotErrorIs(t, err, ErrNotSent)
				})
			}
		}
	}
}

func TestASuccessAfterFailuresReturnsTheResult(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.handler = func(w http.ResponseWriter, r *http.Request) {
		if ts.hits.Load() < 3 {
			replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
			return
		}
		replyJSON(200, `{"success":true,"message":"ok","data":"http://127.0.0.1/a.wav"}`)(w, r)
	}
	c := newTestClient(t, ts.URL)
	u, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
	require.NoError(t, err)
	assert.Equal(t, URL("http://127.0.0.1/a.wav"), u)
	assert.Equal(t, int64(3), ts.hits.Load(), "the default is two retries")
}

func TestConnectionFailuresAreRetried(t *testing.T) {
	c := newTestClient(t, "http://"+refusedAddr(t), WithMaxRetries(2))
	_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
	var netErr *NetworkError
	require.ErrorAs(t, err, &netErr)
	assert.Equal(t, 3, netErr.Attempts)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.ErrorIs(t, err, ErrNotSent)
	assert.NotErrorIs(t, err, ErrOutcomeUnknown)
	assert.Contains(t, err.Error(), "3 attempts")
}

// The retry policy as a table: what an attempt saw, its kind, and whether it
// is retried by default and with WithRetryMayPayAgain.
func TestRetryPolicyTable(t *testing.T) {
	onNet := func(err error) error { return &attemptError{err: err} }
	reset := onNet(&net.OpError{Op: "read", Err: syscall.ECONNRESET})
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		seen       attemptSeen
		kind       attemptKind
		retry      bool // by default
		retryAgain bool // with WithRetryMayPayAgain
	}{
		{"a refused dial", attemptSeen{err: onNet(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED})}, attemptNotSent, true, true},
		{"a reset before the request was written whole", attemptSeen{err: reset}, attemptNotSent, true, true},
		{"a reset after the request was written whole", attemptSeen{err: reset, written: true}, attemptUnknown, false, true},
		{"an EOF after the request was written whole", attemptSeen{err: onNet(io.EOF), written: true}, attemptUnknown, false, true},
		{"WithRequestTimeout before the request was written", attemptSeen{err: &attemptError{err: errors.New("no answer"), timedOut: true}}, attemptNotSent, true, true},
		{"WithRequestTimeout after the request was written", attemptSeen{err: &attemptError{err: errors.New("no answer"), timedOut: true}, written: true}, attemptUnknown, false, true},
		{"a reset of a Download after it was written (free to repeat)", attemptSeen{err: reset, written: true, free: true}, attemptUnknown, true, true},
		{"a cancelled context", attemptSeen{err: onNet(context.Canceled), ctxDone: true}, attemptNotSent, false, false},
		{"a deadline during the generation", attemptSeen{err: onNet(context.DeadlineExceeded), written: true, ctxDone: true}, attemptUnknown, false, false},
		{"a success after the context ended (the work is done)", attemptSeen{status: 200, ctxDone: true}, attemptUnknown, false, false},
		{"a 400 after the context ended", attemptSeen{status: 400, ctxDone: true}, attemptAnswered, false, false},
		{"a TLS handshake with a plain HTTP server", attemptSeen{err: onNet(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"})}, attemptNotSent, false, false},
		{"a certificate from an unknown authority", attemptSeen{err: onNet(&tls.CertificateVerificationError{})}, attemptNotSent, false, false},
		{"a local read of an upload", attemptSeen{err: onNet(&sourceError{err: errors.New("disk")})}, attemptNotSent, false, false},
		{"a refused redirect (not from the network)", attemptSeen{err: &url.Error{Op: "Post", Err: &redirectError{status: 302}}, written: true}, attemptAnswered, false, false},
		{"an unparsable Location (not from the network)", attemptSeen{err: &url.Error{Op: "Post", Err: errors.New(`failed to parse Location header "%zz"`)}}, attemptNotSent, false, false},
		{"a replay of a one-shot upload", attemptSeen{err: &replayError{}}, attemptNotSent, false, false},
		{"the Client's pause past the deadline", attemptSeen{err: &pausedError{status: 429}}, attemptNotSent, false, false},
		{"408", attemptSeen{status: 408}, attemptRefused, true, true},
		{"429", attemptSeen{status: 429}, attemptRefused, true, true},
		{"503", attemptSeen{status: 503}, attemptRefused, true, true},
		{"429 asking for 2 s", attemptSeen{status: 429, asked: true, retryAfter: 2 * time.Second}, attemptRefused, true, true},
		{"429 asking for more than MaxRetryAfter", attemptSeen{status: 429, asked: true, retryAfter: 2 * MaxRetryAfter}, attemptRefused, false, false},
		{"503 asking past the deadline", attemptSeen{status: 503, asked: true, retryAfter: 10 * time.Second, deadline: now.Add(time.Second)}, attemptRefused, false, false},
		{"503 after a one-shot upload went out", attemptSeen{status: 503, bodySent: true}, attemptRefused, false, false},
		{"500", attemptSeen{status: 500}, attemptUnknown, false, true},
		{"502", attemptSeen{status: 502}, attemptUnknown, false, true},
		{"504", attemptSeen{status: 504}, attemptUnknown, false, true},
		{"500 after a one-shot upload went out", attemptSeen{status: 500, bodySent: true}, attemptUnknown, false, false},
		{"200", attemptSeen{status: 200}, attemptAnswered, false, false},
		{"301", attemptSeen{status: 301}, attemptAnswered, false, false},
		{"400", attemptSeen{status: 400}, attemptAnswered, false, false},
		{"401", attemptSeen{status: 401}, attemptAnswered, false, false},
		{"404", attemptSeen{status: 404}, attemptAnswered, false, false},
		{"501", attemptSeen{status: 501}, attemptAnswered, false, false},
		{"505", attemptSeen{status: 505}, attemptAnswered, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := policy(tt.seen, now)
			assert.Equal(t, tt.kind, v.kind, "kind")
			assert.Equal(t, tt.retry, v.retry, "retried by default")
			tt.seen.payAgain = true
			v = policy(tt.seen, now)
			assert.Equal(t, tt.kind, v.kind, "kind with WithRetryMayPayAgain")
			assert.Equal(t, tt.retryAgain, v.retry, "retried with WithRetryMayPayAgain")
		})
	}
}

func TestRetryAfterIsReadInSecondsOrAsADateOn429And503Only(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	mk := func(code int, v string) *http.Response {
		h := http.Header{}
		h.Set("Retry-After", v)
		return &http.Response{StatusCode: code, Header: h}
	}
	tests := []struct {
		name string
		resp *http.Response
		want time.Duration
		ok   bool
	}{
		{"seconds on a 429", mk(429, "7"), 7 * time.Second, true},
		{"seconds on a 503", mk(503, "0"), 0, true},
		{"a date on a 503", mk(503, now.Add(90*time.Second).Format(http.TimeFormat)), 90 * time.Second, true},
		{"a past date means now", mk(429, now.Add(-time.Minute).Format(http.TimeFormat)), 0, true},
		{"ignored on a 500", mk(500, "7"), 0, false},
		{"garbage is ignored", mk(429, "soon"), 0, false},
		{"a negative number is ignored", mk(429, "-3"), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := retryAfter(tt.resp, now)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBackoffIsFullJitterWithinTheExponentialCeiling(t *testing.T) {
	cl := &call{c: &Client{}, s: &settings{}}
	min, max := 100*time.Millisecond, 800*time.Millisecond
	for attempt, ceil := range []time.Duration{100, 200, 400, 800, 800, 800} {
		ceil *= time.Millisecond
		var top time.Duration
		for i := 0; i < 300; i++ {
			d := cl.backoff(min, max, attempt, nil)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, ceil, "attempt %d", attempt)
			top = maxDur(top, d)
		}
		assert.Greater(t, top, ceil/2, "attempt %d: waits spread over the range", attempt)
	}
	cl.retryAfter = 3 * time.Second
	assert.Equal(t, 3*time.Second, cl.backoff(min, max, 0, nil), "a Retry-After is waited as asked")
	for i := 0; i < 100; i++ {
		d := (&call{c: &Client{}, s: &settings{}}).backoff(min, max, 62, nil)
		require.True(t, d >= 0 && d <= max, "a late attempt neither overflows nor passes max: %v", d)
	}
}

func maxDur(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

func TestRetryAfterIsHonouredOnTheWire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newMemStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				replyJSON(429, `{"success":false,"message":"slow down"}`)(w, r)
				return
			}
			replyJSON(200, musicOK)(w, r)
		})
		c := ss.client(t)
		start := time.Now()
		_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
		require.NoError(t, err)
		stamps := ss.stamps()
		require.Len(t, stamps, 2)
		assert.Equal(t, time.Second, stamps[1].Sub(stamps[0]), "the retry went the second it was asked to wait after the 429")
		assert.Equal(t, time.Second, time.Since(start), "and no backoff of the client's own was added")
	})
}

func TestARetryAfterAboveTheCapEndsTheRetriesAndSaysTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newMemStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3600")
			replyJSON(503, `{"success":false,"message":"maintenance"}`)(w, r)
		})
		c := ss.client(t)
		start := time.Now()
		_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
		assert.Zero(t, time.Since(start), "returned at once")
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, 1, ss.count())
		assert.Equal(t, time.Hour, apiErr.RetryAfter)
		assert.Contains(t, apiErr.Message, "asked to wait 1h0m0s")
		assert.ErrorIs(t, err, ErrServer)
	})
}

func TestCancellingDuringABackoffReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newMemStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "10")
			replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
		})
		c := ss.client(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"})
			done <- err
		}()
		synctest.Wait()
		require.Equal(t, 1, ss.count(), "the call is in its 10 s backoff")
		start := time.Now()
		cancel()
		synctest.Wait()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled)
			var netErr *NetworkError
			assert.ErrorAs(t, err, &netErr)
		default:
			t.Fatal("the call did not return at once after its context was cancelled")
		}
		assert.Zero(t, time.Since(start), "no time passed")
		assert.Equal(t, 1, ss.count(), "no attempt after the cancel")
	})
}

func TestACancelledContextSendsNothing(t *testing.T) {
	ts := newTestServer(t, replyJSON(200, `{}`))
	c := newTestClient(t, ts.URL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"})
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, ErrNotSent)
	assert.Equal(t, int64(0), ts.hits.Load())
}

func TestWithTimeoutBoundsTheWholeCallRetriesIncluded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newMemStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
				return
			}
			<-r.Context().Done() // the retry stalls
		})
		c := ss.client(t, WithTimeout(300*time.Millisecond), WithRetryWait(time.Millisecond, time.Millisecond))
		start := time.Now()
		_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 300*time.Millisecond, time.Since(start), "the stalled retry was cut short by the 300 ms timeout")
		assert.Equal(t, 2, ss.count(), "the 503 and the stalled retry")
	})
}

// A Retry-After that the deadline cannot cover is not slept out: the 503
// comes back at once, saying why it was not retried.
func TestARetryAfterPastTheDeadlineReturnsTheAnswerAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newMemStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "10")
			replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
		})
		c := ss.client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"})
		assert.Zero(t, time.Since(start), "returned at once, not at the deadline")
		assert.ErrorIs(t, err, ErrServer)
		var apiErr *APIError
		if assert.ErrorAs(t, err, &apiErr) {
			assert.Equal(t, 1, apiErr.Attempts)
			assert.Equal(t, 10*time.Second, apiErr.RetryAfter)
			assert.Contains(t, apiErr.Message, "past the call's deadline")
		}
		assert.Equal(t, 1, ss.count())
	})
}

func TestWithMaxRetries(t *testing.T) {
	for _, p := range placements {
		for _, retries := range []int{0, 3} {
			t.Run(fmt.Sprintf("%s, %d retries", p.name, retries), func(t *testing.T) {
				ss := newStampServer(t, replies(503))
				c, call := p.put(t, ss.testServer, WithMaxRetries(retries))
				err := music(context.Background(), c, call...)
				assert.ErrorIs(t, err, ErrServer)
				assert.Equal(t, retries+1, ss.count(), "requests sent")
			})
		}
	}
	t.Run("a call's overrides the client's for that call only", func(t *testing.T) {
		ss := newStampServer(t, replies(503))
		c := newTestClient(t, ss.URL, WithMaxRetries(0))
		_ = music(context.Background(), c, WithMaxRetries(2))
		assert.Equal(t, 3, ss.count())
		_ = music(context.Background(), c)
		assert.Equal(t, 4, ss.count(), "the next call has the client's 0 retries again")
	})
}

func TestWithRetryWait(t *testing.T) {
	// Backoff is full jitter: each wait is drawn from [0, ceiling]. On the
	// bubble's clock a wait is exactly what the client chose, so the bound
	// is exact; and all four waits at most the 2 ms of the test client's own
	// ceiling has odds of about 1 in 30 million.
	const ceiling = 150 * time.Millisecond
	for _, p := range placements {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ss := newMemStampServer(t, replies(503, 503, 503, 503, 200))
				c, call := p.put(t, ss.testServer, WithRetryWait(ceiling, ceiling), WithMaxRetries(4))
				require.NoError(t, music(context.Background(), c, call...))
				stamps := ss.stamps()
				require.Len(t, stamps, 5)
				longest := time.Duration(0)
				for i := 1; i < len(stamps); i++ {
					wait := stamps[i].Sub(stamps[i-1])
					assert.LessOrEqual(t, wait, ceiling, "wait %d", i)
					longest = max(longest, wait)
				}
				assert.Greater(t, longest, 2*time.Millisecond, "the waits are the option's, not the client's 1-2 ms")
			})
		})
	}
	t.Run("a call's short waits override the client's long ones", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ss := newMemStampServer(t, replies(503, 503, 200))
			c := ss.client(t, WithRetryWait(time.Minute, time.Minute))
			start := time.Now()
			require.NoError(t, music(context.Background(), c, WithRetryWait(time.Millisecond, time.Millisecond)))
			assert.LessOrEqual(t, time.Since(start), 2*time.Millisecond, "two waits of at most a millisecond")
			assert.Equal(t, 3, ss.count())
		})
	})
}
