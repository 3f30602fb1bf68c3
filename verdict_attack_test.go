package creative

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each way a connection can fail, on a Client with nothing configured (the
// direct path) and with a call's own options, says "not sent" only when
// the service counted no request and it is sent again, and "outcome
// unknown" with no second request once the request may have arrived; a
// 429 or 503 is refused and retried. The server counts the requests it read
// to their end.
func TestEachConnectionFailureTellsWhatTheServiceMayHaveReceived(t *testing.T) {
	type serve func(conn net.Conn, br *bufio.Reader, whole *atomic.Int64)
	readWhole := func(br *bufio.Reader, whole *atomic.Int64) bool {
		req, err := http.ReadRequest(br)
		if err != nil {
			return false
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return false
		}
		whole.Add(1)
		return true
	}
	cases := []struct {
		name     string
		serve    serve
		sentinel error // ErrNotSent, ErrOutcomeUnknown or ErrRefused; nil: either of the first two, as the kernel saw the write
		whole    func(retries int) int64
	}{
		{name: "closed before reading", serve: func(net.Conn, *bufio.Reader, *atomic.Int64) {}},
		{name: "closed after reading the headers", sentinel: ErrOutcomeUnknown, serve: func(_ net.Conn, br *bufio.Reader, _ *atomic.Int64) {
			_, _ = http.ReadRequest(br)
		}},
		{name: "closed after reading the body", sentinel: ErrOutcomeUnknown, whole: func(int) int64 { return 1 }, serve: func(_ net.Conn, br *bufio.Reader, w *atomic.Int64) {
			readWhole(br, w)
		}},
		{name: "closed mid-headers of the answer", sentinel: ErrOutcomeUnknown, whole: func(int) int64 { return 1 }, serve: func(c net.Conn, br *bufio.Reader, w *atomic.Int64) {
			if readWhole(br, w) {
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Ty")
			}
		}},
		{name: "closed mid-body of the answer", sentinel: ErrOutcomeUnknown, whole: func(int) int64 { return 1 }, serve: func(c net.Conn, br *bufio.Reader, w *atomic.Int64) {
			if readWhole(br, w) {
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"success\":true,")
			}
		}},
		{name: "429 without Retry-After", sentinel: ErrRefused, whole: func(n int) int64 { return int64(n + 1) }, serve: func(c net.Conn, br *bufio.Reader, w *atomic.Int64) {
			for readWhole(br, w) {
				_, _ = io.WriteString(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: 35\r\n\r\n{\"success\":false,\"message\":\"slow\"} ")
			}
		}},
		{name: "503 with Retry-After 0", sentinel: ErrRefused, whole: func(n int) int64 { return int64(n + 1) }, serve: func(c net.Conn, br *bufio.Reader, w *atomic.Int64) {
			for readWhole(br, w) {
				_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Type: application/json\r\nContent-Length: 35\r\n\r\n{\"success\":false,\"message\":\"busy\"} ")
			}
		}},
	}
	for _, tc := range cases {
		for _, perCall := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/per-call options %v", tc.name, perCall), func(t *testing.T) {
				var whole atomic.Int64
				srv := newRawServer(t, func(conn net.Conn, _ <-chan struct{}) {
					tc.serve(conn, bufio.NewReader(conn), &whole)
				})
				c := newTestClient(t, "http://"+srv.addr())
				retries := DefaultMaxRetries
				var opts []Option
				if perCall {
					retries = 3
					opts = []Option{WithMaxRetries(retries)}
				}
				err := writerCall(context.Background(), c, opts...)
				require.Error(t, err)
				notSent, unknown := errors.Is(err, ErrNotSent), errors.Is(err, ErrOutcomeUnknown)
				switch {
				case tc.sentinel != nil:
					require.ErrorIs(t, err, tc.sentinel)
				default:
					require.True(t, notSent || unknown, "%v", err)
				}
				want := int64(0)
				if tc.whole != nil {
					want = tc.whole(retries)
				}
				assert.Equal(t, want, whole.Load(), "requests the server read whole")
				var ne *NetworkError
				if errors.As(err, &ne) {
					// The server closes each connection: an attempt is a
					// connection. None follows an unknown outcome.
					assert.Equal(t, int64(ne.Attempts), srv.conns.Load(), "%v", err)
					if notSent {
						assert.Equal(t, retries+1, ne.Attempts, "not sent is sent again: %v", err)
					}
				}
			})
		}
	}
	t.Run("a refused dial is not sent and is retried", func(t *testing.T) {
		c := newTestClient(t, "http://"+refusedAddr(t))
		err := writerCall(context.Background(), c)
		require.ErrorIs(t, err, ErrNotSent)
		var ne *NetworkError
		require.ErrorAs(t, err, &ne)
		assert.Equal(t, DefaultMaxRetries+1, ne.Attempts)
	})
	t.Run("a TLS failure is not sent and not retried", func(t *testing.T) {
		var hits atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
		var handshakes atomic.Int64
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				handshakes.Add(1)
			}
		}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		c := newTestClient(t, srv.URL) // the Client does not trust the test certificate
		err := writerCall(context.Background(), c)
		require.ErrorIs(t, err, ErrNotSent)
		assert.Zero(t, hits.Load())
		var ne *NetworkError
		require.ErrorAs(t, err, &ne)
		assert.Equal(t, 1, ne.Attempts, strconv.Quote(err.Error()))
		assert.Equal(t, int64(1), handshakes.Load(), "one handshake, not retried")
		assert.NotContains(t, err.Error(), testKey)
	})
}
