package creative

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A file host that answers a Download with 503 and a Retry-After of a day
// pauses nothing but that Download: the next call to the service goes at
// once.
func TestADownloadHostsRetryAfterNeverPausesTheService(t *testing.T) {
	files := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "86400")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	service := newStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) { replyJSON(200, musicOK)(w, r) })
	c := service.client(t)
	_, err := c.Download(context.Background(), URL(files.URL+"/a.wav"), io.Discard)
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusServiceUnavailable, ae.StatusCode)
	assert.EqualValues(t, 1, files.hits.Load(), "the Download is not retried after a day")

	require.NoError(t, music(context.Background(), c), "the service is not paused")
	assert.Equal(t, 1, service.count())
	assert.False(t, c.pause.on.Load())
}

// The first call after a pause goes alone, but a call that takes minutes
// holds the others no longer than the pause lasted.
func TestTheFirstCallAfterAPauseHoldsOthersNoLongerThanThePause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newMemStampServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			switch n {
			case 1:
				w.Header().Set("Retry-After", "2")
				replyJSON(http.StatusTooManyRequests, `{"success":false,"message":"slow down"}`)(w, r)
				return
			case 2:
				time.Sleep(time.Minute) // the first call after the pause takes a minute
			}
			replyJSON(200, musicOK)(w, r)
		})
		c := ss.client(t, WithMaxRetries(0))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		require.ErrorIs(t, music(ctx, c), ErrRateLimited, "the answer that pauses the Client")

		// Two calls wait for the pause: the first to go after it takes a
		// minute, the other goes at most 2 s after it.
		took := make(chan time.Duration, 2)
		for range 2 {
			go func() {
				assert.NoError(t, music(ctx, c))
				took <- time.Since(start)
			}()
			time.Sleep(500 * time.Millisecond)
		}
		first, second := <-took, <-took
		assert.Equal(t, 4*time.Second, first, "the pause (2 s), then at most as long again behind the first call")
		assert.Equal(t, 62*time.Second, second, "the first call after the pause, a minute long")
	})
}

// The pause belongs to the access key: one account's 429 with a
// Retry-After of 30 s, on a Client shared by many accounts (WithAccessKey
// per call), pauses that account's calls and no other's. Requests are
// counted at the server by the key they carry.
func TestOneAccountsRateLimitNeverPausesAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const keyA, keyB = "account-a-key-0123456789", "account-b-key-0123456789"
		ss := newMemStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Access-Key") == keyA {
				w.Header().Set("Retry-After", "30")
				replyJSON(http.StatusTooManyRequests, `{"success":false,"message":"slow down"}`)(w, r)
				return
			}
			replyJSON(200, musicOK)(w, r)
		})
		c := ss.client(t, WithMaxRetries(0))
		sentWith := func(key string) (n int) {
			for i := 1; i <= ss.count(); i++ {
				if ss.header(i).Get("X-Access-Key") == key {
					n++
				}
			}
			return n
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		require.ErrorIs(t, music(ctx, c, WithAccessKey(keyA)), ErrRateLimited)

		// Account B, on the same Client, at once: sent and answered.
		require.NoError(t, music(ctx, c, WithAccessKey(keyB)))
		require.NoError(t, music(ctx, c), "the Client's own key")
		assert.Zero(t, time.Since(start), "no call of another key waited")
		assert.Equal(t, 1, sentWith(keyB))
		assert.Equal(t, 1, sentWith(testKey))

		// Account A is paused: its next call, whose deadline comes before
		// the end of the pause, fails at once and sends nothing.
		err := music(ctx, c, WithAccessKey(keyA))
		require.ErrorIs(t, err, ErrRateLimited)
		assert.Equal(t, 1, sentWith(keyA), "nothing sent during A's pause")
		assert.Zero(t, time.Since(start))
	})
}

// A Client given another key for each call (one per customer) keeps a
// pause for a key only while the service asks its calls to wait: memory
// follows the pauses in force, never the keys ever used. The pause works
// as before while it lasts, and is forgotten once a call after it is
// answered.
func TestThePausesOfOtherKeysLastOnlyWhileTheyAreAskedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const paused = "account-paused-0123456789"
		var asked atomic.Bool
		ss := newMemStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Access-Key") == paused && asked.CompareAndSwap(false, true) {
				w.Header().Set("Retry-After", "2")
				replyJSON(http.StatusTooManyRequests, `{"success":false,"message":"slow down"}`)(w, r)
				return
			}
			replyJSON(200, musicOK)(w, r)
		})
		c := ss.client(t, WithMaxRetries(0))
		held := func() (n int) {
			c.pauses.Range(func(any, any) bool { n++; return true })
			return n
		}
		ctx := context.Background()
		for i := range 1000 {
			require.NoError(t, music(ctx, c, WithAccessKey(fmt.Sprintf("customer-%04d-key-0123456789", i))))
		}
		assert.Zero(t, held(), "no pause kept for keys never asked to wait")

		require.ErrorIs(t, music(ctx, c, WithAccessKey(paused)), ErrRateLimited)
		assert.Equal(t, 1, held(), "the pause asked for")
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		require.ErrorIs(t, music(short, c, WithAccessKey(paused)), ErrRateLimited, "within the pause, a call that cannot wait for it")
		assert.Equal(t, 1001, ss.count(), "nothing sent during the pause")

		start := time.Now()
		require.NoError(t, music(ctx, c, WithAccessKey(paused)), "a call that can wait")
		assert.Equal(t, 2*time.Second, time.Since(start), "it waited for the pause")
		assert.Zero(t, held(), "the pause is forgotten once over")
	})
}
