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
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

// The Client-wide pause a 429 or 503 with Retry-After asks for (pause.go).
// The server stamps every request it receives, so the tests assert on what
// reached it and when.

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
	c.pause.report(&http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"0"}}}, nil, nil, "") // a pause that has just ended

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

// onMessage is a slog handler that closes a channel the first time a record
// with the message msg is handled.
type onMessage struct {
	msg  string
	once sync.Once
	seen chan struct{}
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

func (h *onMessage) Enabled(context.Context, slog.Level) bool { return true }

func (h *onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h *onMessage) WithGroup(string) slog.Handler { return h }

func (h *onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}

// A 429 asking for 120 s: the call that got it returns at once, the Client
// stays paused for the whole 120 s (not MaxRetryAfter), and a call of
// another operation, with no deadline, returns at once too, sending
// nothing, saying until when. Both are logged at Info.
func TestA429AskingForMoreThanMaxRetryAfterPausesTheClientForAllOfIt(t *testing.T) {
	ss := newStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		replyJSON(429, `{"success":false,"message":"slow down"}`)(w, r)
	})
	logs := &logCapture{}
	c := newTestClient(t, ss.URL, WithLogger(slog.New(logs)))

	start := time.Now()
	err := music(context.Background(), c)
	assert.Less(t, time.Since(start), time.Second, "returned at once")
	assert.ErrorIs(t, err, ErrRateLimited)
	assert.ErrorIs(t, err, ErrRefused)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 1, apiErr.Attempts)
	assert.Equal(t, 120*time.Second, apiErr.RetryAfter)
	assert.Contains(t, err.Error(), "asked to wait 2m0s before retrying, more than the 1m0s the client waits")

	start = time.Now()
	_, err = c.GenerateQR(context.Background(), GenerateQRRequest{URL: "https://example.com", Prompt: "p"})
	assert.Less(t, time.Since(start), time.Second, "returned at once")
	assert.ErrorIs(t, err, ErrRateLimited)
	assert.ErrorIs(t, err, ErrNotSent)
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 0, apiErr.Attempts, "nothing was sent")
	m := untilRE.FindStringSubmatch(err.Error())
	require.Len(t, m, 2, "the message says until when: %v", err)
	until, perr := time.Parse(time.RFC3339, m[1])
	require.NoError(t, perr)
	assert.WithinDuration(t, ss.stamps()[0].Add(120*time.Second), until, 2*time.Second, "the pause lasts what the service asked")
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
	assert.WithinDuration(t, until, pausing["until"].(time.Time), time.Millisecond)
}

// A call that begins to wait on the pause says so at Info, with its
// operation and until when.
func TestACallWaitingOnThePauseIsLogged(t *testing.T) {
	ss := newStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
			return
		}
		replyJSON(200, `{"success":true,"message":"ok","data":{"base64":"`+pngB64+`"}}`)(w, r)
	})
	c := newTestClient(t, ss.URL, WithMaxRetries(0))
	require.ErrorIs(t, music(context.Background(), c), ErrRefused)

	logs := &logCapture{}
	_, err := c.GenerateQR(context.Background(), GenerateQRRequest{URL: "https://example.com", Prompt: "p"}, WithLogger(slog.New(logs)))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(logs.lines), 1)
	assert.True(t, strings.HasPrefix(logs.lines[0], "creative: waiting for the pause"), logs.all())
	assert.Equal(t, slog.LevelInfo, logs.level[0])
	assert.Equal(t, "image/generate-qr", logs.attrs[0]["operation"])
	assert.WithinDuration(t, ss.stamps()[0].Add(time.Second), logs.attrs[0]["until"].(time.Time), 500*time.Millisecond)
	assert.False(t, ss.stamps()[1].Before(ss.stamps()[0].Add(time.Second)), "it waited until then")
}
