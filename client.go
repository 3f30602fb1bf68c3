package creative

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Version is the version of this SDK, sent in the User-Agent header.
const Version = "0.1.0"

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
	// MaxRetryAfter is the longest Retry-After the client waits for. A longer
	// demand ends the retries: the *APIError carries the wait asked for.
	MaxRetryAfter = 60 * time.Second
)

// A Client calls the Creative Generation Service. It holds the base URL, the
// access key and a pooled HTTP client; it is safe for concurrent use and is
// meant to be created once and shared.
type Client struct {
	base       *url.URL        // scheme and host the access key may be sent to
	prefix     string          // base URL without a trailing slash
	key        func() []string // the x-access-key header value; a closure, which fmt prints as an address
	hc         *http.Client
	maxRetries int
	waitMin    time.Duration
	waitMax    time.Duration
	timeout    time.Duration
	logger     *slog.Logger
	userAgent  []string // the User-Agent header value
}

type settings struct {
	baseURL    string
	accessKey  string
	hc         *http.Client
	maxRetries int
	waitMin    time.Duration
	waitMax    time.Duration
	timeout    time.Duration
	logger     *slog.Logger
	userAgent  string
	insecure   bool
}

// An Option configures a Client in New.
type Option func(*settings) error

// WithBaseURL sets the service's base URL, such as
// "https://api.example.com" or "https://gw.example.com/creative". It
// overrides CREATIVE_BASE_URL.
func WithBaseURL(u string) Option {
	return func(s *settings) error { s.baseURL = u; return nil }
}

// WithAccessKey sets the access key sent in the x-access-key header. It
// overrides CREATIVE_ACCESS_KEY.
func WithAccessKey(key string) Option {
	return func(s *settings) error { s.accessKey = key; return nil }
}

// WithHTTPClient makes the Client send through hc (its transport, proxy and
// TLS settings). The Client copies hc and still adds its headers, retries and
// redirect rule; hc itself is not modified.
func WithHTTPClient(hc *http.Client) Option {
	return func(s *settings) error {
		if hc == nil {
			return errors.New("creative: WithHTTPClient: nil *http.Client")
		}
		s.hc = hc
		return nil
	}
}

// WithMaxRetries sets how many times a failed attempt is retried (0 turns
// retries off). The default is DefaultMaxRetries.
func WithMaxRetries(n int) Option {
	return func(s *settings) error {
		if n < 0 {
			return fmt.Errorf("creative: WithMaxRetries: %d is negative", n)
		}
		s.maxRetries = n
		return nil
	}
}

// WithRetryWait sets the bounds of the exponential backoff: the first retry
// waits up to min, each later one up to twice as long, never above max. The
// defaults are DefaultRetryWaitMin and DefaultRetryWaitMax.
func WithRetryWait(min, max time.Duration) Option {
	return func(s *settings) error {
		if min <= 0 || max < min {
			return fmt.Errorf("creative: WithRetryWait: want 0 < min <= max, got %v and %v", min, max)
		}
		s.waitMin, s.waitMax = min, max
		return nil
	}
}

// WithTimeout bounds each call as a whole, retries and backoffs included
// (for a streamed answer, until its body is closed). Zero, the default,
// leaves the bound to the context.
func WithTimeout(d time.Duration) Option {
	return func(s *settings) error {
		if d < 0 {
			return fmt.Errorf("creative: WithTimeout: %v is negative", d)
		}
		s.timeout = d
		return nil
	}
}

// WithLogger makes the Client log each attempt at Debug level and each retry
// at Info level. Without it the Client logs nothing. The access key is never
// logged.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) error { s.logger = l; return nil }
}

// WithUserAgent appends ua to the User-Agent header, after
// "creative-go/<version> (go<version>)".
func WithUserAgent(ua string) Option {
	return func(s *settings) error {
		if strings.ContainsAny(ua, "\r\n") {
			return errors.New("creative: WithUserAgent: line breaks are not allowed")
		}
		s.userAgent = ua
		return nil
	}
}

// WithInsecureHTTP allows a plain http:// base URL to a host that is not a
// loopback address. Without it such a URL is refused by New, since the access
// key would cross the network in clear text.
func WithInsecureHTTP() Option {
	return func(s *settings) error { s.insecure = true; return nil }
}

// New returns a Client configured by opts, falling back to the environment
// variables CREATIVE_BASE_URL and CREATIVE_ACCESS_KEY. It fails when the base
// URL or key is missing or malformed, and when the base URL is plain http to
// a host that is not loopback without WithInsecureHTTP.
func New(opts ...Option) (*Client, error) {
	s := settings{
		baseURL:    os.Getenv(EnvBaseURL),
		accessKey:  os.Getenv(EnvAccessKey),
		maxRetries: DefaultMaxRetries,
		waitMin:    DefaultRetryWaitMin,
		waitMax:    DefaultRetryWaitMax,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&s); err != nil {
			return nil, err
		}
	}
	base, err := parseBaseURL(s.baseURL, s.insecure)
	if err != nil {
		return nil, err
	}
	if s.accessKey == "" {
		return nil, fmt.Errorf("creative: no access key: set %s or use WithAccessKey", EnvAccessKey)
	}
	for _, r := range s.accessKey {
		if r < 0x20 || r == 0x7f {
			return nil, errors.New("creative: the access key holds a control character (check " + EnvAccessKey + " or WithAccessKey)")
		}
	}
	ua := "creative-go/" + Version + " (" + runtime.Version() + ")"
	if s.userAgent != "" {
		ua += " " + s.userAgent
	}
	key := []string{s.accessKey}
	c := &Client{
		base:       base,
		prefix:     strings.TrimRight(base.String(), "/"),
		key:        func() []string { return key },
		maxRetries: s.maxRetries,
		waitMin:    s.waitMin,
		waitMax:    s.waitMax,
		timeout:    s.timeout,
		logger:     s.logger,
		userAgent:  []string{ua},
	}
	c.hc = c.httpClient(s.hc)
	return c, nil
}

func parseBaseURL(raw string, insecure bool) (*url.URL, error) {
	if raw == "" {
		return nil, fmt.Errorf("creative: no base URL: set %s or use WithBaseURL", EnvBaseURL)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("creative: base URL %q is not an http(s) URL with a host (check %s or WithBaseURL)", raw, EnvBaseURL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("creative: base URL must not carry user information (check %s or WithBaseURL)", EnvBaseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("creative: base URL %q must not carry a query or fragment (check %s or WithBaseURL)", raw, EnvBaseURL)
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

// httpClient copies the user's client (or builds a pooled one) and sets the
// redirect rule that keeps the access key on the base URL's origin.
func (c *Client) httpClient(user *http.Client) *http.Client {
	var hc http.Client
	if user != nil {
		hc = *user
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 256
		t.MaxIdleConnsPerHost = 128
		hc.Transport = t
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	// The wrapper hides CloseIdleConnections, which go-retryablehttp calls
	// after every call that gives up: closing the shared pool there would
	// cost every other goroutine its warm connections.
	hc.Transport = keepIdle{rt}
	next := hc.CheckRedirect
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !c.sameOrigin(req.URL) {
			req.Header.Del(headerAccessKey)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &hc
}

type keepIdle struct{ http.RoundTripper }

// CloseIdleConnections closes the idle connections of the Client's
// transport, as http.Client.CloseIdleConnections does. Calls in flight are
// not affected.
func (c *Client) CloseIdleConnections() {
	if k, ok := c.hc.Transport.(keepIdle); ok {
		if ci, ok := k.RoundTripper.(interface{ CloseIdleConnections() }); ok {
			ci.CloseIdleConnections()
		}
	}
}

func (c *Client) sameOrigin(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, c.base.Scheme) &&
		strings.EqualFold(u.Hostname(), c.base.Hostname()) &&
		portOf(u) == portOf(c.base)
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

// GoString is String, so %#v does not print the access key either.
func (c *Client) GoString() string { return c.String() }

// Format prints the Client as String does for every verb, so no verb or flag
// (%v, %+v, %#v, %s) prints the access key.
func (c *Client) Format(f fmt.State, _ rune) { io.WriteString(f, c.String()) }

// LogValue describes the Client to log/slog without its access key.
func (c *Client) LogValue() slog.Value {
	if c == nil {
		return slog.StringValue("creative.Client(nil)")
	}
	return slog.GroupValue(slog.String("base_url", c.prefix), slog.String("access_key", redacted))
}

const (
	redacted        = "[redacted]"
	headerAccessKey = "X-Access-Key"
)

var jsonValue = []string{"application/json"}

// request is one call as the pipeline sees it.
type request struct {
	op     string // "image/text-to-image"; the path is /image/v1/text-to-image
	rawURL string // set for Download: an absolute URL, sent without the key
	method string
	body   any // JSON value, or *multipartBody
	accept string
}

// call is the state of one call across its attempts.
type call struct {
	rc         retryablehttp.Client // this call's retry loop, with hooks bound to it
	c          *Client
	op         string
	attempts   int
	started    time.Time
	retryAfter time.Duration // asked for by the last answer
	tooLong    bool          // Retry-After above MaxRetryAfter ended the retries
	oneShot    *oneShotBody  // non-nil when the body cannot be replayed
	spent      bool          // the one-shot body's bytes went out and the retry was refused
}

// do sends r with retries and returns a response with a 2xx status, or an
// error: *APIError for any other answer, *NetworkError when none came. The
// caller closes the response body. release must be called once the body is
// done with; it ends the call's timeout.
func (c *Client) do(ctx context.Context, r *request) (resp *http.Response, release func(), cl *call, err error) {
	cl = &call{c: c, op: r.op}
	if err := ctx.Err(); err != nil {
		return nil, nil, cl, &NetworkError{Operation: r.op, Err: err}
	}
	done := func() {}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		done = cancel
	}
	defer func() {
		if err != nil {
			done()
		}
	}()

	target := r.rawURL
	if target == "" {
		area, name, _ := strings.Cut(r.op, "/")
		target = c.prefix + "/" + area + "/v1/" + name
	}
	var body any
	contentType := ""
	switch b := r.body.(type) {
	case nil:
	case *multipartBody:
		body, cl.oneShot = b.readerFunc()
		contentType = b.contentType()
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return nil, nil, cl, fmt.Errorf("creative: %s: encoding the request: %w", r.op, err)
		}
		body = js
		contentType = "application/json"
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return nil, nil, cl, fmt.Errorf("creative: %s: %w", r.op, err)
	}
	// The header values are shared, read-only slices: building the header
	// costs one map, not one slice per value.
	h := make(http.Header, 4)
	if r.rawURL == "" {
		h[headerAccessKey] = c.key()
	}
	if contentType == "application/json" {
		h["Content-Type"] = jsonValue
	} else if contentType != "" {
		h["Content-Type"] = []string{contentType}
	}
	if r.accept == "application/json" {
		h["Accept"] = jsonValue
	} else {
		h["Accept"] = []string{r.accept}
	}
	h["User-Agent"] = c.userAgent
	req.Header = h

	rc := &cl.rc
	rc.HTTPClient = c.hc
	rc.RetryWaitMin, rc.RetryWaitMax, rc.RetryMax = c.waitMin, c.waitMax, c.maxRetries
	rc.RequestLogHook, rc.CheckRetry, rc.Backoff = cl.onAttempt, cl.checkRetry, cl.backoff
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	cl.started = time.Now()
	resp, err = rc.Do(req)
	if err != nil {
		if resp != nil {
			drainAndClose(resp.Body)
		}
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w (%v)", ctxErr, err)
		}
		if cl.spent {
			err = fmt.Errorf("%w (%s)", err, notReplayed)
		}
		return nil, nil, cl, &NetworkError{Operation: r.op, Attempts: cl.attempts, Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, nil, cl, cl.statusError(resp)
	}
	return resp, done, cl, nil
}

// notReplayed explains why a retryable failure of an upload was not retried.
const notReplayed = "not retried: the upload came from a one-shot reader whose bytes were already sent; give a path, bytes or an io.Seeker to make it retryable"

// onAttempt counts attempts; go-retryablehttp calls it before each one.
func (cl *call) onAttempt(_ retryablehttp.Logger, _ *http.Request, i int) {
	cl.attempts = i + 1
	cl.started = time.Now()
}

// checkRetry is the client's retry policy as go-retryablehttp asks for it:
// it logs the attempt, then decides with retryable and the Retry-After rule.
func (cl *call) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if l := cl.c.logger; l != nil {
		attrs := []any{"operation", cl.op, "attempt", cl.attempts, "duration", time.Since(cl.started)}
		if resp != nil {
			attrs = append(attrs, "status", resp.StatusCode, "bytes", resp.ContentLength)
		} else if err != nil {
			attrs = append(attrs, "error", err.Error())
		}
		l.LogAttrs(ctx, slog.LevelDebug, "creative: attempt", argsToAttrs(attrs)...)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return false, ctxErr
	}
	cl.retryAfter = 0
	if !retryable(resp, err) {
		return false, nil
	}
	if cl.oneShot != nil && cl.oneShot.sent() {
		cl.spent = true
		return false, nil
	}
	if d, ok := retryAfter(resp, time.Now()); ok {
		cl.retryAfter = d
		if d > MaxRetryAfter {
			cl.tooLong = true
			return false, nil
		}
	}
	return true, nil
}

// retryable reports whether an attempt that ended with resp or err may be
// sent again. Connection failures and 408, 429, 500, 502, 503 and 504 are
// passing troubles; 400 is the service's definitive answer, and any other
// status (other 4xx, 501, 2xx, 3xx) will not change on a retry.
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

// transient reports whether a transport error may pass on its own: not a
// context's end, a certificate problem, a refused redirect or a request the
// transport cannot send at all.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalidCert      x509.CertificateInvalidError
		hostname         x509.HostnameError
		verification     *tls.CertificateVerificationError
		notReplayable    *replayError
	)
	if errors.As(err, &unknownAuthority) || errors.As(err, &invalidCert) ||
		errors.As(err, &hostname) || errors.As(err, &verification) || errors.As(err, &notReplayable) || errors.As(err, new(*sourceError)) {
		return false
	}
	msg := err.Error()
	if strings.Contains(msg, "redirects") || strings.Contains(msg, "unsupported protocol scheme") ||
		strings.Contains(msg, "invalid header field") {
		return false
	}
	return true
}

// retryAfter reads the Retry-After header of a 429 or 503 answer, in seconds
// or as an HTTP date.
func retryAfter(resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return 0, false
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(24*time.Hour/time.Second) {
			secs = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
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
	if l := cl.c.logger; l != nil {
		attrs := []slog.Attr{slog.String("operation", cl.op), slog.Int("attempt", cl.attempts), slog.Duration("wait", wait)}
		if resp != nil {
			attrs = append(attrs, slog.Int("status", resp.StatusCode))
		}
		l.LogAttrs(context.Background(), slog.LevelInfo, "creative: retrying", attrs...)
	}
	return wait
}

func argsToAttrs(kv []any) []slog.Attr {
	attrs := make([]slog.Attr, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		attrs = append(attrs, slog.Any(kv[i].(string), kv[i+1]))
	}
	return attrs
}

// statusError reads a bounded part of a failed answer and closes it.
func (cl *call) statusError(resp *http.Response) error {
	defer drainAndClose(resp.Body)
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{
		Operation:  cl.op,
		StatusCode: resp.StatusCode,
		Attempts:   cl.attempts,
		Body:       cl.c.redact(raw),
	}
	if d, ok := retryAfter(resp, time.Now()); ok {
		e.RetryAfter = d
	}
	var env struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Message != "" {
		e.Message = string(cl.c.redact([]byte(env.Message)))
	} else {
		e.Message = describeBody(resp.Header.Get("Content-Type"), e.Body)
	}
	if cl.spent {
		e.Message += " (" + notReplayed + ")"
	}
	if cl.tooLong {
		e.Message += fmt.Sprintf(" (the service asked to wait %v before retrying, more than the %v the client waits)", e.RetryAfter, MaxRetryAfter)
	}
	return e
}

// describeBody says what a body that is not an envelope holds, in a short
// line fit for an error message.
func describeBody(contentType string, body []byte) string {
	if len(body) == 0 {
		return "empty body"
	}
	snippet := strings.Join(strings.Fields(string(body)), " ")
	if len(snippet) > 120 {
		snippet = snippet[:120] + "..."
	}
	if contentType == "" {
		contentType = "no content type"
	}
	return fmt.Sprintf("body is not the JSON envelope (%s): %q", contentType, snippet)
}

// redact removes the access key from text that came from the network, in
// case a server echoes it.
func (c *Client) redact(b []byte) []byte {
	if k := c.key()[0]; len(k) >= 4 && bytes.Contains(b, []byte(k)) {
		return bytes.ReplaceAll(b, []byte(k), []byte(redacted))
	}
	return b
}

func drainAndClose(rc io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(rc, 64<<10))
	_ = rc.Close()
}

// Download streams the file at u, a URL returned by the service, into w and
// returns the number of bytes written. The access key is never sent: the
// file may live on another host. Only http and https URLs are accepted, and
// an answer other than 2xx is an *APIError. Nothing is capped: the whole
// file is written.
func (c *Client) Download(ctx context.Context, u URL, w io.Writer) (int64, error) {
	const op = "download"
	pu, err := url.Parse(string(u))
	if err != nil || pu.Host == "" || (pu.Scheme != "http" && pu.Scheme != "https") {
		return 0, &ValidationError{Operation: op, Field: "url", Rule: "must be an http or https URL", Value: strconv.Quote(string(u))}
	}
	resp, release, cl, err := c.do(ctx, &request{op: op, rawURL: pu.String(), method: http.MethodGet, accept: "*/*"})
	if err != nil {
		return 0, err
	}
	defer release()
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, &NetworkError{Operation: op, Attempts: cl.attempts, Err: fmt.Errorf("after %d bytes: %w", n, err)}
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, &NetworkError{Operation: op, Attempts: cl.attempts, Err: fmt.Errorf("got %d of %d bytes: %w", n, resp.ContentLength, io.ErrUnexpectedEOF)}
	}
	return n, nil
}
