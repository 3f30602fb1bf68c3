package creative

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"
)

// An Option configures a Client in New, or one call when given to a method.
// A call's options override the Client's for that call only. Options that
// only make sense for a Client (WithBaseURL, WithHTTPClient,
// WithInsecureHTTP, WithRateLimiter) given to a call make the call fail before
// anything is sent.
type Option func(*settings) error

// settings are what the options set. A Client keeps its own; a call with
// options works on a copy.
type settings struct {
	// Client only.
	baseURL      string
	hc           *http.Client
	insecure     bool
	private      bool       // WithPrivateDownloads
	origins      []*url.URL // WithPrivateOrigin
	limiter      RateLimiter
	answerBudget int64  // WithAnswerBudget (budget.go); 0 is DefaultAnswerBudget
	clientOpt    string // the name of the last client-only option applied

	// Client and call.
	accessKey    string
	maxRetries   int
	waitMin      time.Duration
	waitMax      time.Duration
	timeout      time.Duration
	attemptLimit time.Duration
	logger       *slog.Logger
	userAgent    string
	uaValue      []string // the User-Agent header's value
	header       http.Header
	middleware   []Middleware
	responseInto **http.Response
	maxBytes     int64
	maxBytesSet  bool
	maxLinks     int // WithMaxLinks (budget.go)
	payAgain     bool
	traces       []*CallTrace // WithCallTrace (observe.go)
	jsonSets     []jsonSet    // WithJSONSet (jsonset.go)
	rawInto      *RawAnswer   // WithRawAnswerInto (jsonset.go)
}

// DefaultMaxResponseBytes bounds the decoded size of an answer the Client
// reads whole (every operation but text-to-speech): ten images of about
// 19 MiB each, as base64 inside the JSON envelope. WithMaxResponseBytes
// changes it.
const DefaultMaxResponseBytes = 256 << 20

// Middleware sees every attempt of a call: it may read or change the request
// and must call next (at most once) to send it, returning what next returns
// or an error. It runs once per attempt, retries included.
type Middleware func(req *http.Request, next MiddlewareNext) (*http.Response, error)

// MiddlewareNext sends the request on: to the next Middleware, and after the
// last one to the network.
type MiddlewareNext func(*http.Request) (*http.Response, error)

// clientOnly marks s as set by a client-only option.
func clientOnly(name string, s *settings, set func()) error {
	s.clientOpt = name
	set()
	return nil
}

// WithBaseURL sets the service's base URL, such as
// "https://api.example.com" or "https://gw.example.com/creative". It
// overrides CREATIVE_BASE_URL. Client only.
func WithBaseURL(u string) Option {
	return func(s *settings) error { return clientOnly("WithBaseURL", s, func() { s.baseURL = u }) }
}

// WithHTTPClient makes the Client send through hc (its transport, proxy and
// TLS settings). The Client copies hc and still adds its headers, retries and
// redirect rule; hc itself is not modified. Client only.
func WithHTTPClient(hc *http.Client) Option {
	return func(s *settings) error {
		if hc == nil {
			return errors.New("creative: WithHTTPClient: nil *http.Client")
		}
		if hc.Transport != nil && isNil(hc.Transport) {
			return fmt.Errorf("creative: WithHTTPClient: the client's Transport is a nil %T (leave it nil for the default)", hc.Transport)
		}
		if hc.Jar != nil && isNil(hc.Jar) {
			return fmt.Errorf("creative: WithHTTPClient: the client's Jar is a nil %T", hc.Jar)
		}
		return clientOnly("WithHTTPClient", s, func() { s.hc = hc })
	}
}

// WithInsecureHTTP allows a plain http:// base URL to a host that is not a
// loopback address. Without it such a URL is refused by New, since the access
// key would cross the network in clear text. Client only.
func WithInsecureHTTP() Option {
	return func(s *settings) error { return clientOnly("WithInsecureHTTP", s, func() { s.insecure = true }) }
}

// WithPrivateDownloads lets Download and DownloadFile fetch result URLs on
// loopback, link-local and private addresses (127.0.0.0/8, ::1,
// 169.254.0.0/16, fe80::/10, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
// fc00::/7), which they refuse by default when the base URL is on none of
// them: a result URL is the service's word, and one that points inside the
// caller's network (a cloud's metadata service at 169.254.169.254, say) is
// not followed. Without the option the address is checked where the
// connection is made, after DNS, so a name that resolves to such an address
// is refused too. A base URL on such an address (a local fake of the
// service) allows them without the option. Client only.
func WithPrivateDownloads() Option {
	return func(s *settings) error { return clientOnly("WithPrivateDownloads", s, func() { s.private = true }) }
}

// WithPrivateOrigin lets Download and DownloadFile fetch result URLs at
// origin ("http://127.0.0.1:8080": a scheme, a host and a port) though it
// is on a loopback, link-local or private address, and at no other such
// address: a narrow allowance, where WithPrivateDownloads allows every
// private address and a base URL on one (a local fake of the service)
// allows them all without it. Given, it replaces that allowance of the
// base URL: a Client of a local fake that serves its files at its own
// origin gives that origin, and a link to a metadata service on another
// port is refused. It may be given more than once. Client only.
func WithPrivateOrigin(origin string) Option {
	return func(s *settings) error {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
			return fmt.Errorf("creative: WithPrivateOrigin: want an http(s) origin such as http://127.0.0.1:8080, got %q", origin)
		}
		return clientOnly("WithPrivateOrigin", s, func() { s.origins = append(s.origins[:len(s.origins):len(s.origins)], u) })
	}
}

// A RateLimiter paces the attempts of a Client: Wait blocks until the next
// attempt may go, or returns an error (the context's, or the limiter's own)
// and the attempt is not sent. *rate.Limiter of golang.org/x/time/rate is
// one; a limiter shared by many processes (one quota for a fleet, kept in
// Redis, say) is another.
type RateLimiter interface {
	Wait(ctx context.Context) error
}

// WithRateLimiter makes every attempt of every call of the Client, retries
// included, wait on l first; the wait honours the call's context. A
// limiter of the Client's own is rate.NewLimiter(perSecond, burst) of
// golang.org/x/time/rate; one shared with other Clients or processes holds
// them all to one quota. Client only.
func WithRateLimiter(l RateLimiter) Option {
	return func(s *settings) error {
		if l == nil || isNil(l) {
			return fmt.Errorf("creative: WithRateLimiter: the limiter is nil (%T)", l)
		}
		return clientOnly("WithRateLimiter", s, func() { s.limiter = l })
	}
}

// WithAccessKey sets the access key sent in the x-access-key header. On New
// it overrides CREATIVE_ACCESS_KEY; on a call it sends that key for that call
// only (an empty key there leaves the Client's). Either way it is redacted
// from every error and log line.
func WithAccessKey(key string) Option {
	return func(s *settings) error {
		if !validHeaderValue(key) {
			return errors.New("creative: WithAccessKey: the key holds a control character")
		}
		s.accessKey = key
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

// WithRequestTimeout bounds each attempt until its answer's headers arrive.
// Fired before the request was written whole (a dead connection, a stalled
// upload), the attempt was not sent and is retried. Fired after, the service
// may be at work on it: the outcome is unknown, and the call returns at once
// with ErrOutcomeUnknown (WithRetryMayPayAgain retries it, at the price of
// maybe paying again). So it catches dead connections and slow uploads, not
// slow generations, which take minutes: there is no default, and zero leaves
// attempts unbounded (WithTimeout still bounds the call).
func WithRequestTimeout(d time.Duration) Option {
	return func(s *settings) error {
		if d < 0 {
			return fmt.Errorf("creative: WithRequestTimeout: %v is negative", d)
		}
		s.attemptLimit = d
		return nil
	}
}

// WithRetryMayPayAgain retries attempts whose outcome is unknown too: the
// request arrived whole and then the connection failed, the per-attempt
// timeout fired, or a 5xx other than 503 came back. The service may have
// done the work and charged for it already, so each such retry may be paid
// again: with the default two retries, one call may be paid up to three
// times. Without it those failures return at once with ErrOutcomeUnknown.
// Give it to New or to one call, only when an answer is worth paying again.
func WithRetryMayPayAgain() Option {
	return func(s *settings) error { s.payAgain = true; return nil }
}

// WithLogger makes the Client log each attempt at Debug level (with the
// answer's request id) and each retry at Info level. Without it nothing is
// logged; a nil logger, or one without a handler, is refused. The access
// key is never logged.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) error {
		switch {
		case l == nil:
			return errors.New("creative: WithLogger: nil *slog.Logger (leave the option out to log nothing)")
		case l.Handler() == nil || isNil(l.Handler()):
			return errors.New("creative: WithLogger: the logger has no handler (make it with slog.New)")
		}
		s.logger = l
		return nil
	}
}

// WithUserAgent appends ua to the User-Agent header, after
// "creative-go/<version> (go<version>)".
func WithUserAgent(ua string) Option {
	return func(s *settings) error {
		if !validHeaderValue(ua) {
			return errors.New("creative: WithUserAgent: control characters are not allowed")
		}
		s.userAgent = ua
		return nil
	}
}

// WithHeader adds a header to every request (on New) or to one call's
// requests. It cannot set x-access-key, Content-Type, Content-Length,
// User-Agent, Host, Transfer-Encoding or Accept, which the Client sets
// itself.
func WithHeader(key, value string) Option {
	return func(s *settings) error {
		if !validHeaderName(key) {
			return fmt.Errorf("creative: WithHeader: %q is not a valid header name", key)
		}
		ck := textproto.CanonicalMIMEHeaderKey(key)
		if reservedHeaders[ck] {
			return fmt.Errorf("creative: WithHeader: %s is set by the client and cannot be replaced", ck)
		}
		if !validHeaderValue(value) {
			return fmt.Errorf("creative: WithHeader: the value of %s holds a control character", ck)
		}
		h := s.header.Clone()
		if h == nil {
			h = http.Header{}
		}
		h.Add(ck, value)
		s.header = h
		return nil
	}
}

// WithMiddleware adds middleware that sees every attempt. A Client's
// middleware wraps a call's; among one option's list, the first is the
// outermost. An error a middleware returns instead of calling next fails
// the call at once: it is not retried. A middleware that gives the request
// a new context must derive it from the request's own, which tells the
// Client whether the request was written whole.
func WithMiddleware(m ...Middleware) Option {
	return func(s *settings) error {
		for _, f := range m {
			if f == nil {
				return errors.New("creative: WithMiddleware: nil Middleware")
			}
		}
		s.middleware = append(s.middleware[:len(s.middleware):len(s.middleware)], m...)
		return nil
	}
}

// WithResponseInto makes *dst the last attempt's response once the call
// returns: its status and headers, such as a request id. Its body has been
// read and closed already, except for a speech stream, which is the Audio.
// Its header values are redacted like every text from the other end, and
// its Request carries no access key. *dst stays nil when no answer came.
func WithResponseInto(dst **http.Response) Option {
	return func(s *settings) error {
		if dst == nil {
			return errors.New("creative: WithResponseInto: nil destination")
		}
		s.responseInto = dst
		return nil
	}
}

// WithMaxResponseBytes bounds the decoded size of an answer the Client reads
// whole, transparent decompression included; a larger answer fails with
// ErrUnexpectedResponse. The default is DefaultMaxResponseBytes. It also
// bounds a speech stream and, when given, a Download (which is otherwise not
// bounded).
func WithMaxResponseBytes(n int64) Option {
	return func(s *settings) error {
		if n <= 0 {
			return fmt.Errorf("creative: WithMaxResponseBytes: want a positive size, got %d", n)
		}
		s.maxBytes, s.maxBytesSet = n, true
		return nil
	}
}

// apply runs opts over s; for a call (op != "") a client-only option is an
// error that names it.
func (s *settings) apply(op string, opts []Option) error {
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(s); err != nil {
			return err
		}
		if op != "" && s.clientOpt != "" {
			return fmt.Errorf("creative: %s: %s configures a Client (give it to New), not one call", op, s.clientOpt)
		}
	}
	return nil
}
