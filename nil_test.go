package creative

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

// Every method of every exported type with a pointer receiver, called on
// a nil receiver with zero arguments (a live context where one is asked
// for), returns or fails, and never panics: (*Audio)(nil).Ext() among
// them.
func TestEveryMethodOfANilReceiverIsSafe(t *testing.T) {
	for _, v := range []any{(*Client)(nil), (*Audio)(nil), (*APIError)(nil), (*NetworkError)(nil), (*ValidationError)(nil), (*WriterResult)(nil), (*RawAnswer)(nil)} {
		rv := reflect.ValueOf(v)
		for i := range rv.NumMethod() {
			m := rv.Type().Method(i)
			t.Run(rv.Type().String()+"."+m.Name, func(t *testing.T) {
				if m.Name == "Format" { // fmt's to call, with its own fmt.State
					require.NotPanics(t, func() { _ = fmt.Sprintf("%v %+v %#v %s", v, v, v, v) })
					return
				}
				ft := rv.Method(i).Type()
				args := make([]reflect.Value, ft.NumIn())
				for j := range args {
					args[j] = reflect.Zero(ft.In(j))
					if ft.In(j) == reflect.TypeFor[context.Context]() {
						args[j] = reflect.ValueOf(context.Background())
					}
				}
				if ft.IsVariadic() {
					args = args[:len(args)-1]
				}
				require.NotPanics(t, func() { rv.Method(i).Call(args) })
			})
		}
	}
}

// A typed nil that an option accepts (in an interface, or a pointer whose
// zero value cannot work) is refused by New and by a call with an error
// that names the option, and nothing is sent; never a panic on the first
// call.
func TestTypedNilsAreRefusedByTheOptionThatTakesThem(t *testing.T) {
	ts := newTestServer(t, replyJSON(200, musicOK))
	cases := []struct {
		name string
		opt  Option
		want string
	}{
		{"a typed nil *rate.Limiter", WithRateLimiter((*rate.Limiter)(nil)), "WithRateLimiter: the limiter is nil"},
		{"a nil RateLimiter", WithRateLimiter(nil), "WithRateLimiter: the limiter is nil"},
		{"a nil *http.Client", WithHTTPClient(nil), "WithHTTPClient: nil *http.Client"},
		{"an *http.Client with a typed nil *http.Transport", WithHTTPClient(&http.Client{Transport: (*http.Transport)(nil)}), "WithHTTPClient: the client's Transport is a nil *http.Transport"},
		{"an *http.Client with a typed nil cookie jar", WithHTTPClient(&http.Client{Jar: (*nilJar)(nil)}), "WithHTTPClient: the client's Jar is a nil *creative.nilJar"},
		{"a nil *slog.Logger", WithLogger(nil), "WithLogger: nil *slog.Logger"},
		{"an *slog.Logger without a handler", WithLogger(&slog.Logger{}), "WithLogger: the logger has no handler"},
		{"a nil Middleware", WithMiddleware(nil), "WithMiddleware: nil Middleware"},
		{"a nil destination", WithResponseInto(nil), "WithResponseInto: nil destination"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c *Client
			var err error
			require.NotPanics(t, func() { c, err = New(WithBaseURL(ts.URL), WithAccessKey(testKey), tc.opt) })
			assert.Nil(t, c)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)

			good := newTestClient(t, ts.URL)
			require.NotPanics(t, func() { err = music(context.Background(), good, tc.opt) })
			require.Error(t, err)
			assert.Contains(t, err.Error(), "creative: ")
		})
	}
	assert.Zero(t, ts.hits.Load(), "nothing was sent")
}

type nilJar struct{}

func (*nilJar) SetCookies(*url.URL, []*http.Cookie) {}
func (*nilJar) Cookies(*url.URL) []*http.Cookie     { return nil }

// A middleware that answers by itself, with a response that is not a
// success and carries no Request, fails the call with the *APIError of
// that answer, and sends nothing.
func TestAMiddlewareAnsweringWithoutARequestIsNoPanic(t *testing.T) {
	ts := newTestServer(t, replyJSON(200, musicOK))
	for _, status := range []int{400, 429, 500, 503, 302, 200} {
		answer := func(*http.Request, MiddlewareNext) (*http.Response, error) {
			return &http.Response{StatusCode: status, ContentLength: -1, Header: http.Header{"Retry-After": {"1"}, "Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(`{"success":false,"message":"from the middleware"}`))}, nil
		}
		t.Run(http.StatusText(status), func(t *testing.T) {
			c := newTestClient(t, ts.URL, WithMaxRetries(0))
			var err error
			require.NotPanics(t, func() { err = music(context.Background(), c, WithMiddleware(answer)) })
			require.Error(t, err)
			if status == 302 {
				assert.Contains(t, err.Error(), "HTTP 302 instead of a result")
			} else {
				assert.Contains(t, err.Error(), "from the middleware")
			}
		})
	}
	assert.Zero(t, ts.hits.Load())
}

// A middleware that returns a response and an error fails the call with
// its error; the response is closed, not left to net/http, which ignores
// it without closing it (its connection leaks) and writes a line on the
// standard logger.
func TestAMiddlewareReturningAResponseAndAnErrorLeaksNothing(t *testing.T) {
	ts := newTestServer(t, replyJSON(200, musicOK))
	var logged bytes.Buffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	for name, after := range map[string]bool{"its own answer": false, "after next": true} {
		t.Run(name, func(t *testing.T) {
			var closed atomic.Int64
			mw := func(r *http.Request, next MiddlewareNext) (*http.Response, error) {
				resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(musicOK)), Request: r}
				if after {
					var err error
					if resp, err = next(r); err != nil {
						return nil, err
					}
				}
				resp.Body = closeCounter{resp.Body, &closed}
				return resp, errors.New("middleware: refused")
			}
			c := newTestClient(t, ts.URL, WithMaxRetries(2), WithMiddleware(mw))
			err := music(context.Background(), c)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "middleware: refused")
			assert.EqualValues(t, 1, closed.Load(), "the response is closed once")
		})
	}
	assert.EqualValues(t, 1, ts.hits.Load(), "the one request a middleware sent, not sent again")
	assert.Empty(t, logged.String(), "nothing on the standard logger")
}

type closeCounter struct {
	io.Reader
	n *atomic.Int64
}

func (c closeCounter) Close() error { c.n.Add(1); return nil }
