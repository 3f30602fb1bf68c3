package creative

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// This file is how one attempt travels: the Client-wide pause and the rate
// limiter first, then the middleware, then the network, within the
// per-attempt timeout; and the redirect rule. Each call has its own
// http.Client whose transport holds the call itself: what an attempt needs
// of its call (settings, middleware, headers to drop on a redirect) is a
// field away, never looked up in the request's context.

// useHTTPClient copies the user's client (or builds a pooled one) as the
// template of every call's http.Client, and keeps its transport as the one
// every attempt ends in.
func (c *Client) useHTTPClient(user *http.Client) {
	if user != nil {
		c.hc = *user
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 256
		t.MaxIdleConnsPerHost = 128
		t.MaxResponseHeaderBytes = maxHeaderBytes
		c.hc.Transport = t
	}
	c.rt = c.hc.Transport
	if c.rt == nil {
		c.rt = http.DefaultTransport
	}
	c.redir = c.hc.CheckRedirect
	// Every call sets its own. The call's transport has no
	// CloseIdleConnections, which go-retryablehttp calls after every call
	// that gives up: closing the shared pool there would cost every other
	// goroutine its warm connections.
	c.hc.Transport, c.hc.CheckRedirect = nil, nil
}

// transport is the RoundTripper of one call's http.Client. For each attempt
// (not each redirect) it waits for the Client-wide pause and the rate
// limiter, runs the middleware, and bounds the wait for the answer's
// headers; it marks the network's failures as attemptErrors.
type transport struct {
	cl       *call
	next     http.RoundTripper
	wrote    atomic.Int32 // what httptrace said of the attempt's request: wroteNothing, wroteFailed or wroteWhole
	bodyRead atomic.Bool  // the transport read an upload's body to its end
	headers  atomic.Bool  // httptrace said the attempt's headers were written
}

// What the transport saw of an attempt's request being written.
const (
	wroteNothing = iota // no word yet: not sent
	wroteFailed         // writing it failed: not sent whole
	wroteWhole          // written whole: the service may act on it
)

// wroteRequest is the call's httptrace hook, run when a request (an
// attempt, or a redirect of it) was written or failed to be. Only the start
// of an attempt, or of a redirect, clears what it saw; a failure never
// undoes written whole. So a late word about an earlier attempt can only
// make the policy more careful, never send twice what may have arrived.
func (t *transport) wroteRequest(info httptrace.WroteRequestInfo) {
	if info.Err != nil {
		t.wrote.CompareAndSwap(wroteNothing, wroteFailed)
		return
	}
	t.wrote.Store(wroteWhole)
}

// wroteHeaders is the call's httptrace hook run when a request's headers
// were written.
func (t *transport) wroteHeaders() { t.headers.Store(true) }

// clear forgets what was seen of the last request, as an attempt or a
// redirect of it starts.
func (t *transport) clear() {
	t.wrote.Store(wroteNothing)
	t.bodyRead.Store(false)
	t.headers.Store(false)
}

// written reports whether the attempt's request may have reached the
// service whole: httptrace said so or, with no word from it yet (over
// HTTP/2 the word can come after RoundTrip returned), its headers went out
// or the transport read the whole body. A request whose headers went out
// and whose fate is not told is taken as arrived: the doubt costs a retry,
// never a second payment.
func (t *transport) written() bool {
	switch t.wrote.Load() {
	case wroteWhole:
		return true
	case wroteNothing:
		return t.bodyRead.Load() || t.headers.Load()
	}
	return false
}

// watch wraps an attempt's body so that the transport knows when it was
// read to its end. A word about an earlier attempt's body can only make
// the policy more careful.
func (t *transport) watch(r io.Reader) io.Reader { return &watchedBody{r: r, t: t} }

type watchedBody struct {
	r io.Reader
	t *transport
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.t.bodyRead.Store(true)
	}
	return n, err
}

func (b *watchedBody) Close() error {
	if c, ok := b.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// An attemptError is a failure of the network during one attempt: the only
// kind of transport error that is retried.
type attemptError struct {
	err      error
	timedOut bool
	refused  bool // the service said it did not process the request (HTTP/2)
}

func newAttemptError(err error) *attemptError {
	return &attemptError{err: err, refused: unprocessed(err)}
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// RoundTrip sends one attempt of the call, or one redirect of it.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if r := t.cl.replay; r != nil && req.Response == nil {
		// go-retryablehttp's first attempt, which firstAnswer sent.
		t.cl.replay = nil
		return r.resp, r.err
	}
	if req.Response != nil { // a redirect: the attempt is under way
		// What counts is whether this request, not the redirected one,
		// was written whole.
		t.clear()
		return t.network(req, 0)
	}
	if t.cl.direct && req.URL == &t.cl.url && !t.cl.c.pause.active() {
		// What the rest would do, without the look-ups whose answers New
		// and the call's settings fixed: the URL is the operation's, under
		// the base URL, the key and so the pause the Client's, and there
		// is no trace, rate limiter or middleware.
		resp, err := t.network(req, t.cl.s.attemptLimit)
		t.cl.c.pause.report(resp, err, t.cl.s.logger, t.cl.op)
		return resp, err
	}
	c, l := t.cl.c, t.cl.s.logger
	if t.cl.ct != nil {
		req = t.cl.traceAttempt(req)
	}
	if !c.sameOrigin(req.URL) {
		// The pause is the service's: a file host's Retry-After is the
		// Download's own (retry.go), never every call's.
		return t.send(req)
	}
	p := c.pauseOf(t.cl.keys)
	if err := p.wait(req.Context(), l, t.cl.op); err != nil {
		return nil, err
	}
	resp, err := t.send(req)
	c.reportPause(t.cl.keys, p, resp, err, l, t.cl.op)
	return resp, err
}

// send waits for the rate limiter, then runs the call's middleware around
// one attempt on the network.
func (t *transport) send(req *http.Request) (*http.Response, error) {
	c, s := t.cl.c, t.cl.s
	if c.limiter != nil {
		if err := c.limiter.Wait(req.Context()); err != nil {
			c.pauseOf(t.cl.keys).report(nil, err, nil, "") // if this attempt was to go first, let another
			if _, ok := c.limiter.(*rate.Limiter); ok && req.Context().Err() == nil {
				// The limiter refuses at once a wait its deadline cannot cover.
				err = fmt.Errorf("the next token comes after the call's deadline: %w", context.DeadlineExceeded)
			}
			return nil, fmt.Errorf("waiting for the rate limit: %w", err)
		}
	}
	if len(s.middleware) == 0 {
		return t.network(req, s.attemptLimit)
	}
	next := func(r *http.Request) (*http.Response, error) { return t.network(r, s.attemptLimit) }
	for i := len(s.middleware) - 1; i >= 0; i-- {
		m, inner := s.middleware[i], next
		next = func(r *http.Request) (*http.Response, error) { return m(r, inner) }
	}
	resp, err := next(req)
	if resp != nil && err != nil {
		// net/http ignores such a response (and says so on the standard
		// logger) without closing it: its connection would leak.
		if resp.Body != nil {
			_ = resp.Body.Close()
		}
		resp = nil
	}
	return resp, err
}

// network sends one request; limit, when positive, bounds the wait for the
// answer's headers. A redirect to a Location that is not a URL is refused
// here, where its status is known: net/http would fail with an error that
// names neither the answer nor its status.
func (t *transport) network(req *http.Request, limit time.Duration) (*http.Response, error) {
	if err := t.sendable(req); err != nil {
		return nil, err
	}
	req = t.cl.hooked(req)
	resp, err := t.roundTrip(req, limit)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		t.cl.lendBody()
		fallthrough
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther:
		if loc := resp.Header.Get("Location"); loc != "" {
			if _, err := req.URL.Parse(loc); err != nil {
				_ = resp.Body.Close()
				return nil, &redirectError{status: resp.StatusCode, to: loc, why: "since it is not a URL"}
			}
		}
	}
	return resp, nil
}

// roundTrip hands one request to net/http so that net/http cannot send it
// again: without GetBody. net/http replays a request that has one when a
// kept-alive connection drops (over HTTP/1.1, once the caller's headers
// hold an Idempotency-Key) and when an HTTP/2 stream is reset or refused,
// even after the service read the whole body. The SDK alone decides to send
// again (retry.go), each attempt with a body opened anew. The http.Client
// keeps the call's own GetBody, which it needs to follow a 307 or 308: an
// attempt of a JSON body has none (lendBody), an upload's and a hop's are
// left out of a copy.
func (t *transport) roundTrip(req *http.Request, limit time.Duration) (*http.Response, error) {
	if limit <= 0 {
		if req.GetBody != nil {
			once := *req
			once.GetBody = nil
			req = &once
		}
		resp, err := t.next.RoundTrip(req)
		if err != nil {
			return nil, newAttemptError(err)
		}
		return t.whole(resp)
	}
	ctx, cancel := context.WithCancel(req.Context())
	timer := time.AfterFunc(limit, cancel)
	once := req.WithContext(ctx)
	once.GetBody = nil
	resp, err := t.next.RoundTrip(once)
	if !timer.Stop() {
		cancel()
		if resp != nil && resp.Body != nil { // a caller's RoundTripper may answer without one (whole)
			_ = resp.Body.Close()
		}
		if req.Context().Err() == nil {
			return nil, &attemptError{err: fmt.Errorf("no answer within %v (WithRequestTimeout)", limit), timedOut: true}
		}
	}
	if err != nil {
		cancel()
		return nil, newAttemptError(err)
	}
	if resp, err = t.whole(resp); err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// whole returns what the next RoundTripper answered as the http.Client
// takes it: a body of no length may be missing (it becomes http.NoBody);
// no answer, or an answer of a length without its body, is an error, not
// an attempt to send again. net/http's own transport returns neither; a
// caller's RoundTripper may.
func (t *transport) whole(resp *http.Response) (*http.Response, error) {
	switch {
	case resp == nil:
		return nil, fmt.Errorf("the transport (%T) returned neither an answer nor an error", t.next)
	case resp.Body != nil:
		return resp, nil
	case resp.ContentLength > 0:
		return nil, fmt.Errorf("the transport (%T) returned an answer of %d bytes without its body", t.next, resp.ContentLength)
	}
	resp.Body = http.NoBody
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

// A redirectError is a redirect the client refused to follow.
type redirectError struct {
	status int
	to     string
	why    string
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("the answer redirected (HTTP %d) to %s: not followed, %s", e.status, e.to, e.why)
}

// checkRedirect is the redirect policy, the one place a redirect is
// judged. It follows a redirect only when it keeps the request what it was:
// the method and body (307, 308, or any redirect of a GET), https, and the
// key's place. A call (a POST to the service) stays with the base URL's
// origin: the service has no reason to move it elsewhere. A Download may
// follow a file host's redirect anywhere. No hop whose URL carries user
// information (net/http would send it as Basic auth) or holds the key in
// any form redact knows is followed. Before a hop to another origin, the
// key, the headers of WithHeader and the Referer are dropped; sendable,
// which every request passes, checks what is left. The user's own
// CheckRedirect, if any, runs after.
func (t *transport) checkRedirect(req *http.Request, via []*http.Request) error {
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	same := t.cl.c.sameOrigin(req.URL)
	if why := t.refusal(req, via, same); why != "" {
		return &redirectError{status: status, to: t.cl.redact(req.URL.Redacted()), why: why}
	}
	if !same {
		// The key and the headers of WithHeader are meant for the service.
		req.Header.Del(headerAccessKey)
		req.Header.Del("Referer")
		for k := range t.cl.s.header {
			req.Header.Del(k)
		}
	}
	if user := t.cl.c.redir; user != nil {
		return user(req, via)
	}
	return nil
}

// refusal says why the redirect to req is not followed, or "".
func (t *transport) refusal(req *http.Request, via []*http.Request, same bool) string {
	prev := via[len(via)-1]
	switch {
	case len(via) >= 10:
		return "after 10 redirects"
	case prev.Method != req.Method:
		return "since it would turn the " + prev.Method + " into a " + req.Method
	case strings.EqualFold(prev.URL.Scheme, "https") && !strings.EqualFold(req.URL.Scheme, "https"):
		return "since it would leave https"
	case req.URL.Scheme != "http" && req.URL.Scheme != "https":
		return "since it is not an http(s) URL"
	case req.URL.User != nil:
		return "since its URL carries user information"
	case t.cl.holds(req.URL.String()):
		return "since its URL holds the access key"
	case t.cl.body != nil && !same:
		return "since a call to the service stays with the base URL's origin"
	case privateHost(req.URL.Hostname()) && !t.cl.c.privateAllowed(req.URL):
		return "since it points to a loopback, link-local or private address (WithPrivateDownloads allows it)"
	}
	return ""
}

// sendable is the last check of every request, an attempt or a redirect of
// it, before the network: a request to any origin but the base URL's
// carries the key nowhere, neither in its URL nor in a header's value (the
// key's own header, a header of WithHeader, a Referer, Basic auth).
func (t *transport) sendable(req *http.Request) error {
	if t.cl.c.sameOrigin(req.URL) {
		return nil
	}
	where := ""
	if req.URL.User != nil || t.cl.holds(req.URL.String()) {
		where = "its URL"
	}
	for k, vs := range req.Header {
		if where == "" && t.cl.holds(k) {
			where = "a header's name"
		}
		for _, v := range vs {
			if where == "" && t.cl.holds(v) {
				where = "its " + k + " header"
			}
		}
	}
	if where == "" {
		return nil
	}
	return &keyError{host: req.URL.Host, where: where}
}

// A keyError is a request the client refused to send, since it would carry
// the access key to another origin.
type keyError struct{ host, where string }

func (e *keyError) Error() string {
	return fmt.Sprintf("creative: not sent to %s: %s would carry the access key, which goes only to the base URL's origin", e.host, e.where)
}
