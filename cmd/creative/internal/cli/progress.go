package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
)

// console is stderr as every part of a run writes to it: messages, log
// lines and the progress display. While progress shows, lines go through
// the display, which prints them above its own lines, so a log line never
// runs into a progress line.
type console struct {
	w  io.Writer
	mu sync.Mutex
	p  *mpb.Progress
}

// Write writes b to stderr, above the progress display while it shows,
// its control characters escaped (see printable): whatever a message
// quotes from a ledger or the service, it cannot drive the terminal.
func (c *console) Write(b []byte) (int, error) {
	n := len(b)
	b = []byte(cmdutil.PrintableLines(string(b)))
	c.mu.Lock()
	p := c.p
	c.mu.Unlock()
	if p != nil {
		if _, err := p.Write(b); err == nil {
			return n, nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.w.Write(b); err != nil {
		return 0, err
	}
	return n, nil
}

// atLineStart moves the terminal's cursor back to the start of its line,
// past the "^C" the terminal echoes, so the display's next redraw erases
// whole lines.
func (a *app) atLineStart() {
	if !a.progress {
		return
	}
	a.con.mu.Lock()
	defer a.con.mu.Unlock()
	_, _ = io.WriteString(a.con.w, "\r")
}

// display is the progress shown on stderr when it is a terminal: lines
// redrawn in place, removed when done. A nil *display shows nothing.
type display struct {
	con  *console
	p    *mpb.Progress
	mu   sync.Mutex
	bars []*mpb.Bar
}

// startDisplay starts the progress display, or returns nil when stderr is
// not a terminal.
func (a *app) startDisplay() *display {
	if !a.progress {
		return nil
	}
	p := mpb.New(mpb.WithOutput(a.stderr), mpb.WithAutoRefresh(), mpb.WithRefreshRate(120*time.Millisecond))
	a.con.mu.Lock()
	a.con.p = p
	a.con.mu.Unlock()
	return &display{con: a.con, p: p}
}

// status adds a line that shows what fn returns, until the display stops.
func (d *display) status(fn func() string) *mpb.Bar {
	if d == nil {
		return nil
	}
	return d.add(d.p.New(0, mpb.NopStyle(), mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return fn() }))))
}

func (d *display) add(b *mpb.Bar) *mpb.Bar {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.bars = append(d.bars, b)
	return b
}

// counter adds a bar of total steps with fn's text before it, the count,
// the rate and the time left after it.
func (d *display) counter(total int64, fn func() string) *mpb.Bar {
	if d == nil {
		return nil
	}
	return d.add(d.p.AddBar(total, mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return fn() }, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(
			decor.AverageSpeed(0, "%.1f jobs/s", decor.WCSyncSpace),
			decor.Name(" left"), decor.AverageETA(decor.ET_STYLE_GO, decor.WCSyncSpace),
		),
	))
}

// stop removes the display's lines, writes out the lines printed through
// it and hands stderr back.
func (d *display) stop() {
	if d == nil {
		return
	}
	d.mu.Lock()
	for _, b := range d.bars {
		b.Abort(true)
	}
	d.mu.Unlock()
	// The last frame moves the cursor up over the lines and erases them.
	d.p.Wait()
	d.con.mu.Lock()
	d.con.p = nil
	d.con.mu.Unlock()
}

// callStatus is what one call shows while it runs: the operation, the time
// since it started, the attempt when above 1, the wait before a retry, and
// the bytes of an upload or download. The options of track keep it
// current.
type callStatus struct {
	op      string
	start   time.Time
	attempt atomic.Int32 // attempts sent of the request under way
	retryAt atomic.Int64 // unix nanoseconds of the next attempt while waiting
	sent    atomic.Int64 // bytes of the attempt's upload sent
	size    atomic.Int64 // bytes of the upload in all, 0 when unknown
	got     atomic.Int64 // bytes of the download received
	total   atomic.Int64 // bytes of the download in all, 0 when unknown
	// requestID is the request id of the call's answer, for a message
	// about a paid answer.
	requestID atomic.Pointer[string]
}

func newCallStatus(op string) *callStatus {
	return &callStatus{op: op, start: time.Now()}
}

// track returns the per-call options that keep s current: a middleware
// that counts each attempt and the bytes of uploads and downloads, and a
// logger that reads the wait before a retry from the client's records and
// passes every record on to next, when there is one (-v).
func (s *callStatus) track(next slog.Handler) []creative.Option {
	return []creative.Option{
		creative.WithMiddleware(s.attempted),
		creative.WithLogger(slog.New(&watcher{status: s, next: next})),
	}
}

// attempted is a middleware that counts an attempt as it is sent. The
// bytes of an upload (a form) are counted as the attempt sends them, each
// attempt from 0; those of a download (the only GET the command makes) as
// they arrive, with the size its answer declares.
func (s *callStatus) attempted(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
	s.attempt.Add(1)
	s.retryAt.Store(0)
	if req.Body != nil && strings.HasPrefix(req.Header.Get("Content-Type"), "multipart/") {
		s.sent.Store(0)
		s.size.Store(max(req.ContentLength, 0))
		req = req.WithContext(req.Context()) // a copy, for this attempt's body
		req.Body = &countingBody{ReadCloser: req.Body, n: &s.sent}
	}
	resp, err := next(req)
	if err == nil && req.Method == http.MethodPost && resp.StatusCode/100 == 2 {
		id := resp.Header.Get("X-Request-Id")
		s.requestID.Store(&id)
	}
	if err == nil && req.Method == http.MethodGet && resp.StatusCode/100 == 2 {
		s.got.Store(0)
		s.total.Store(max(resp.ContentLength, 0))
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &s.got}
	}
	return resp, err
}

// countingBody is a request or response body that counts the bytes read
// through it.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

// Read reads from the body, counting the bytes.
func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// String is the status line.
func (s *callStatus) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %.1fs", s.op, time.Since(s.start).Seconds())
	if n := s.attempt.Load(); n > 1 {
		fmt.Fprintf(&b, " attempt %d", n)
	}
	if at := s.retryAt.Load(); at > 0 {
		if wait := time.Until(time.Unix(0, at)); wait > 0 {
			fmt.Fprintf(&b, " (retry in %.1fs)", wait.Seconds())
		}
	}
	if n := s.sent.Load(); n > 0 {
		b.WriteString(" sent " + humanBytes(n))
		if t := s.size.Load(); t > 0 {
			b.WriteString(" of " + humanBytes(t))
		}
	}
	if n := s.got.Load(); n > 0 {
		b.WriteString(" got " + humanBytes(n))
		if t := s.total.Load(); t > 0 {
			b.WriteString(" of " + humanBytes(t))
		}
	}
	return b.String()
}

// watcher is a slog.Handler that reads the wait before a retry from the
// client's "creative: retrying" records (their attribute "wait") into a
// callStatus, and passes every record on to next, when there is one (-v).
type watcher struct {
	status *callStatus
	next   slog.Handler
}

// Enabled takes every level: the attempts are logged at Debug.
func (w *watcher) Enabled(ctx context.Context, l slog.Level) bool { return true }

// Handle reads the wait of a record, then passes it on.
func (w *watcher) Handle(ctx context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "wait" && a.Value.Kind() == slog.KindDuration {
			w.status.retryAt.Store(time.Now().Add(a.Value.Duration()).UnixNano())
			return false
		}
		return true
	})
	if w.next != nil && w.next.Enabled(ctx, r.Level) {
		return w.next.Handle(ctx, r)
	}
	return nil
}

// WithAttrs returns a watcher whose next handler has attrs.
func (w *watcher) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := &watcher{status: w.status}
	if w.next != nil {
		n.next = w.next.WithAttrs(attrs)
	}
	return n
}

// WithGroup returns a watcher whose next handler has the group.
func (w *watcher) WithGroup(name string) slog.Handler {
	n := &watcher{status: w.status}
	if w.next != nil {
		n.next = w.next.WithGroup(name)
	}
	return n
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return strconv.FormatInt(n, 10) + " B"
}
