package creative

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Version is the version of this SDK, sent in the User-Agent header.
const Version = "0.2.0"

// Environment variables read by New when no option sets the value.
const (
	// EnvBaseURL names the variable holding the service's base URL.
	EnvBaseURL = "CREATIVE_BASE_URL"
	// EnvAccessKey names the variable holding the access key.
	EnvAccessKey = "CREATIVE_ACCESS_KEY"
)

// Defaults of the retry policy; see WithMaxRetries and WithRetryWait.
const (
	// DefaultMaxRetries is how many times a failed attempt is retried.
	DefaultMaxRetries = 2
	// DefaultRetryWaitMin is the first backoff's upper bound.
	DefaultRetryWaitMin = 500 * time.Millisecond
	// DefaultRetryWaitMax bounds every backoff computed by the client.
	DefaultRetryWaitMax = 8 * time.Second
	// MaxRetryAfter is the longest Retry-After a call waits for. A longer
	// demand ends the call's retries (the *APIError carries the wait asked
	// for), and a call that would have to wait longer for the Client's pause
	// returns at once with ErrRateLimited, sending nothing. The pause itself
	// lasts what the service asked, up to 24 hours.
	MaxRetryAfter = 60 * time.Second
)

// The low-level side of a call is in transport.go (one attempt), retry.go
// (whether to send it again) and response.go (the gate every answer passes).

// A Client calls the Creative Generation Service. It holds the base URL, the
// access key and a pooled HTTP client; it is safe for concurrent use and is
// meant to be created once and shared.
type Client struct {
	base      *url.URL                                   // scheme and host the access key may be sent to
	prefix    string                                     // base URL without a trailing slash
	key       func() []string                            // the x-access-key header value; a closure, which fmt prints as an address
	own       func() *redactor                           // the redactor of calls that send the Client's key, its forms worked out once
	set       settings                                   // the Client's options, without the key
	hc        http.Client                                // the template of every call's http.Client, without transport or redirect rule
	rt        http.RoundTripper                          // the transport every attempt ends in: pooled, or the user's
	redir     func(*http.Request, []*http.Request) error // the user's CheckRedirect, run after the Client's
	targets   map[string]*opTarget                       // operation name -> its URL under the base URL and header (request.go)
	limiter   RateLimiter                                // nil without WithRateLimiter
	pause     *pause                                     // the wait a 429 or 503 asked of every call with the Client's key
	pauses    *sync.Map                                  // access key -> *pause, while one is asked of calls with a key of their own (pause.go)
	dl        http.RoundTripper                          // the transport of Downloads: rt, refusing private addresses unless allowed
	private   bool                                       // Downloads may reach private addresses (download.go)
	origins   []*url.URL                                 // WithPrivateOrigin: the private origins Downloads may reach, and no other
	budget    *budget                                    // the answer bytes its calls hold at once (budget.go)
	direct    bool                                       // no rate limiter, middleware or call trace: an attempt of a call with the Client's settings waits for the pause alone
	plainHTTP bool                                       // hc has no cookie jar and no Timeout: on a 2xx answer without a redirect, its Do adds nothing to its transport's (retry.go, firstAnswer)
	std       bool                                       // the transport is net/http's, which hands an HTTP/1 connection back to its pool from a goroutine of its own (response.go, Close)
}

// New returns a Client configured by opts, falling back to the environment
// variables CREATIVE_BASE_URL and CREATIVE_ACCESS_KEY. It fails when the base
// URL or key is missing or malformed, and when the base URL is plain http to
// a host that is not loopback without WithInsecureHTTP.
func New(opts ...Option) (*Client, error) {
	s := settings{
		baseURL:    os.Getenv(EnvBaseURL),
		maxRetries: DefaultMaxRetries,
		waitMin:    DefaultRetryWaitMin,
		waitMax:    DefaultRetryWaitMax,
		maxBytes:   DefaultMaxResponseBytes,
	}
	if k := os.Getenv(EnvAccessKey); k != "" {
		if err := WithAccessKey(k)(&s); err != nil {
			return nil, fmt.Errorf("%w (check %s)", err, EnvAccessKey)
		}
	}
	if err := s.apply("", opts); err != nil {
		return nil, err
	}
	if s.rawInto != nil || len(s.jsonSets) > 0 {
		return nil, errors.New("creative: WithJSONSet and WithRawAnswerInto configure one call, not a Client: give them to the call")
	}
	base, err := parseBaseURL(s.baseURL, s.insecure)
	if err != nil {
		// A base URL may hold the key: the two variables swapped, or a
		// key in a query.
		return nil, errors.New(newRedactor([]string{s.accessKey}).redact(err.Error()))
	}
	if s.accessKey == "" {
		return nil, fmt.Errorf("creative: no access key: set %s or use WithAccessKey", EnvAccessKey)
	}
	key := []string{s.accessKey}
	s.accessKey = ""
	s.userAgent = userAgent(s.userAgent)
	s.uaValue = []string{s.userAgent}
	c := &Client{
		base:   base,
		prefix: strings.TrimRight(base.String(), "/"),
		key:    func() []string { return key },
		own:    sync.OnceValue(func() *redactor { return newRedactor(key) }),
		set:    s,
		pause:  &pause{},
		pauses: &sync.Map{},
	}
	if c.targets, err = c.newTargets(); err != nil {
		return nil, errors.New(c.own().redact(err.Error()))
	}
	c.limiter = s.limiter
	c.direct = s.limiter == nil && len(s.middleware) == 0 && len(s.traces) == 0
	c.budget = newBudget(cmp.Or(s.answerBudget, DefaultAnswerBudget))
	c.useHTTPClient(s.hc)
	c.plainHTTP = c.hc.Jar == nil && c.hc.Timeout == 0
	_, c.std = c.rt.(*http.Transport)
	c.shareHeaders(s.hc == nil)
	c.origins = s.origins
	c.private = s.private || (len(c.origins) == 0 && privateHost(base.Hostname()))
	c.dl = c.downloadTransport()
	return c, nil
}

func userAgent(extra string) string {
	ua := "creative-go/" + Version + " (" + runtime.Version() + ")"
	if extra != "" {
		ua += " " + extra
	}
	return ua
}

func parseBaseURL(raw string, insecure bool) (*url.URL, error) {
	if raw == "" {
		return nil, fmt.Errorf("creative: no base URL: set %s or use WithBaseURL; to run without the service, package creativetest has a fake of it: srv := creativetest.NewServer(); c := srv.Client()", EnvBaseURL)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		// Not quoted: a value that is no URL may be the key, put in the
		// wrong variable.
		return nil, fmt.Errorf("creative: the base URL (%d bytes) is not an http(s) URL with a host; it is not quoted, in case it is the access key (check %s or WithBaseURL)", len(raw), EnvBaseURL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("creative: base URL must not carry user information (check %s or WithBaseURL)", EnvBaseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("creative: base URL %q must not carry a query or fragment, which are not quoted (check %s or WithBaseURL)", u.Scheme+"://"+u.Host+u.EscapedPath(), EnvBaseURL)
	}
	if u.Scheme == "http" && !insecure && !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("creative: base URL %q is plain http to a host that is not loopback: use https, or WithInsecureHTTP to allow it", raw)
	}
	return u, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *Client) sameOrigin(u *url.URL) bool { return sameOrigin(c.base, u) }

// sameOrigin reports whether a and b have one scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	if b.Host == a.Host && b.Scheme == a.Scheme {
		return true // as every call's URL is written (request.go)
	}
	return strings.EqualFold(b.Scheme, a.Scheme) &&
		strings.EqualFold(b.Hostname(), a.Hostname()) &&
		portOf(b) == portOf(a)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// String describes the Client without its access key.
func (c *Client) String() string {
	if c == nil {
		return "creative.Client(nil)"
	}
	return fmt.Sprintf("creative.Client{BaseURL: %q, AccessKey: %s}", c.prefix, redacted)
}

// Format prints the Client as String does for every verb, so no verb or flag
// (%v, %+v, %#v, %s) prints the access key.
func (c *Client) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// LogValue describes the Client to log/slog without its access key.
func (c *Client) LogValue() slog.Value {
	if c == nil {
		return slog.StringValue("creative.Client(nil)")
	}
	return slog.GroupValue(slog.String("base_url", c.prefix), slog.String("access_key", redacted))
}

// call is one call of an operation, across its attempts: its settings and
// key, its body, and its own http.Client, whose transport (transport.go)
// holds the call directly. The retry policy is in retry.go, the answer's
// gate in response.go.
type call struct {
	c    *Client
	op   string
	s    *settings
	keys []string    // the x-access-key value of this call
	body requestBody // nil for a request without a body
	hc   http.Client // the Client's, sending through tr
	tr   transport

	trace      httptrace.ClientTrace  // tells the transport when a request was written whole
	outer      *httptrace.ClientTrace // the caller's hooks that trace composed with (callctx.go)
	attempts   int
	started    time.Time
	last       verdict         // the retry policy's word on the last attempt
	unknowns   int             // attempts whose outcome is unknown
	retryAfter time.Duration   // asked for by the last answer
	ct         *callTrace      // nil without WithCallTrace (observe.go)
	url        url.URL         // the URL of an operation's request, the call's own copy (request.go)
	direct     bool            // an operation's call with the Client's settings, which leave its attempts nothing to look up (transport.go)
	sent       *http.Request   // the request of the last attempt of a JSON body (retry.go, lendBody)
	replay     *attemptOutcome // the first attempt's outcome, sent by firstAnswer, for go-retryablehttp's first attempt to get (retry.go)
	ctx        callCtx         // the call's context, which holds the call (callctx.go)
	resp       response        // the answer, once it came

	*redactor // the call's keys and the Client's, removed from every text
	retrier   // go-retryablehttp's client of this call (retry.go)
}

// callSettings returns the settings of one call: the Client's, or a copy
// with opts applied. The key is the call's own when it gives one.
func (c *Client) callSettings(op string, opts []Option) (*settings, []string, error) {
	if len(opts) == 0 {
		return &c.set, c.key(), nil
	}
	s := c.set
	s.clientOpt, s.userAgent = "", ""
	if err := s.apply(op, opts); err != nil {
		return nil, nil, err
	}
	if s.userAgent != "" {
		s.userAgent = c.set.userAgent + " " + s.userAgent
		s.uaValue = []string{s.userAgent}
	} else {
		s.userAgent = c.set.userAgent
	}
	key := c.key()
	if s.accessKey != "" {
		key = []string{s.accessKey}
		s.accessKey = ""
	}
	return &s, key, nil
}

// newCall starts the call of r with settings s and key.
func (c *Client) newCall(r *request, s *settings, key []string) *call {
	cl := &call{c: c, op: r.op, s: s, keys: key, body: r.body, hc: c.hc}
	if own := c.key(); len(key) == 1 && key[0] == own[0] {
		cl.redactor = c.own() // the Client's key alone: nothing to merge
	} else {
		cl.redactor = newRedactor(key, own)
	}
	cl.tr = transport{cl: cl, next: c.rt}
	if r.rawURL != "" {
		cl.tr.next = c.dl
	}
	cl.hc.Transport = &cl.tr
	cl.hc.CheckRedirect = checkRedirectHook
	cl.trace.WroteRequest = cl.tr.wroteRequest
	cl.trace.WroteHeaders = cl.tr.wroteHeaders
	return cl
}

// do sends r with the call's options and returns the answer: a 2xx
// response for the caller to decode and Close, or an error (*APIError for
// any other answer, *NetworkError when none came). Every answer passes
// response.go's gate.
func (c *Client) do(ctx context.Context, r *request, opts []Option) (*response, error) {
	if err := c.usable(ctx, r.op); err != nil {
		return nil, err
	}
	s, key, err := c.callSettings(r.op, opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, &NetworkError{Operation: r.op, Err: err, kind: attemptNotSent}
	}
	if len(s.jsonSets) > 0 {
		if r.body, err = setJSON(r.op, r.body, s.jsonSets, r.check); err != nil {
			return nil, err
		}
	}
	cl := c.newCall(r, s, key)
	if err := cl.keyless(r); err != nil {
		return nil, err
	}
	if len(s.traces) > 0 {
		host, port := c.traceHost(r)
		ctx = cl.traceStart(ctx, host, port)
	}
	cancel := context.CancelFunc(func() {})
	if s.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
	}
	ctx = cl.withTrace(ctx)
	req, err := c.newRequest(ctx, cl, r)
	if err != nil {
		cancel()
		cl.traceEnd(err)
		return nil, err
	}
	resp, err := cl.send(req)
	if err != nil {
		// failure reads ctx: cancel after, or every failure would be
		// blamed on a cancellation.
		defer cancel()
		err = cl.failure(ctx, err)
		cl.traceEnd(err)
		return nil, err
	}
	rs := &cl.resp
	*rs = response{Response: resp, cl: cl, cancel: cancel}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer rs.Close()
		rs.err = rs.statusError()
		return nil, rs.err
	}
	return rs, nil
}

// invoke sends one call of op with body and decodes its envelope's data
// with data: an upload's endpoint method is its validation plus this line.
func invoke[T any](ctx context.Context, c *Client, op string, body requestBody, opts []Option, data func(*bodyDecoder) (T, error)) (T, error) {
	return invokeRequest(ctx, c, &request{op: op, body: body}, opts, data)
}

// invokeRequest is invoke with the request r.
func invokeRequest[T any](ctx context.Context, c *Client, r *request, opts []Option, data func(*bodyDecoder) (T, error)) (T, error) {
	var v T
	rs, err := c.do(ctx, r, opts)
	if err != nil {
		return v, err
	}
	defer rs.Close()
	err = rs.decodeEnvelope(inPlace[T](), func(d *bodyDecoder) (err error) {
		v, err = data(d)
		return err
	})
	rs.err = err
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// invokeJSON is invoke with the request struct req sent as JSON; a body
// WithJSONSet changed passes req's validation again (revalidate).
func invokeJSON[R, T any](ctx context.Context, c *Client, op string, req R, opts []Option, data func(*bodyDecoder) (T, error)) (T, error) {
	body, err := newJSONBody(op, req)
	if err != nil {
		var zero T
		return zero, err
	}
	r := &request{op: op, body: body}
	if len(opts) > 0 { // only a call's options hold WithJSONSet
		r.check = revalidate(op, req)
	}
	return invokeRequest(ctx, c, r, opts, data)
}

// inPlace reports whether results of type T are decoded over the body's own
// bytes, so that an error must keep a copy of the body's start.
func inPlace[T any]() bool {
	var v T
	switch any(v).(type) {
	case Image, []Image:
		return true
	}
	return false
}

// CloseIdleConnections closes the idle connections of the Client's
// transport, as http.Client.CloseIdleConnections does. Calls in flight are
// not affected.
func (c *Client) CloseIdleConnections() {
	if c == nil {
		return
	}
	if ci, ok := c.rt.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
	if ci, ok := c.dl.(interface{ CloseIdleConnections() }); ok && c.dl != c.rt {
		ci.CloseIdleConnections() // the Downloads' own pool (download.go)
	}
}
