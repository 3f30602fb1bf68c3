package creative

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"

	"github.com/creativegen/creative-go/internal/ops"
)

// This file is the request side of a call: what one call sends on every
// attempt (its URL, its headers, its body) and the rules its headers follow.

const (
	redacted        = "[redacted]"
	headerAccessKey = "X-Access-Key"
)

var jsonValue = []string{"application/json"}

// request is one call as the pipeline sees it.
type request struct {
	op     string             // "image/text-to-image"; the path is /image/v1/text-to-image
	rawURL string             // set for Download: an absolute URL, sent without the key
	body   requestBody        // nil for a request without a body (Download)
	accept string             // the Accept header; "" sends none: an operation answers its JSON envelope whatever it is asked
	method string             // a raw call's method (raw.go); "" is POST
	target string             // a raw call's URL under the base URL, sent with the key
	check  func([]byte) error // the request type's validation, run again on a body WithJSONSet changed (jsonset.go)
}

// A requestBody is what one call sends, on every attempt.
type requestBody interface {
	contentType() string
	size() int64              // the exact length in bytes, or -1 when unknown
	open() (io.Reader, error) // a fresh reader for each attempt
	sent() bool               // true once a body that cannot be replayed has gone out
}

// jsonBody is a request struct encoded as JSON once, before the first
// attempt; every attempt reads the same bytes.
type jsonBody struct{ data []byte }

// newJSONBody encodes v, the request struct of op. A value that cannot be
// encoded is a *ValidationError: nothing is sent.
func newJSONBody(op string, v any) (*jsonBody, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, &ValidationError{Operation: op, Field: "request", Rule: "cannot be encoded as JSON: " + err.Error()}
	}
	return &jsonBody{data: data}, nil
}

func (b *jsonBody) contentType() string      { return "application/json" }
func (b *jsonBody) size() int64              { return int64(len(b.data)) }
func (b *jsonBody) open() (io.Reader, error) { return bytes.NewReader(b.data), nil }
func (b *jsonBody) sent() bool               { return false }

// readCloser is open as a request's GetBody wants it.
func (b *jsonBody) readCloser() (io.ReadCloser, error) {
	if len(b.data) == 0 {
		return http.NoBody, nil // a raw call without a body
	}
	// net/http sends a body it knows to be in memory (a *bytes.Reader, in
	// io.NopCloser too) with its headers in one write.
	return io.NopCloser(bytes.NewReader(b.data)), nil
}

// The bodies a call sends: JSON here, multipart in multipart.go.
var (
	_ requestBody = (*jsonBody)(nil)
	_ requestBody = (*multipartBody)(nil)
)

// opTarget is where the calls of one operation go: its URL, parsed once
// by New as http.NewRequest parses it, and the header of a call that sends
// JSON with the Client's own settings, but for the access key; the same
// header with the key is kept behind a closure, as New keeps the key.
type opTarget struct {
	url    url.URL
	host   string             // the request's Host, as http.NewRequest sets it
	header http.Header        // every value a shared, read-only slice
	sent   func() http.Header // header with the Client's key, shared by its calls when no code of the caller sees their requests (shareHeaders), nil otherwise; a closure, which fmt prints as an address
}

// newTargets returns the target of each operation under the base URL,
// each parsed and its header built by the code that serves every call
// (http.NewRequest, setHeader), so a call that uses them sends what it
// would have sent without them.
func (c *Client) newTargets() (map[string]*opTarget, error) {
	ts := make(map[string]*opTarget, len(ops.All))
	cl := &call{s: &c.set}
	jsonReq := &request{body: &jsonBody{data: []byte("{}")}}
	for _, o := range ops.All {
		req, err := http.NewRequest(http.MethodPost, c.prefix+o.Path(), nil)
		if err != nil {
			return nil, fmt.Errorf("creative: %s: %w", o.Name, err)
		}
		c.setHeader(req.Header, cl, jsonReq)
		delete(req.Header, headerAccessKey)
		ts[o.Name] = &opTarget{url: *req.URL, host: req.Host, header: req.Header}
	}
	return ts, nil
}

// newRequest builds the request of every attempt of r: URL, method and
// headers. The body is not set: the attempts open it, each anew.
func (c *Client) newRequest(ctx context.Context, cl *call, r *request) (*http.Request, error) {
	if r.target == "" && r.rawURL == "" {
		t, ok := c.targets[r.op]
		if !ok {
			return nil, fmt.Errorf("creative: %s: not an operation of the service", r.op)
		}
		return cl.opRequest(ctx, t, r), nil
	}
	target, method := r.rawURL, http.MethodGet
	if r.target != "" {
		target, method = r.target, r.method
	}
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return nil, fmt.Errorf("creative: %s: %w", r.op, err)
	}
	c.setHeader(req.Header, cl, r)
	return req, nil
}

// opRequest is the request of an operation r to t, as
// http.NewRequestWithContext makes it from t's URL, without parsing it
// again: a copy of the URL the call owns, and, for JSON sent with the
// Client's own settings, t's header shared or, when the caller's code may
// see the request, a copy of it.
func (cl *call) opRequest(ctx context.Context, t *opTarget, r *request) *http.Request {
	cl.url = t.url
	cl.direct = cl.c.direct && cl.s == &cl.c.set
	req := http.Request{
		Method:     http.MethodPost,
		URL:        &cl.url,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Host:       t.host,
	}
	_, isJSON := r.body.(*jsonBody)
	switch {
	case !isJSON || cl.s != &cl.c.set || r.accept != "" || r.body.size() == 0:
		req.Header = make(http.Header)
		cl.c.setHeader(req.Header, cl, r)
	case t.sent != nil:
		req.Header = t.sent()
	default:
		req.Header = maps.Clone(t.header)
		req.Header[headerAccessKey] = cl.keys
	}
	return req.WithContext(ctx)
}

// shareHeaders gives each operation's target the header its calls send
// with the Client's own settings, key included, for them to share instead
// of a copy each, when nothing but net/http reads a call's first request:
// no middleware (which may change the request), no CheckRedirect of the
// caller's (which sees it in via), no cookie jar (http.Client adds its
// cookies to the request's own header) and net/http's own transport (a
// RoundTripper of the caller's might change it, though it should not),
// with no Proxy function of the caller's, which is given the request: own
// says the transport is the one New built, whose Proxy is net/http's.
// net/http only reads it: a redirect's request gets a header of its own,
// which the redirect policy may change (checkRedirect), and the request a
// caller gets through WithResponseInto carries a redacted copy.
func (c *Client) shareHeaders(own bool) {
	tr, std := c.rt.(*http.Transport)
	if !std || (tr.Proxy != nil && !own) || len(c.set.middleware) > 0 || c.redir != nil || c.hc.Jar != nil {
		return
	}
	for _, t := range c.targets {
		h := maps.Clone(t.header)
		h[headerAccessKey] = c.key()
		t.sent = func() http.Header { return h }
	}
}

// setHeader fills h, the header of every attempt of r. The values are
// shared, read-only slices: building it costs the map NewRequest made, not
// one slice per value.
func (c *Client) setHeader(h http.Header, cl *call, r *request) {
	extra := cl.s.header
	if r.rawURL != "" {
		// A download goes to another host: only the call's own headers go
		// with it, never the Client's, which are meant for the service.
		extra = callOnly(extra, c.set.header)
	}
	for k, v := range extra {
		h[k] = v
	}
	if r.rawURL == "" {
		h[headerAccessKey] = cl.keys
	}
	if r.body != nil && r.body.size() != 0 {
		if ct := r.body.contentType(); ct == jsonValue[0] {
			h["Content-Type"] = jsonValue
		} else {
			h["Content-Type"] = []string{ct}
		}
	}
	// The spec asks for no Accept header: an operation answers its JSON
	// envelope (or text-to-speech its audio) whatever a request accepts.
	// It is sent where it says what the SDK reads: audio or the error
	// envelope (speech), any file (a Download), JSON from an endpoint the
	// spec does not describe (a raw call).
	switch r.accept {
	case "":
	case jsonValue[0]:
		h["Accept"] = jsonValue
	default:
		h["Accept"] = []string{r.accept}
	}
	h["User-Agent"] = cl.s.uaValue
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

// reservedHeaders are set by the Client and cannot be set by WithHeader.
var reservedHeaders = map[string]bool{
	headerAccessKey: true, "Content-Type": true, "Content-Length": true,
	"User-Agent": true, "Host": true, "Transfer-Encoding": true, "Accept": true,
}

// validHeaderName reports whether s is an HTTP token (RFC 9110, 5.6.2).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || (c < 0x80 && isSeparator(c)) {
			return false
		}
	}
	return true
}

func isSeparator(c byte) bool {
	for i := 0; i < len(`"(),/:;<=>?@[\]{}`); i++ {
		if c == `"(),/:;<=>?@[\]{}`[i] {
			return true
		}
	}
	return false
}
