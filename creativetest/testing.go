package creativetest

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	creative "github.com/creativegen/creative-go"
)

// Start starts a Server for the test or benchmark tb, as NewServer does,
// and closes it when tb and its subtests end (tb.Cleanup), so a test needs
// no defer:
//
//	srv := creativetest.Start(t)
//	c := srv.Client()
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := NewServer(opts...)
	tb.Cleanup(s.Close)
	return s
}

// AskedRetryAfter is the header in which InstantRetryAfter keeps the
// Retry-After value the Server sent.
const AskedRetryAfter = "X-Creativetest-Retry-After"

// InstantRetryAfter is a client option for tests that inject a 429 or 503
// with Retry-After: the client retries at once instead of waiting the
// seconds asked for, so a test of a Fault{Status: 503, RetryAfter: "1"}
// does not cost a real second. Give it to Server.Client (or to
// creative.New, or to one call):
//
//	c := srv.Client(creativetest.InstantRetryAfter())
//
// It is middleware (creative.WithMiddleware): each 429 or 503 answer whose
// Retry-After asks for at most creative.MaxRetryAfter reaches the client
// with Retry-After: 0, and with the value sent kept in the AskedRetryAfter
// header. The client handles that answer as any other: the call is
// retried, the client-wide pause lets one attempt go first, and an
// *APIError made of it has RetryAfter 0 and the asked value in its Header.
// Since the wait is now zero, a call whose deadline comes before the asked
// wait is retried instead of returned at once: test that case without this
// option. Waits longer than creative.MaxRetryAfter are left as sent, since
// the client does not wait for them anyway.
func InstantRetryAfter() creative.Option {
	return creative.WithMiddleware(func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		if err != nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
			return resp, err
		}
		asked := resp.Header.Get("Retry-After")
		if d, ok := retryAfterWait(asked); ok && d <= creative.MaxRetryAfter {
			resp.Header.Set(AskedRetryAfter, asked)
			resp.Header.Set("Retry-After", "0")
		}
		return resp, nil
	})
}

// retryAfterWait reads a Retry-After value, in seconds or as an HTTP date.
func retryAfterWait(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}
