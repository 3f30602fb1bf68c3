package creative

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A plain call, which goes the direct way, waits for the pause a call with
// options of its own asked for with the Client's key; a pause of another
// key holds no plain call.
func TestAPlainCallWaitsForThePauseACallWithOptionsGot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		arrived := map[string]time.Time{}
		ts := newMemServer(t, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			arrived[r.Header.Get("X-Call")] = time.Now()
			mu.Unlock()
			if r.Header.Get("X-Slow") != "" {
				w.Header().Set("Retry-After", r.Header.Get("X-Slow"))
				replyJSON(429, `{"success":false,"message":"slow down"}`)(w, r)
				return
			}
			replyJSON(200, writerOK)(w, r)
		})
		c := ts.client(t)
		ctx := context.Background()
		start := time.Now()
		err := writerCall(ctx, c, WithHeader("X-Slow", "2"), WithHeader("X-Call", "a"), WithMaxRetries(0))
		require.ErrorIs(t, err, ErrRateLimited)
		require.NoError(t, writerCall(ctx, c))
		mu.Lock()
		plain := arrived[""]
		mu.Unlock()
		assert.Equal(t, 2*time.Second, plain.Sub(start), "the plain call went when the pause ended")

		start = time.Now()
		err = writerCall(ctx, c, WithAccessKey("other-key-123456"), WithHeader("X-Slow", "5"), WithHeader("X-Call", "b"), WithMaxRetries(0))
		require.ErrorIs(t, err, ErrRateLimited)
		require.NoError(t, writerCall(ctx, c))
		mu.Lock()
		plain = arrived[""]
		mu.Unlock()
		assert.Zero(t, plain.Sub(start), "another key's pause holds no plain call")
	})
}
