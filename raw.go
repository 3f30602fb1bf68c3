package creative

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
)

// This file is the raw call: any method and path under the base URL, for an
// endpoint the SDK does not wrap yet, through the same pipeline as every
// operation (do): the key, the redirect policy, the retries and their
// pay-once verdicts, the rate limiter, the pause, the middleware, the
// bounds on the answer.

// Execute sends one request of method to path, under the base URL, through
// the pipeline every operation goes through: the access key, the retry
// policy (not sent and refused are retried; an outcome unknown is not,
// unless WithRetryMayPayAgain), the Client's pause and rate limiter, the
// middleware, the redirect policy, WithResponseInto, WithJSONSet and the
// bound on the answer's size. It is for an endpoint of the service the SDK
// does not wrap yet.
//
// path is a path under the base URL, with or without its leading slash, and
// may carry a query ("image/v2/new-thing?x=1"). A path that would leave the
// base URL (an absolute URL, a host, "." or ".." segments, also
// percent-encoded) is refused before anything is sent.
//
// params is the request's body:
//   - nil: no body;
//   - []byte: sent as it is, as application/json;
//   - an io.Reader: streamed, as application/json unless it has a method
//     ContentType() string. A retry needs the body again: an io.ReaderAt
//     with a Size() int64 method (bytes.Reader, strings.Reader) or an
//     io.Seeker is read again from where it stood when Execute was called;
//     any other reader is sent once and never retried (the error says so);
//   - any other value: encoded as JSON with encoding/json.
//
// res receives the answer, which must be a 2xx (any other status is an
// *APIError, as for every operation):
//   - nil: the answer is read (to its end, bounded) and dropped;
//   - *[]byte: the body, bounded by WithMaxResponseBytes;
//   - **http.Response: the response, its body streamed and bounded; the
//     caller must close the body, which ends the call. Its header values
//     are redacted and its Request carries no access key, as
//     WithResponseInto's;
//   - any other pointer: the body decoded as JSON with encoding/json.
//
// Unless res is **http.Response, an answer that is the service's envelope
// with success false is an *APIError, as it is for every operation. The
// operation in errors is the method and path, such as
// "POST /image/v2/new-thing".
func (c *Client) Execute(ctx context.Context, method, path string, params any, res any, opts ...Option) error {
	if err := c.usable(ctx, "Execute"); err != nil {
		return err
	}
	op := c.own().redact(method + " " + path) // errors name the call by it
	target, err := c.rawTarget(op, method, path)
	if err != nil {
		return err
	}
	body, err := rawBodyOf(op, params)
	if err != nil {
		return err
	}
	if res != nil && !isPointer(res) { // a nil *[]byte or **http.Response too: the answer would have nowhere to go
		return &ValidationError{Operation: op, Field: "res", Rule: "must be nil, *[]byte, **http.Response or a pointer to a value to decode the answer into, and not a nil pointer", Value: fmt.Sprintf("%T", res)}
	}
	rs, err := c.do(ctx, &request{op: op, method: method, target: target, body: body, accept: jsonValue[0]}, opts)
	if err != nil {
		return err
	}
	if dst, ok := res.(**http.Response); ok {
		*dst = rs.stream()
		return nil
	}
	defer rs.Close()
	rs.err = rs.readRaw(res)
	return rs.err
}

// Post is Execute with method POST.
func (c *Client) Post(ctx context.Context, path string, params any, res any, opts ...Option) error {
	return c.Execute(ctx, http.MethodPost, path, params, res, opts...)
}

// Get is Execute with method GET and no body.
func (c *Client) Get(ctx context.Context, path string, res any, opts ...Option) error {
	return c.Execute(ctx, http.MethodGet, path, nil, res, opts...)
}

// rawTarget checks method and path and returns the URL under the base URL
// they name. Anything that could lead the request, and the key with it,
// off the base URL is refused here, before anything is sent.
func (c *Client) rawTarget(op, method, path string) (string, error) {
	refuse := func(rule string) error {
		return &ValidationError{Operation: op, Field: "path", Rule: rule}
	}
	own := c.own()
	if !validHeaderName(method) {
		return "", &ValidationError{Operation: op, Field: "method", Rule: "must be an HTTP method such as POST"}
	}
	if own.holds(method) {
		return "", &ValidationError{Operation: op, Field: "method", Rule: "must not hold the access key"}
	}
	rel, why := relativePath(path)
	if why != "" {
		return "", refuse(why)
	}
	target := c.prefix + "/" + rel.String()
	u, err := url.Parse(target)
	if err != nil || !c.sameOrigin(u) || !strings.HasPrefix(u.Path, strings.TrimRight(c.base.Path, "/")+"/") {
		return "", refuse("must stay under the base URL")
	}
	if own.holds(target) {
		return "", refuse("must not hold the access key")
	}
	return target, nil
}

// keyless refuses a raw call whose method or path holds one of the call's
// keys, its own (WithAccessKey given to the call) among them, before
// anything is sent.
func (cl *call) keyless(r *request) error {
	switch {
	case r.target == "":
		return nil
	case cl.holds(r.method):
		return &ValidationError{Operation: cl.redact(r.op), Field: "method", Rule: "must not hold the access key"}
	case cl.holds(r.target):
		return &ValidationError{Operation: cl.redact(r.op), Field: "path", Rule: "must not hold the access key"}
	}
	return nil
}

// relativePath parses path as a relative reference that stays below
// where it is resolved, or says why it is not one.
func relativePath(path string) (*url.URL, string) {
	for i := 0; i < len(path); i++ {
		if path[i] < ' ' || path[i] == 0x7f || path[i] == '\\' {
			return nil, "must not hold a control character or a backslash"
		}
	}
	rel, err := url.Parse(strings.TrimLeft(path, "/"))
	switch {
	case err != nil:
		return nil, "is not a URL path: " + err.Error()
	case strings.HasPrefix(path, "//"), rel.Scheme != "", rel.Host != "", rel.User != nil, rel.Opaque != "":
		return nil, "must be a path under the base URL, not a URL of its own: the access key goes only to the base URL"
	case rel.Fragment != "" || strings.Contains(path, "#"):
		return nil, "must not carry a fragment"
	}
	for i := 0; i < len(rel.Path); i++ { // the path decoded: "%5C", "%00"
		if rel.Path[i] < ' ' || rel.Path[i] == 0x7f || rel.Path[i] == '\\' {
			return nil, "must not hold a control character or a backslash, also percent-encoded"
		}
	}
	for _, seg := range strings.Split(rel.Path, "/") {
		if dotSegment(seg) {
			return nil, `must not hold "." or ".." segments, which would leave the base URL's path`
		}
	}
	return rel, ""
}

// dotSegment reports whether a server may read seg, a segment of a
// decoded path, as "." or "..": a segment of dots alone, or one that is
// once percent-decoded again (a server that decodes twice, "%252e%252e",
// "..%252f.."), each part cut before a ";" (Tomcat's "..;"), its spaces
// dropped, and its dots of other scripts ("．", "․", "‥") folded into ".",
// as Unicode normalization does.
func dotSegment(seg string) bool {
	for i := 0; i < 3; i++ {
		u, err := url.PathUnescape(seg)
		if err != nil || u == seg {
			break
		}
		seg = u
	}
	for _, part := range strings.FieldsFunc(seg, func(r rune) bool { return r == '/' || r == '\\' }) {
		if dotsOnly(part) {
			return true
		}
	}
	return false
}

// dotsOnly reports whether part, before any ";", is dots and spaces, with
// at least one dot.
func dotsOnly(part string) bool {
	part, _, _ = strings.Cut(part, ";")
	dots := 0
	for _, r := range part {
		switch r {
		case '.', '\uff0e', '\u2024', '\u2025', '\ufe52', '\u3002', '\uff61':
			dots++
		case ' ':
		default:
			return false
		}
	}
	return dots > 0
}

// isPointer reports whether v is a non-nil pointer.
func isPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && !rv.IsNil()
}

// rawBodyOf is the body of a raw call's params.
func rawBodyOf(op string, params any) (requestBody, error) {
	switch p := params.(type) {
	case nil:
		return &jsonBody{}, nil
	case []byte:
		return &jsonBody{data: p}, nil
	case json.RawMessage:
		return &jsonBody{data: p}, nil
	case io.Reader:
		return newReaderBody(op, p)
	}
	return newJSONBody(op, params)
}

// A readerBody is a raw call's io.Reader body: read again for each attempt
// from where it stood when the call began when it can be (an io.ReaderAt
// with a size, or an io.Seeker), else sent once.
type readerBody struct {
	op     string
	r      io.Reader
	ct     string
	at     io.ReaderAt
	seeker io.Seeker
	start  int64       // where the body starts in at or seeker
	n      int64       // its length, or -1 when unknown
	read   atomic.Bool // a one-shot reader was read from
}

func newReaderBody(op string, r io.Reader) (*readerBody, error) {
	b := &readerBody{op: op, r: r, ct: "application/json", n: -1}
	if t, ok := r.(interface{ ContentType() string }); ok && t.ContentType() != "" {
		if !validHeaderValue(t.ContentType()) {
			return nil, &ValidationError{Operation: op, Field: "params", Rule: "has a ContentType that holds a control character"}
		}
		b.ct = t.ContentType()
	}
	if at, ok := r.(interface {
		io.ReaderAt
		Size() int64
	}); ok {
		b.at, b.n = at, at.Size()
		if s, ok := r.(io.Seeker); ok {
			// A bytes.Reader that was read from starts where it stands.
			pos, err := s.Seek(0, io.SeekCurrent)
			if err != nil {
				return nil, &ValidationError{Operation: op, Field: "params", Rule: "cannot be read", Err: err}
			}
			b.start, b.n = pos, b.n-pos
		}
		return b, nil
	}
	if s, ok := r.(io.Seeker); ok {
		pos, err := s.Seek(0, io.SeekCurrent)
		if err == nil {
			var end int64
			if end, err = s.Seek(0, io.SeekEnd); err == nil {
				_, err = s.Seek(pos, io.SeekStart)
			}
			b.n = end - pos
		}
		if err != nil {
			return nil, &ValidationError{Operation: op, Field: "params", Rule: "cannot be read", Err: err}
		}
		b.seeker, b.start = s, pos
	}
	return b, nil
}

func (b *readerBody) contentType() string { return b.ct }
func (b *readerBody) size() int64         { return b.n }
func (b *readerBody) sent() bool          { return b.read.Load() }

func (b *readerBody) open() (io.Reader, error) {
	switch {
	case b.at != nil:
		return io.NewSectionReader(b.at, b.start, b.n), nil
	case b.seeker != nil:
		if _, err := b.seeker.Seek(b.start, io.SeekStart); err != nil {
			return nil, &sourceError{err: fmt.Errorf("rewinding the body: %w", err)}
		}
		return io.LimitReader(b.r, b.n), nil
	case b.read.Load():
		return nil, &sourceError{err: errors.New("the body was a one-shot reader, already sent")}
	}
	return onceReader{b}, nil
}

// onceReader reads a one-shot body, marking it sent at its first read.
type onceReader struct{ b *readerBody }

func (o onceReader) Read(p []byte) (int, error) {
	o.b.read.Store(true)
	return o.b.r.Read(p)
}

// stream hands the 2xx answer to a raw call's caller, redacted as
// WithResponseInto's (its Request carries no key), its body bounded by the
// call's cap and read within the call's context; closing it ends the
// call. Its Trailer is what came before the body was read.
func (rs *response) stream() *http.Response {
	resp := rs.cl.redactResponse(rs.Response, &rawStream{capped: capped{r: rs.Body, left: rs.cl.s.maxBytes, rs: rs}, rs: rs})
	rs.handOver(http.NoBody)
	return resp
}

// rawStream is the body of a streamed raw answer.
type rawStream struct {
	capped
	rs *response
}

func (s *rawStream) Read(p []byte) (int, error) {
	n, err := s.capped.Read(p)
	if err != nil && err != io.EOF && s.rs.err == nil {
		s.rs.err = err
	}
	return n, err
}

func (s *rawStream) Close() error { return s.rs.Close() }

// readRaw reads a raw call's 2xx answer into res, bounded as every answer
// is. A body that is the envelope with success false is the service's
// failure.
func (rs *response) readRaw(res any) error {
	body, held, err := rs.readBody()
	if err != nil {
		return err
	}
	defer held.release()
	if rs.endedByClose() && jsonCut(body) {
		// As decodeEnvelope: JSON the closing connection cut short is an
		// answer cut short, not an answer.
		return rs.readFailed(fmt.Errorf("the connection closed before the end of the answer's JSON: %w", io.ErrUnexpectedEOF))
	}
	body = rs.cl.redactBytes(body) // the answer's text reaches the caller only through the redactor
	if rs.cl.s.rawInto != nil {
		rs.keepRaw(body, false)
	}
	if msg, failed := failedEnvelope(body); failed {
		return rs.serviceFailure(body, msg)
	}
	switch dst := res.(type) {
	case nil:
	case *[]byte:
		*dst = body // the budget counts it no longer once released; the bytes are the caller's
	default:
		if err := json.Unmarshal(body, res); err != nil {
			return rs.unexpected(body, "the answer cannot be decoded into "+fmt.Sprintf("%T", res)+": "+err.Error())
		}
	}
	return nil
}

// failedEnvelope reports whether body is the service's envelope with
// success false, and its message.
func failedEnvelope(body []byte) (string, bool) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 || t[0] != '{' || !bytes.Contains(t, []byte(`"success"`)) {
		return "", false
	}
	var env struct {
		Success *bool  `json:"success"`
		Message string `json:"message"`
	}
	if json.Unmarshal(t, &env) != nil || env.Success == nil || *env.Success {
		return "", false
	}
	if env.Message == "" {
		env.Message = "success is false and no message was given"
	}
	return env.Message, true
}
