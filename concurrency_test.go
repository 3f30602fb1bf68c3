package creative

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneClientServes64GoroutinesMaking2000Calls mixes successes, retried
// failures and definitive failures, and matches every result to its own
// request.
func TestOneClientServes64GoroutinesMaking2000Calls(t *testing.T) {
	const calls, workers = 2000, 64
	var mu sync.Mutex
	seen := map[string]int{} // prompt -> attempts
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Prompt string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		seen[req.Prompt]++
		attempt := seen[req.Prompt]
		mu.Unlock()
		var n int
		_, _ = fmt.Sscanf(req.Prompt, "call-%d", &n)
		switch {
		case n%10 == 3: // a definitive failure
			replyJSON(400, `{"success":false,"message":"rejected `+req.Prompt+`"}`)(w, r)
		case n%10 == 7 && attempt == 1: // fails once, then succeeds
			replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
		default:
			replyJSON(200, `{"success":true,"message":"ok","data":"https://files.example/`+req.Prompt+`.wav"}`)(w, r)
		}
	})
	c := newTestClient(t, ts.URL)
	var next atomic.Int64
	var wg sync.WaitGroup
	var ok, rejected atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > calls {
					return
				}
				prompt := fmt.Sprintf("call-%d", n)
				u, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: prompt})
				if n%10 == 3 {
					var apiErr *APIError
					if assert.ErrorAs(t, err, &apiErr) {
						assert.Equal(t, "rejected "+prompt, apiErr.Message)
						assert.Equal(t, 1, apiErr.Attempts)
					}
					rejected.Add(1)
					continue
				}
				if assert.NoError(t, err, prompt) {
					assert.Equal(t, URL("https://files.example/"+prompt+".wav"), u)
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(1800), ok.Load())
	assert.Equal(t, int64(200), rejected.Load())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, calls)
	for prompt, attempts := range seen {
		want := 1
		if strings.HasSuffix(prompt, "7") {
			want = 2
		}
		assert.Equal(t, want, attempts, prompt)
	}
	// A cold start of 64 callers can dial somewhat more than 64; a pool of 2
	// idle connections per host would open well over a thousand.
	assert.LessOrEqual(t, ts.conns.Load(), int64(4*workers), "the pool is reused")
}

// A Retry-After that the deadline cannot cover is not slept out: the 503
// comes back at once, saying why it was not retried.
func TestARetryAfterPastTheDeadlineReturnsTheAnswerAtOnce(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Retry-After", "10")
		replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
	})
	c := newTestClient(t, ts.URL)
	late := soonAfter(func() time.Duration {
		deadline := time.Now().Add(300 * time.Millisecond)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"})
		early := time.Until(deadline)
		assert.ErrorIs(t, err, ErrServer)
		var apiErr *APIError
		if assert.ErrorAs(t, err, &apiErr) {
			assert.Equal(t, 1, apiErr.Attempts)
			assert.Equal(t, 10*time.Second, apiErr.RetryAfter)
			assert.Contains(t, apiErr.Message, "past the call's deadline")
		}
		return -early
	})
	assert.Less(t, late, 50*time.Millisecond, "returned %v after the deadline", late)
}
