package creative

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheCallersHTTPTraceStillRuns(t *testing.T) {
	ts := newTestServer(t, replyJSON(500, `{"success":false,"message":"boom"}`))
	c := ts.client(t)
	var got, wrote atomic.Int32
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn:      func(httptrace.GotConnInfo) { got.Add(1) },
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Add(1) },
	})
	_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"})
	require.ErrorIs(t, err, ErrOutcomeUnknown, "the client's own hooks ran too: the request was written whole")
	require.EqualValues(t, 1, got.Load())
	require.EqualValues(t, 1, wrote.Load())
	require.EqualValues(t, 1, ts.hits.Load())
}

func TestAMiddlewaresContextKeepsTheCall(t *testing.T) {
	type k struct{}
	n := 0
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"success":true,"data":"https://f.example/a.wav"}`))
	})
	mw := func(req *http.Request, next MiddlewareNext) (*http.Response, error) {
		return next(req.WithContext(context.WithValue(req.Context(), k{}, 1)))
	}
	c := ts.client(t, WithMiddleware(mw))
	_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
	require.NoError(t, err)
	require.EqualValues(t, 2, ts.hits.Load())
}

// A middleware or an AttemptStart hook that gives the attempt a context not
// derived from the call's must not make a request the service read whole
// pass for one not sent: it is not sent again, and its outcome is unknown.
func TestAContextNotTheCallsStillTellsWhatWasSent(t *testing.T) {
	var kept atomic.Pointer[context.Context]
	keep := func(req *http.Request, next MiddlewareNext) (*http.Response, error) {
		ctx := req.Context()
		kept.Store(&ctx)
		return next(req)
	}
	replace := func(ctx func(req *http.Request) context.Context) Option {
		return WithMiddleware(func(req *http.Request, next MiddlewareNext) (*http.Response, error) {
			return next(req.WithContext(ctx(req)))
		})
	}
	var ownWrote atomic.Int32
	own := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { ownWrote.Add(1) },
	})
	for _, tc := range []struct {
		name string
		opt  Option
	}{
		{"a middleware's context.Background()", replace(func(*http.Request) context.Context { return context.Background() })},
		{"a middleware's context with its own httptrace hooks", replace(func(*http.Request) context.Context { return own })},
		{"a middleware's context kept from an earlier call", replace(func(*http.Request) context.Context { return *kept.Load() })},
		{"an AttemptStart's context.Background()", WithCallTrace(&CallTrace{
			AttemptStart: func(context.Context, AttemptInfo) context.Context { return context.Background() },
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var whole atomic.Int32
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/earlier" {
					_, _ = w.Write([]byte(`{}`))
					return
				}
				_, _ = io.Copy(io.Discard, r.Body)
				whole.Add(1)
				hangUp(w, true)
			})
			require.NoError(t, ts.client(t, WithMiddleware(keep)).Post(context.Background(), "earlier", nil, nil))
			ownWrote.Store(0)
			c := ts.client(t, tc.opt)
			_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
			require.ErrorIs(t, err, ErrOutcomeUnknown)
			require.EqualValues(t, 1, whole.Load(), "the request arrived whole once and was not sent again")
			if strings.Contains(tc.name, "httptrace") {
				require.EqualValues(t, 1, ownWrote.Load(), "the middleware's own hooks ran too")
			}
		})
	}
}

// A call made inside another call's middleware, with the request's context,
// is its own: its request, written whole, says nothing of the outer call's,
// which the middleware then refused to send. The caller's own hooks see
// both.
func TestACallInsideAnothersMiddlewareIsItsOwn(t *testing.T) {
	inner := newTestServer(t, replyJSON(200, `{}`))
	b := inner.client(t)
	outer := newTestServer(t, replyJSON(200, `{}`))
	a := outer.client(t, WithMiddleware(func(req *http.Request, next MiddlewareNext) (*http.Response, error) {
		if err := b.Post(req.Context(), "inner", map[string]int{"n": 1}, nil); err != nil {
			return nil, err
		}
		return nil, errors.New("refused by the middleware")
	}))
	var wrote atomic.Int32
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Add(1) },
	})
	err := a.Post(ctx, "outer", map[string]int{"n": 2}, nil)
	require.ErrorIs(t, err, ErrNotSent)
	require.NotErrorIs(t, err, ErrOutcomeUnknown)
	require.EqualValues(t, 1, inner.hits.Load())
	require.EqualValues(t, 0, outer.hits.Load())
	require.EqualValues(t, 1, wrote.Load(), "the caller's hooks saw the inner request")
}

// A caller's httptrace hook for header fields is given the access key's
// header redacted, on every road a request takes: net/http hands the hook
// every header it writes, and tracers record them.
func TestACallersHeaderFieldHookNeverSeesTheKey(t *testing.T) {
	const ok = `{"success":true,"message":"ok","data":"https://files.example.com/a.wav"}`
	for _, row := range []struct {
		name string
		opts []Option
		call func(c *Client, ctx context.Context) error
	}{
		{"a plain call", nil, func(c *Client, ctx context.Context) error {
			_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "calm piano"})
			return err
		}},
		{"through a middleware", []Option{WithMiddleware(func(r *http.Request, next MiddlewareNext) (*http.Response, error) { return next(r) })}, func(c *Client, ctx context.Context) error {
			_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "calm piano"})
			return err
		}},
		{"a raw call", nil, func(c *Client, ctx context.Context) error {
			var out map[string]any
			return c.Execute(ctx, http.MethodPost, "/audio/v1/text-to-music", map[string]any{"prompt": "calm piano"}, &out)
		}},
	} {
		t.Run(row.name, func(t *testing.T) {
			var first atomic.Bool
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				if !first.Swap(true) { // a redirect first: its hop writes the header again
					_, _ = io.Copy(io.Discard, r.Body)
					http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
					return
				}
				replyJSON(200, ok)(w, r)
			})
			c := ts.client(t, row.opts...)
			var mu sync.Mutex
			var keys []string
			fields := 0
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{WroteHeaderField: func(name string, value []string) {
				mu.Lock()
				defer mu.Unlock()
				fields++
				if strings.EqualFold(name, headerAccessKey) {
					keys = append(keys, strings.Join(value, ","))
				}
			}})
			require.NoError(t, row.call(c, ctx))
			assert.Equal(t, int64(2), ts.hits.Load())
			assert.Equal(t, []string{redacted, redacted}, keys, "the hook saw the key's header of both requests, redacted")
			assert.Greater(t, fields, 4, "and the other fields as they are")
		})
	}
}
