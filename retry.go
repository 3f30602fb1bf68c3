package creative

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"
)

// This file is the retry side of the pipeline: the policy (which answers
// and failures are retried, and after how long), go-retryablehttp adapted to
// it, and the transport every attempt passes (middleware, throttling, the
// client-wide pause a 429 asks for, the per-attempt timeout). No other file
// imports go-retryablehttp.

// call is the state of one call across its attempts.
type call struct {
	c          *Client
	op         string
	s          *settings
	keys       []string // the x-access-key value of this call
	body       any      // []byte, or a function opening the body anew
	oneShot    sendOnce // non-nil when the body cannot be replayed
	attempts   int
	started    time.Time
	retryAfter time.Duration // asked for by the last answer
	stopped    string        // why a retryable answer was not retried

	redactor // the call's keys and the Client's, removed from every text
}

// oneShot is what the pipeline needs of a body that can be sent once.
type sendOnce interface{ sent() bool }

type callKey struct{}

// send runs the attempts of cl's request through go-retryablehttp with the
// client's policy, and returns the last answer or the last failure.
func (cl *call) send(req *http.Request) (*http.Response, error) {
	req = req.WithContext(context.WithValue(req.Context(), callKey{}, cl))
	rreq := &retryablehttp.Request{Request: req}
	if err := rreq.SetBody(readerFunc(cl.body)); err != nil {
		return nil, err
	}
	req.Header = rreq.Header
	rc := retryablehttp.Client{
		HTTPClient:     cl.c.hc,
		RetryWaitMin:   cl.s.waitMin,
		RetryWaitMax:   cl.s.waitMax,
		RetryMax:       cl.s.maxRetries,
		RequestLogHook: cl.onAttempt,
		CheckRetry:     cl.checkRetry,
		Backoff:        cl.backoff,
		ErrorHandler:   retryablehttp.PassthroughErrorHandler,
	}
	cl.started = time.Now()
	return rc.Do(rreq)
}

// readerFunc adapts a body to go-retryablehttp: bytes as they are (read anew
// on each attempt), a function as a ReaderFunc called on each attempt.
func readerFunc(body any) any {
	if f, ok := body.(func() (io.Reader, error)); ok {
		return retryablehttp.ReaderFunc(f)
	}
	return body
}

// onAttempt counts attempts; go-retryablehttp calls it before each one.
func (cl *call) onAttempt(_ retryablehttp.Logger, _ *http.Request, i int) {
	cl.attempts = i + 1
	cl.started = time.Now()
}

// checkRetry is the client's retry policy as go-retryablehttp asks for it:
// it logs the attempt, then decides with retry.
func (cl *call) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	cl.logAttempt(ctx, resp, err)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return false, ctxErr
	}
	again := cl.retry(ctx, resp, err)
	if again && resp != nil && cl.attempts <= cl.s.maxRetries {
		// Another attempt follows. go-retryablehttp would now read up to
		// 4 KiB of this answer, before its backoff, to reuse the
		// connection: a body that drips would hold the retry until the
		// deadline. The last answer is kept whole, for its error.
		drain(resp.Body)
		resp.Body = http.NoBody
	}
	return again, nil
}

// drainWait bounds the time drain spends on a failed answer's body.
const drainWait = 100 * time.Millisecond

// drain reads what is left of a failed answer's body, up to 4 KiB, and
// closes it, so that its connection can serve the retry; it gives up after
// drainWait, so that a body that drips costs the connection, not the retry.
func drain(body io.ReadCloser) {
	t := time.AfterFunc(drainWait, func() { _ = body.Close() })
	defer t.Stop()
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 4<<10))
	_ = body.Close()
}

// retry decides with retryable, the one-shot rule and the Retry-After rule.
func (cl *call) retry(ctx context.Context, resp *http.Response, err error) bool {
	cl.retryAfter = 0
	if !retryable(resp, err) {
		return false
	}
	if cl.oneShot != nil && cl.oneShot.sent() {
		cl.stopped = notReplayed
		return false
	}
	d, ok := retryAfter(resp, time.Now())
	if !ok {
		return true
	}
	cl.retryAfter = d // the transport paused the client for it already
	if d > MaxRetryAfter {
		cl.stopped = fmt.Sprintf("the service asked to wait %v before retrying, more than the %v the client waits", d, MaxRetryAfter)
		return false
	}
	if deadline, ok := ctx.Deadline(); ok && time.Now().Add(d).After(deadline) {
		cl.stopped = fmt.Sprintf("the service asked to wait %v before retrying, past the call's deadline", d)
		return false
	}
	return true
}

func (cl *call) logAttempt(ctx context.Context, resp *http.Response, err error) {
	l := cl.s.logger
	if l == nil {
		return
	}
	attrs := []slog.Attr{slog.String("operation", cl.op), slog.Int("attempt", cl.attempts), slog.Duration("duration", time.Since(cl.started))}
	if resp != nil {
		attrs = append(attrs, slog.Int("status", resp.StatusCode), slog.Int64("bytes", resp.ContentLength))
		if id := requestID(resp.Header); id != "" {
			attrs = append(attrs, slog.String("request_id", cl.redact(id)))
		}
	} else if err != nil {
		attrs = append(attrs, slog.String("error", cl.redact(err.Error())))
	}
	l.LogAttrs(ctx, slog.LevelDebug, "creative: attempt", attrs...)
}

// retryable reports whether an attempt that ended with resp or err may be
// sent again. Connection failures and 408, 429, 500, 502, 503 and 504 are
// passing troubles; 400 is the service's definitive answer, and any other
// status (other 4xx, 501, 2xx, 3xx, 1xx) will not change on a retry.
func retryable(resp *http.Response, err error) bool {
	if err != nil {
		return transient(err)
	}
	switch resp.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// transient reports whether an attempt's failure may pass on its own. Only
// failures of the network are: the transport marks them as attemptErrors.
// Anything the client itself refused (a redirect, a Location it cannot
// parse, a local read of an upload) and anything that will fail the same way
// again (the context's end, a certificate or TLS handshake problem) is not.
func transient(err error) bool {
	var ae *attemptError
	if !errors.As(err, &ae) {
		return false
	}
	if ae.timedOut {
		return true
	}
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalidCert      x509.CertificateInvalidError
		hostname         x509.HostnameError
		verification     *tls.CertificateVerificationError
		record           tls.RecordHeaderError
		alert            tls.AlertError
		source           *sourceError
		paused           *pausedError
	)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &unknownAuthority), errors.As(err, &invalidCert), errors.As(err, &hostname),
		errors.As(err, &verification), errors.As(err, &record), errors.As(err, &alert),
		errors.As(err, &source), errors.As(err, &paused):
		return false
	}
	return true
}

// retryAfter reads the Retry-After header of a 429 or 503 answer, in seconds
// or as an HTTP date. A number of seconds too large to represent is the
// longest duration there is: it asks for a wait longer than any call makes.
func retryAfter(resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return 0, false
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if allDigits(v) {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > math.MaxInt64/int64(time.Second) {
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// backoff waits what the service asked for, or else a full-jitter
// exponential delay: uniform in [0, min(max, min·2^attempt)].
func (cl *call) backoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	wait := cl.retryAfter
	if wait == 0 {
		ceil := max
		if attempt < 30 {
			if d := min << attempt; d > 0 && d < max {
				ceil = d
			}
		}
		wait = time.Duration(rand.Int64N(int64(ceil) + 1))
	}
	if l := cl.s.logger; l != nil {
		attrs := []slog.Attr{slog.String("operation", cl.op), slog.Int("attempt", cl.attempts), slog.Duration("wait", wait)}
		if resp != nil {
			attrs = append(attrs, slog.Int("status", resp.StatusCode))
		}
		l.LogAttrs(context.Background(), slog.LevelInfo, "creative: retrying", attrs...)
	}
	return wait
}

// notReplayed explains why a retryable failure of an upload was not retried.
const notReplayed = "not retried: the upload came from a one-shot reader whose bytes were already sent; give a path, bytes or an io.ReaderAt to make it retryable"

// failure turns the error of send into the error a caller gets.
func (cl *call) failure(ctx context.Context, err error) error {
	var (
		paused *pausedError
		redir  *redirectError
	)
	switch {
	case errors.As(err, &paused):
		// The attempt refused by the pause was counted but never sent.
		return &APIError{Operation: cl.op, StatusCode: paused.status, Attempts: cl.attempts - 1, RetryAfter: time.Until(paused.until),
			Message: paused.Error(), paused: true}
	case errors.As(err, &redir):
		return &APIError{Operation: cl.op, StatusCode: redir.status, Attempts: cl.attempts, Message: cl.message(redir.Error()), unexpected: true}
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w (%v)", ctxErr, err)
	}
	if cl.stopped != "" {
		err = fmt.Errorf("%w (%s)", err, cl.stopped)
	}
	return &NetworkError{Operation: cl.op, Attempts: cl.attempts, Err: cl.redactErr(err)}
}

// httpClient copies the user's client (or builds a pooled one), routes it
// through the attempt transport and sets the redirect rule.
func (c *Client) httpClient(user *http.Client) *http.Client {
	var hc http.Client
	if user != nil {
		hc = *user
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 256
		t.MaxIdleConnsPerHost = 128
		t.MaxResponseHeaderBytes = maxHeaderBytes
		hc.Transport = t
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	// attempts hides CloseIdleConnections, which go-retryablehttp calls
	// after every call that gives up: closing the shared pool there would
	// cost every other goroutine its warm connections.
	hc.Transport = &attempts{c: c, next: rt}
	next := hc.CheckRedirect
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := c.checkRedirect(req, via); err != nil {
			return err
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	return &hc
}

// CloseIdleConnections closes the idle connections of the Client's
// transport, as http.Client.CloseIdleConnections does. Calls in flight are
// not affected.
func (c *Client) CloseIdleConnections() {
	if a, ok := c.hc.Transport.(*attempts); ok {
		if ci, ok := a.next.(interface{ CloseIdleConnections() }); ok {
			ci.CloseIdleConnections()
		}
	}
}

// A redirectError is a redirect the client refused to follow.
type redirectError struct {
	status int
	to     string
	why    string
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("the answer redirected (HTTP %d) to %s: not followed, %s", e.status, e.to, e.why)
}

// checkRedirect follows a redirect only when it keeps the request what it
// was: the method and body (307, 308, or any redirect of a GET), and https.
// The key is dropped before a redirect to another origin.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	prev := via[len(via)-1]
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	switch {
	case len(via) >= 10:
		return &redirectError{status: status, to: req.URL.String(), why: "after 10 redirects"}
	case prev.Method != req.Method:
		return &redirectError{status: status, to: req.URL.String(), why: "since it would turn the " + prev.Method + " into a " + req.Method}
	case strings.EqualFold(prev.URL.Scheme, "https") && !strings.EqualFold(req.URL.Scheme, "https"):
		return &redirectError{status: status, to: req.URL.String(), why: "since it would leave https"}
	case req.URL.Scheme != "http" && req.URL.Scheme != "https":
		return &redirectError{status: status, to: req.URL.String(), why: "since it is not an http(s) URL"}
	}
	if !c.sameOrigin(req.URL) {
		// The key and the headers of WithHeader are meant for the service.
		req.Header.Del(headerAccessKey)
		if cl, ok := req.Context().Value(callKey{}).(*call); ok {
			for k := range cl.s.header {
				req.Header.Del(k)
			}
		}
	}
	return nil
}

// attempts is the transport every request of a Client passes. For each
// attempt (not each redirect) it waits for the client-wide pause and the rate
// limiter, runs the middleware, and bounds the wait for the answer's headers;
// it marks the network's failures as attemptErrors.
type attempts struct {
	c    *Client
	next http.RoundTripper
}

// An attemptError is a failure of the network during one attempt: the only
// kind of transport error that is retried.
type attemptError struct {
	err      error
	timedOut bool
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

func (a *attempts) RoundTrip(req *http.Request) (*http.Response, error) {
	cl, _ := req.Context().Value(callKey{}).(*call)
	if cl == nil || req.Response != nil { // not a call's, or a redirect
		return a.network(req, 0)
	}
	if err := a.c.pause.wait(req.Context()); err != nil {
		return nil, err
	}
	resp, err := a.send(req, cl.s)
	a.c.pause.report(resp, err)
	return resp, err
}

// send runs the middleware of s around one attempt on the network.
func (a *attempts) send(req *http.Request, s *settings) (*http.Response, error) {
	if a.c.limiter != nil {
		if err := a.c.limiter.Wait(req.Context()); err != nil {
			a.c.pause.report(nil, err) // if this attempt was to go first, let another
			if _, ok := a.c.limiter.(*rate.Limiter); ok && req.Context().Err() == nil {
				// The limiter refuses at once a wait its deadline cannot cover.
				err = fmt.Errorf("the next token comes after the call's deadline: %w", context.DeadlineExceeded)
			}
			return nil, fmt.Errorf("waiting for the rate limit: %w", err)
		}
	}
	if len(s.middleware) == 0 {
		return a.network(req, s.attemptLimit)
	}
	next := func(r *http.Request) (*http.Response, error) { return a.network(r, s.attemptLimit) }
	for i := len(s.middleware) - 1; i >= 0; i-- {
		m, inner := s.middleware[i], next
		next = func(r *http.Request) (*http.Response, error) { return m(r, inner) }
	}
	return next(req)
}

// network sends one request; limit, when positive, bounds the wait for the
// answer's headers. A redirect to a Location that is not a URL is refused
// here, where its status is known: net/http would fail with an error that
// names neither the answer nor its status.
func (a *attempts) network(req *http.Request, limit time.Duration) (*http.Response, error) {
	resp, err := a.roundTrip(req, limit)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		if loc := resp.Header.Get("Location"); loc != "" {
			if _, err := req.URL.Parse(loc); err != nil {
				_ = resp.Body.Close()
				return nil, &redirectError{status: resp.StatusCode, to: loc, why: "since it is not a URL"}
			}
		}
	}
	return resp, nil
}

func (a *attempts) roundTrip(req *http.Request, limit time.Duration) (*http.Response, error) {
	if limit <= 0 {
		resp, err := a.next.RoundTrip(req)
		if err != nil {
			return nil, &attemptError{err: err}
		}
		return resp, nil
	}
	ctx, cancel := context.WithCancel(req.Context())
	timer := time.AfterFunc(limit, cancel)
	resp, err := a.next.RoundTrip(req.WithContext(ctx))
	if !timer.Stop() {
		cancel()
		if resp != nil {
			_ = resp.Body.Close()
		}
		if req.Context().Err() == nil {
			return nil, &attemptError{err: fmt.Errorf("no answer within %v (WithRequestTimeout)", limit), timedOut: true}
		}
	}
	if err != nil {
		cancel()
		return nil, &attemptError{err: err}
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// pause is the wait a 429 or 503 with Retry-After asks of the whole Client.
// Until it ends no attempt is sent; when it ends, one attempt goes first and
// the others wait for its answer, so that a crowd of callers does not hit a
// rate-limited service all at once again.
type pause struct {
	on     atomic.Bool // until is set: the only field read without mu
	mu     sync.Mutex
	until  time.Time     // zero when not paused
	status int           // the status that asked for the pause
	probe  bool          // the first attempt after the pause is out
	change chan struct{} // closed when until or probe changes
}

// A pausedError is returned, without sending anything, by a call whose
// deadline comes before the end of the client's pause.
type pausedError struct {
	until  time.Time
	status int
}

func (e *pausedError) Error() string {
	return fmt.Sprintf("the service asked every call to wait until %s, after this call's deadline or more than %v away: nothing sent",
		e.until.UTC().Format("2006-01-02T15:04:05.000Z07:00"), MaxRetryAfter)
}

// extend makes the pause last at least d from now; p.mu is held.
func (p *pause) extend(now time.Time, d time.Duration, status int) bool {
	// A pause lasts at most MaxRetryAfter: a longer demand fails the calls
	// that cannot wait that long, and after it one attempt asks again.
	until := now.Add(min(d, MaxRetryAfter))
	if !until.After(p.until) {
		return false
	}
	p.until, p.status = until, status
	p.on.Store(true)
	return true
}

func (p *pause) signal() {
	if p.change != nil {
		close(p.change)
		p.change = nil
	}
}

// wait blocks while the client is paused, within ctx; it returns a
// *pausedError at once when the pause ends after ctx's deadline, or more than
// MaxRetryAfter from now.
func (p *pause) wait(ctx context.Context) error {
	if !p.on.Load() {
		return nil
	}
	for {
		p.mu.Lock()
		if p.until.IsZero() {
			p.mu.Unlock()
			return nil
		}
		now := time.Now()
		left := p.until.Sub(now)
		if left <= 0 && !p.probe {
			p.probe = true // this attempt goes first
			p.mu.Unlock()
			return nil
		}
		if deadline, ok := ctx.Deadline(); left > MaxRetryAfter || (ok && deadline.Before(p.until)) {
			err := &pausedError{until: p.until, status: p.status}
			p.mu.Unlock()
			return err
		}
		if p.change == nil {
			p.change = make(chan struct{})
		}
		change := p.change
		p.mu.Unlock()
		if err := sleep(ctx, left, change); err != nil {
			return err
		}
	}
}

// sleep waits for d (when positive), change or the end of ctx.
func sleep(ctx context.Context, d time.Duration, change <-chan struct{}) error {
	var tick <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		tick = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-change:
	case <-tick:
	}
	return nil
}

// report ends the pause after an answer that does not ask for one, extends
// it after one that does; either way, or after a failed attempt, the next
// attempt may go first.
func (p *pause) report(resp *http.Response, err error) {
	now := time.Now()
	d, asks := retryAfter(resp, now)
	if !asks && !p.on.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case asks:
		p.extend(now, d, resp.StatusCode)
	case p.until.IsZero():
		return
	case err == nil && !now.Before(p.until):
		p.until = time.Time{}
		p.on.Store(false)
	}
	p.probe = false
	p.signal()
}
