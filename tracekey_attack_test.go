package creative

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// otherKey is a second key, given to a call or another Client.
const otherKey = "ok-51c0d2e8-OTHERLEAK-99ab"

// fieldLog records every header field net/http hands a WroteHeaderField
// hook, as a tracer that exports them would.
type fieldLog struct {
	mu     sync.Mutex
	fields [][2]string // name, values joined by "|"
	n      [][]string
}

func (l *fieldLog) hook(name string, values []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fields = append(l.fields, [2]string{name, strings.Join(values, "|")})
	l.n = append(l.n, append([]string(nil), values...))
}

func (l *fieldLog) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{WroteHeaderField: l.hook}
}

// named returns the values of the fields named name, in any case.
func (l *fieldLog) named(name string) [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]string
	for i, f := range l.fields {
		if strings.EqualFold(f[0], name) {
			out = append(out, l.n[i])
		}
	}
	return out
}

// requireKeyless checks that the hook saw the key's header want times,
// each time as "[redacted]", and no key anywhere.
func (l *fieldLog) requireKeyless(t *testing.T, want int, what string) {
	t.Helper()
	l.mu.Lock()
	for _, f := range l.fields {
		for _, k := range []string{testKey, otherKey} {
			require.NotContains(t, f[0]+": "+f[1], k, "%s: the hook was handed a key", what)
		}
	}
	l.mu.Unlock()
	got := l.named(headerAccessKey)
	require.Len(t, got, want, "%s: the key's header, once a request", what)
	for _, v := range got {
		require.Equal(t, []string{redacted}, v, what)
	}
}

// traced is a context holding the hooks of l.
func traced(l *fieldLog) context.Context {
	return httptrace.WithClientTrace(context.Background(), l.trace())
}

// The caller's hooks are handed the key's header redacted on every road a
// request takes through a Client, and the other headers as they were.
func TestAttackHeaderFieldHookRoads(t *testing.T) {
	ok := replyJSON(200, musicOK)
	for _, tc := range []struct {
		name string
		opts []Option
		call func(ctx context.Context, c *Client) error
	}{
		{"a plain call", nil, func(ctx context.Context, c *Client) error { return music(ctx, c) }},
		{"a middleware", []Option{WithMiddleware(func(req *http.Request, next MiddlewareNext) (*http.Response, error) {
			return next(req)
		})}, func(ctx context.Context, c *Client) error { return music(ctx, c) }},
		{"a call's own key", nil, func(ctx context.Context, c *Client) error { return music(ctx, c, WithAccessKey(otherKey)) }},
		{"Execute", nil, func(ctx context.Context, c *Client) error {
			return c.Execute(ctx, http.MethodPost, "/raw/v1/thing", map[string]int{"n": 1}, nil)
		}},
		{"Execute with a call's own key", nil, func(ctx context.Context, c *Client) error {
			return c.Execute(ctx, http.MethodPost, "/raw/v1/thing", map[string]int{"n": 1}, nil, WithAccessKey(otherKey))
		}},
		{"a CallTrace whose CallStart adds nothing", []Option{WithCallTrace(&CallTrace{
			CallStart: func(ctx context.Context, _ CallInfo) context.Context { return ctx },
		})}, func(ctx context.Context, c *Client) error { return music(ctx, c) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, ok)
			c := ts.client(t, append([]Option{WithHeader("X-Trace-Tag", "tag-1")}, tc.opts...)...)
			var l fieldLog
			require.NoError(t, tc.call(traced(&l), c))
			require.EqualValues(t, 1, ts.hits.Load())
			l.requireKeyless(t, 1, tc.name)
			require.Equal(t, [][]string{{"tag-1"}}, l.named("X-Trace-Tag"), "the caller's own header reaches the hook unchanged, once")
		})
	}
}

// Hooks a middleware or an AttemptStart adds to the attempt's context,
// derived from the request's or from context.Background(), are hooks of
// the caller's too.
func TestAttackHeaderFieldHookAddedDuringTheCall(t *testing.T) {
	var l fieldLog
	derived := func(ctx context.Context) context.Context { return httptrace.WithClientTrace(ctx, l.trace()) }
	mw := func(ctx func(*http.Request) context.Context) Option {
		return WithMiddleware(func(req *http.Request, next MiddlewareNext) (*http.Response, error) {
			return next(req.WithContext(ctx(req)))
		})
	}
	for _, tc := range []struct {
		name string
		opt  Option
	}{
		{"a middleware's context from context.Background()", mw(func(*http.Request) context.Context { return derived(context.Background()) })},
		{"a middleware's context derived from the request's", mw(func(r *http.Request) context.Context { return derived(r.Context()) })},
		{"a CallStart's context", WithCallTrace(&CallTrace{
			CallStart: func(ctx context.Context, _ CallInfo) context.Context { return derived(ctx) },
		})},
		{"an AttemptStart's context", WithCallTrace(&CallTrace{
			AttemptStart: func(ctx context.Context, _ AttemptInfo) context.Context { return derived(ctx) },
		})},
		{"an AttemptStart's context from context.Background()", WithCallTrace(&CallTrace{
			AttemptStart: func(context.Context, AttemptInfo) context.Context { return derived(context.Background()) },
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l = fieldLog{}
			n := 0
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				if n++; n == 1 {
					replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
					return
				}
				replyJSON(200, musicOK)(w, r)
			})
			c := ts.client(t, WithHeader("X-Trace-Tag", "tag-1"), tc.opt)
			var outer fieldLog
			require.NoError(t, music(traced(&outer), c))
			require.EqualValues(t, 2, ts.hits.Load())
			l.requireKeyless(t, 2, "the added hooks")
			require.Equal(t, [][]string{{"tag-1"}, {"tag-1"}}, l.named("X-Trace-Tag"))
			outer.requireKeyless(t, len(outer.named(headerAccessKey)), "the caller's hooks")
		})
	}
}
