package creative

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
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

// The Client-wide pause a 429 or 503 with Retry-After asks for (pause.go).
// The server stamps every request it receives, so the tests assert on what
// reached it and when. Each test runs in a synctest bubble, its server in
// memory: the waits are the bubble's, so a second asked for is exactly a
// second of the bubble's clock, and "at once" is no time at all.

// A probe that is itself asked to wait again must not leave the client
// paused for good: the next attempt goes once the new wait is over.
func TestARepeatedRetryAfterDoesNotStallTheClient(t *testing.T) {
	for _, status := range []int{429, 503} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ss := newMemStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
					if n <= 2 {
						w.Header().Set("Retry-After", "0")
						replyJSON(status, `{"success":false,"message":"slow down"}`)(w, r)
						return
					}
					replyJSON(200, musicOK)(w, r)
				})
				c := ss.client(t)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				start := time.Now()
				require.NoError(t, music(ctx, c), "two waits of 0 s are within the default two retries")
				assert.Len(t, ss.stamps(), 3)
				assert.LessOrEqual(t, time.Since(start), 3*time.Millisecond, "no wait but the test client's backoffs (1 and 2 ms at most)")
				require.NoError(t, music(ctx, c), "the client is not paused afterwards")
				assert.Len(t, ss.stamps(), 4)
			})
		})
	}
}

// An attempt that went first after a pause but then gave up waiting for the
// rate limiter hands the first place to the next attempt.
func TestAProbeThatGivesUpOnTheLimiterLetsTheNextOneGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newMemStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) { replyJSON(200, musicOK)(w, r) })
		lim := rate.NewLimiter(0.001, 1)
		c := ss.client(t, WithRateLimiter(lim))
		require.True(t, lim.Allow(), "the only token is spent: the next one is 1000 s away")
		c.pause.report(&http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"0"}}}, nil, nil, "") // a pause that has just ended

		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		require.Error(t, music(ctx, c), "the probe cannot get a token before its deadline")

		lim.SetLimit(rate.Inf)
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		require.NoError(t, music(ctx, c))
		assert.Zero(t, time.Since(start), "the next call went first at once")
		assert.Len(t, ss.stamps(), 1)
	})
}

var untilRE = regexp.MustCompile(`wait until (\S+),`)

func TestA429WithRetryAfterPausesTheWholeClientAndOneProbeGoesFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const crowd = 100
		var probeAnswered atomic.Pointer[time.Time]
		ss := newMemStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			switch n {
			case 1:
				w.Header().Set("Retry-After", "1")
				replyJSON(429, `{"success":false,"message":"slow down"}`)(w, r)
			case 2:
				// The first request after the pause; the others must wait
				// for its answer, however long it takes.
				time.Sleep(100 * time.Millisecond)
				now := time.Now()
				probeAnswered.Store(&now)
				replyJSON(200, musicOK)(w, r)
			default:
				replyJSON(200, musicOK)(w, r)
			}
		})
		c := ss.client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()

		// The first call gets the 429 and backs off for the second it
		// asks; once it is blocked there, the client is paused.
		first := make(chan error, 1)
		go func() { first <- music(ctx, c) }()
		synctest.Wait()
		require.Equal(t, 1, ss.count(), "the first call is in its backoff")

		// A call whose deadline ends before the pause returns at once,
		// sending nothing.
		short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
		start := time.Now()
		err := music(short, c)
		cancelShort()
		assert.Zero(t, time.Since(start), "returned at once, not at its deadline")
		assert.ErrorIs(t, err, ErrRateLimited)
		assert.NotErrorIs(t, err, ErrServer)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, 429, apiErr.StatusCode)
		assert.Equal(t, 0, apiErr.Attempts, "nothing was sent")
		assert.Equal(t, time.Second, apiErr.RetryAfter, "the whole pause is still to come")
		assert.Contains(t, err.Error(), "nothing sent")
		m := untilRE.FindStringSubmatch(err.Error())
		require.Len(t, m, 2, "the message says until when: %v", err)
		until, perr := time.Parse(time.RFC3339, m[1])
		require.NoError(t, perr)
		assert.Equal(t, time.Second, until.Sub(ss.stamps()[0]), "the pause ends a second after the 429")

		var wg sync.WaitGroup
		for range crowd {
			wg.Go(func() { assert.NoError(t, music(ctx, c)) })
		}
		wg.Wait()
		require.NoError(t, <-first)

		stamps := ss.stamps()
		require.Len(t, stamps, crowd+2, "the 429, the first call's retry and one request per call of the crowd")
		assert.Equal(t, time.Second, stamps[1].Sub(stamps[0]), "one request went first, when the pause ended")
		answered := probeAnswered.Load()
		require.NotNil(t, answered)
		for i, s := range stamps[2:] {
			assert.Equal(t, answered.Sub(stamps[0]), s.Sub(stamps[0]), "request %d went when the probe was answered, not before", i+3)
		}
	})
}

// A 429 asking for 120 s: the call that got it returns at once, the Client
// stays paused for the whole 120 s (not MaxRetryAfter), and a call of
// another operation, with no deadline, returns at once too, sending
// nothing, saying until when. Both are logged at Info.
func TestA429AskingForMoreThanMaxRetryAfterPausesTheClientForAllOfIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newMemStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "120")
			replyJSON(429, `{"success":false,"message":"slow down"}`)(w, r)
		})
		logs := &logCapture{}
		c := ss.client(t, WithLogger(slog.New(logs)))

		start := time.Now()
		err := music(context.Background(), c)
		assert.Zero(t, time.Since(start), "returned at once")
		assert.ErrorIs(t, err, ErrRateLimited)
		assert.ErrorIs(t, err, ErrRefused)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, 1, apiErr.Attempts)
		assert.Equal(t, 120*time.Second, apiErr.RetryAfter)
		assert.Contains(t, err.Error(), "asked to wait 2m0s before retrying, more than the 1m0s the client waits")

		start = time.Now()
		_, err = c.GenerateQR(context.Background(), GenerateQRRequest{URL: "https://example.com", Prompt: "p"})
		assert.Zero(t, time.Since(start), "returned at once")
		assert.ErrorIs(t, err, ErrRateLimited)
		assert.ErrorIs(t, err, ErrNotSent)
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, 0, apiErr.Attempts, "nothing was sent")
		m := untilRE.FindStringSubmatch(err.Error())
		require.Len(t, m, 2, "the message says until when: %v", err)
		until, perr := time.Parse(time.RFC3339, m[1])
		require.NoError(t, perr)
		assert.Equal(t, 120*time.Second, until.Sub(ss.stamps()[0]), "the pause lasts what the service asked")
		assert.Equal(t, 1, ss.count())

		var pausing map[string]any
		for i, line := range logs.lines {
			if strings.HasPrefix(line, "creative: pausing every call") {
				pausing = logs.attrs[i]
				assert.Equal(t, slog.LevelInfo, logs.level[i])
			}
		}
		require.NotNil(t, pausing, "the start of the pause is logged: %s", logs.all())
		assert.Equal(t, "audio/text-to-music", pausing["operation"])
		assert.Equal(t, 120*time.Second, pausing["until"].(time.Time).Sub(ss.stamps()[0]), "the log says the same end")
	})
}

// A call that begins to wait on the pause says so at Info, with its
// operation and until when.
func TestACallWaitingOnThePauseIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newMemStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
				return
			}
			replyJSON(200, `{"success":true,"message":"ok","data":{"base64":"`+pngB64+`"}}`)(w, r)
		})
		c := ss.client(t, WithMaxRetries(0))
		require.ErrorIs(t, music(context.Background(), c), ErrRefused)

		logs := &logCapture{}
		_, err := c.GenerateQR(context.Background(), GenerateQRRequest{URL: "https://example.com", Prompt: "p"}, WithLogger(slog.New(logs)))
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(logs.lines), 1)
		assert.True(t, strings.HasPrefix(logs.lines[0], "creative: waiting for the pause"), logs.all())
		assert.Equal(t, slog.LevelInfo, logs.level[0])
		assert.Equal(t, "image/generate-qr", logs.attrs[0]["operation"])
		stamps := ss.stamps()
		assert.Equal(t, time.Second, logs.attrs[0]["until"].(time.Time).Sub(stamps[0]), "until the second the 503 asked for")
		assert.Equal(t, time.Second, stamps[1].Sub(stamps[0]), "it waited until then")
	})
}
