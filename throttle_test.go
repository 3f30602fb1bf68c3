package creative

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

// Throttling: WithRateLimit, and the client-wide pause a 429 or 503 with
// Retry-After asks for. The server stamps every request it receives, so the
// tests assert on what reached it and when.

// stampServer is a test server that records when each request arrived.
type stampServer struct {
	*testServer
	mu       sync.Mutex
	arrivals []time.Time
}

func newStampServer(t *testing.T, h func(n int, w http.ResponseWriter, r *http.Request)) *stampServer {
	t.Helper()
	ss := &stampServer{}
	ss.testServer = newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ss.mu.Lock()
		ss.arrivals = append(ss.arrivals, time.Now())
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
	c := newTestClient(t, ss.URL, WithRateLimit(0.001, 1))
	require.True(t, c.limiter.Allow(), "the only token is spent: the next one is 1000 s away")
	c.pause.start(0, http.StatusTooManyRequests) // a pause that has just ended

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.Error(t, music(ctx, c), "the probe cannot get a token before its deadline")

	c.limiter.SetLimit(rate.Inf)
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, music(ctx, c))
	assert.Less(t, time.Since(start), time.Second, "the next call went first at once")
	assert.Len(t, ss.stamps(), 1)
}

var _ = errors.Is
