package creative

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/creativegen/creative-go/internal/ops"
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
	// MaxRetryAfter is the longest Retry-After the client waits for. A longer
	// demand ends the retries: the *APIError carries the wait asked for.
	MaxRetryAfter = 60 * time.Second
)

// A Client calls the Creative Generation Service. It holds the base URL, the
// access key and a pooled HTTP client; it is safe for concurrent use and is
// meant to be created once and shared.
type Client struct {
	base    *url.URL        // scheme and host the access key may be sent to
	prefix  string          // base URL without a trailing slash
	key     func() []string // the x-access-key header value; a closure, which fmt prints as an address
	set     settings        // the Client's options, without the key
	hc      *http.Client
	urls    map[string]string // operation name -> its URL under the base URL
	limiter RateLimiter       // nil without WithRateLimit or WithRateLimiter
	pause   *pause            // the wait a 429 or 503 asked of every call
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
	base, err := parseBaseURL(s.baseURL, s.insecure)
	if err != nil {
		return nil, err
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
		set:    s,
		pause:  &pause{},
		urls:   make(map[string]string, len(ops.All)),
	}
	for _, o := range ops.All {
		c.urls[o.Name] = c.prefix + o.Path()
	}
	c.limiter = s.limiter
	c.hc = c.httpClient(s.hc)
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
func (c *Client) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

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
	body   any    // JSON value, or *multipartBody
	accept string // "" is application/json
	result resultKind
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

// do sends r with the call's options and returns the answer: a 2xx
// response for the caller to decode and Close, or an error (*APIError for
// any other answer, *NetworkError when none came). Every answer passes
// response.go's gate.
func (c *Client) do(ctx context.Context, r *request, opts []Option) (*response, error) {
	s, key, err := c.callSettings(r.op, opts)
	if err != nil {
		return nil, err
	}
	cl := &call{c: c, op: r.op, s: s, keys: key, redactor: newRedactor(key, c.key())}
	if err := ctx.Err(); err != nil {
		return nil, &NetworkError{Operation: r.op, Err: err}
	}
	cancel := context.CancelFunc(func() {})
	if s.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
	}
	req, err := c.newRequest(ctx, cl, r)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := cl.send(req)
	if err != nil {
		// failure reads ctx: cancel after, or every failure would be
		// blamed on a cancellation.
		defer cancel()
		return nil, cl.failure(ctx, err)
	}
	rs := &response{Response: resp, cl: cl, cancel: cancel, result: r.result}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer rs.Close()
		return nil, rs.statusError()
	}
	return rs, nil
}

// newRequest builds the request of every attempt: URL, body and headers.
func (c *Client) newRequest(ctx context.Context, cl *call, r *request) (*http.Request, error) {
	target, method := r.rawURL, http.MethodGet
	if target == "" {
		u, ok := c.urls[r.op]
		if !ok {
			return nil, fmt.Errorf("creative: %s: not an operation of the service", r.op)
		}
		target, method = u, http.MethodPost
	}
	var (
		body        any // []byte or func() (io.Reader, error)
		size        int64
		contentType []string
	)
	switch b := r.body.(type) {
	case nil:
	case *multipartBody:
		body, cl.oneShot = b.open, b
		size = b.size()
		contentType = []string{b.contentType()}
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return nil, &ValidationError{Operation: r.op, Field: "request", Rule: "cannot be encoded as JSON: " + err.Error()}
		}
		body, size = js, int64(len(js))
		contentType = jsonValue
	}
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return nil, fmt.Errorf("creative: %s: %w", r.op, err)
	}
	cl.body, req.ContentLength = body, size
	// The header values are shared, read-only slices: building the header
	// costs one map, not one slice per value.
	extra := cl.s.header
	if r.rawURL != "" {
		// A download goes to another host: only the call's own headers go
		// with it, never the Client's, which are meant for the service.
		extra = callOnly(extra, c.set.header)
	}
	h := make(http.Header, 5+len(extra))
	for k, v := range extra {
		h[k] = v
	}
	if r.rawURL == "" {
		h[headerAccessKey] = cl.keys
	}
	if contentType != nil {
		h["Content-Type"] = contentType
	}
	switch r.accept {
	case "":
		h["Accept"] = jsonValue
	default:
		h["Accept"] = []string{r.accept}
	}
	h["User-Agent"] = cl.s.uaValue
	req.Header = h
	return req, nil
}

// invoke sends one call of op and decodes its envelope's data with data:
// an endpoint method is its validation plus this line.
func invoke[T any](ctx context.Context, c *Client, op string, body any, opts []Option, data func(*bodyDecoder) (T, error)) (T, error) {
	var v T
	rs, err := c.do(ctx, &request{op: op, body: body}, opts)
	if err != nil {
		return v, err
	}
	defer rs.Close()
	err = rs.decodeEnvelope(inPlace[T](), func(d *bodyDecoder) (err error) {
		v, err = data(d)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
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

// callOnly returns the headers of h that a call's options added to the
// Client's headers base.
func callOnly(h, base http.Header) http.Header {
	var out http.Header
	for k, vs := range h {
		if extra := vs[len(base[k]):]; len(extra) > 0 {
			if out == nil {
				out = http.Header{}
			}
			out[k] = extra
		}
	}
	return out
}
