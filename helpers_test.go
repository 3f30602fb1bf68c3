package creative

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/internal/memnet"
)

// testKey is distinctive so that a leak is easy to find in any text.
const testKey = "tk-7f3a91c2-LEAKCHECK-e5d0"

// testServer is an httptest server on 127.0.0.1 (or in memory) whose
// handler a test sets, counting the requests it receives and the
// connections opened to it.
type testServer struct {
	*httptest.Server
	hits    atomic.Int64
	conns   atomic.Int64
	mu      sync.Mutex
	handler http.HandlerFunc
	mem     bool // in memory: clients reach it only through ts.Client()
}

func newTestServer(t *testing.T, h http.HandlerFunc) *testServer {
	t.Helper()
	return startTestServer(t, h, false)
}

// newMemServer is newTestServer on an in-memory network (internal/memnet)
// instead of 127.0.0.1, for a test in a synctest bubble, where a goroutine
// blocked on a real socket would stop the clock. It must be started inside
// the bubble, and its clients made with ts.client.
func newMemServer(t *testing.T, h http.HandlerFunc) *testServer {
	t.Helper()
	return startTestServer(t, h, true)
}

func startTestServer(t *testing.T, h http.HandlerFunc, mem bool) *testServer {
	ts := &testServer{handler: h, mem: mem}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.hits.Add(1)
		ts.mu.Lock()
		h := ts.handler
		ts.mu.Unlock()
		h(w, r)
	})
	var ln *memnet.Listener
	if mem {
		ln = memnet.Listen()
		ts.Server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: handler}}
	} else {
		ts.Server = httptest.NewUnstartedServer(handler)
	}
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			ts.conns.Add(1)
		}
	}
	ts.Start()
	if mem {
		// Close closes the idle connections of its own client.
		ts.Client().Transport = ln.Transport()
	}
	t.Cleanup(ts.Close)
	return ts
}

// dial is the options a client needs to reach ts: none on 127.0.0.1, where
// the Client's own pooled transport does; ts.Client() in memory.
func (ts *testServer) dial() []Option {
	if ts.mem {
		return []Option{WithHTTPClient(ts.Client())}
	}
	return nil
}

// client returns a client of ts (newTestClient), plus opts.
func (ts *testServer) client(t *testing.T, opts ...Option) *Client {
	t.Helper()
	return newTestClient(t, ts.URL, append(ts.dial(), opts...)...)
}

// bubbleIf runs f in a synctest bubble when bubble is set, and as it is
// otherwise: for the rows of a table whose outcome waits on a timer, when
// the other rows need what only a real socket does (a reset, a refused
// port, TLS).
func bubbleIf(t *testing.T, bubble bool, f func(t *testing.T)) {
	t.Helper()
	if bubble {
		synctest.Test(t, f)
		return
	}
	f(t)
}

// newTestClient returns a client of the server at baseURL with the test key
// and waits of a millisecond, plus opts.
func newTestClient(t *testing.T, baseURL string, opts ...Option) *Client {
	t.Helper()
	all := append([]Option{WithBaseURL(baseURL), WithAccessKey(testKey), WithRetryWait(time.Millisecond, 2*time.Millisecond)}, opts...)
	c, err := New(all...)
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// replyJSON answers with status and body as JSON.
func replyJSON(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// logCapture is a slog handler keeping every record as text.
type logCapture struct {
	mu    sync.Mutex
	lines []string
	attrs []map[string]any
	level []slog.Level
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCapture) WithGroup(string) slog.Handler            { return l }
func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	m := map[string]any{}
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		m[a.Key] = a.Value.Any()
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, b.String())
	l.attrs = append(l.attrs, m)
	l.level = append(l.level, r.Level)
	return nil
}

func (l *logCapture) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// pngHeader returns a real PNG of w×h pixels (a gradient).
func pngHeader(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 99, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// jpegOf returns a real JPEG of w×h pixels.
func jpegOf(w, h int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)), nil); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// webpLossless1x1 is a valid 1x1 lossless WebP image.
var webpLossless1x1 = []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")

// refusedAddr returns a loopback address where connections are refused: a
// port bound for the test's duration but never listened on, so no other
// test's server can take it meanwhile.
func refusedAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}
