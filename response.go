package creative

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/segmentio/asm/base64"
)

// This file is the one gate every answer passes, success or failure,
// envelope or stream: it is bounded (size, time, decoded size), redacted
// before any of it reaches an error or a log, checked against what the
// operation promises, and decoded once.
//
// JSON is read with jsontext from github.com/go-json-experiment/json, the
// upstream of the standard library's encoding/json/v2 (behind GOEXPERIMENT
// in Go 1.26); it moves to encoding/json/jsontext when that lands.

// Bounds on what is read and kept of an answer.
const (
	// maxErrorBody bounds how much of a failed answer's body is read and kept.
	maxErrorBody = 64 << 10
	// maxMessage bounds a message from the service kept in an error.
	maxMessage = 1 << 10
	// errorBodyWait bounds the time spent reading a failed answer's body when
	// the call itself has no deadline.
	errorBodyWait = 10 * time.Second
	// maxHeaderBytes bounds the headers of an answer, 1xx answers before it
	// included, when the Client builds its own transport (net/http's default
	// is 10 MiB, which a flood of 1xx answers turns into some 80 MiB of
	// garbage per attempt). The service's headers are a few hundred bytes.
	maxHeaderBytes = 1 << 20
	// upfrontBudget bounds the memory reserved, across every call in the
	// process, for bodies on the word of their Content-Length alone: a
	// header that lies cannot make the client allocate more than this
	// before the bytes arrive.
	upfrontBudget = 64 << 20
)

// response is a 2xx answer on its way through the gate.
type response struct {
	*http.Response
	cl     *call
	cancel func() // ends the call's timeout
	closed bool
	handed bool // WithResponseInto has it
}

// Close closes the body and ends the call's timeout, and hands the response
// to WithResponseInto. It is safe to call more than once.
func (rs *response) Close() error {
	if rs.closed {
		return nil
	}
	rs.closed = true
	err := rs.Body.Close()
	rs.cancel()
	rs.handOver(http.NoBody)
	return err
}

// handOver makes the answer, with body as its Body, the destination of
// WithResponseInto, once: at Close (its body read and closed), or earlier
// when the body is the result itself (a speech stream).
func (rs *response) handOver(body io.ReadCloser) {
	dst := rs.cl.s.responseInto
	if dst == nil || rs.handed {
		return
	}
	rs.handed = true
	resp := *rs.Response
	resp.Body = body
	*dst = &resp
}

// redact removes the access keys from text that came from the network, in
// case a server echoes them: every string that leaves the SDK passes here,
// before it is truncated. It removes the call's key and, when the call gave
// its own, the Client's too: the server may know it from earlier calls.
func (cl *call) redact(s string) string {
	for _, f := range cl.secrets() {
		if strings.Contains(s, f) {
			s = strings.ReplaceAll(s, f, redacted)
		}
	}
	return s
}

// secrets are the texts redact removes: each key as it is and in the forms
// an echo gives it, escaped for a URL's query or path (with upper- or
// lower-case hex, as servers write either), quoted in Go or JSON (%q, \/)
// and in a JSON pointer (jsontext names a member by it), longest first.
// Keys shorter than 4 bytes are not looked for. They are worked out once a
// call, when first needed.
func (cl *call) secrets() []string {
	cl.secretsOnce.Do(func() {
		var forms []string
		add := func(f string) {
			if !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
		keys := cl.keys
		if cl.c != nil {
			keys = append(keys[:len(keys):len(keys)], cl.c.key()...)
		}
		for _, k := range keys {
			if len(k) < 4 {
				continue
			}
			q, p := url.QueryEscape(k), url.PathEscape(k)
			for _, f := range []string{k, q, p, lowerHex(q), lowerHex(p), strings.ReplaceAll(k, "/", `\/`),
				strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), strconv.Quote(k)[1 : len(strconv.Quote(k))-1]} {
				add(f)
			}
		}
		slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
		cl.forms = forms
	})
	return cl.forms
}

// lowerHex writes the %XX escapes of s in lower case.
func lowerHex(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerASCII(b[i+1]), lowerASCII(b[i+2])
		}
	}
	return string(b)
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// keyLen is the length of the longest text redact removes.
func (cl *call) keyLen() int {
	if f := cl.secrets(); len(f) > 0 {
		return len(f[0])
	}
	return 0
}

// keep returns at most n bytes of s, redacted first (so a key that straddles
// the cut is gone too), cut on a rune boundary.
func (cl *call) keep(s []byte, n int) []byte {
	window := s[:min(len(s), n+cl.keyLen())]
	out := []byte(cl.redact(string(window)))
	if len(out) <= n {
		return out
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut]
}

// message bounds a message from the service for an error. Only the part
// that may be kept is copied.
func (cl *call) message(s string) string {
	if len(s) <= maxMessage {
		return cl.redact(s)
	}
	kept := cl.keep([]byte(s[:min(len(s), maxMessage+cl.keyLen())]), maxMessage)
	return fmt.Sprintf("%s... (%d bytes in all)", kept, len(s))
}

// redactedError is an error whose text held a key: it says the text
// redacted and unwraps to its cause, redacted the same way.
type redactedError struct {
	err  error
	text string
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr returns err without the call's keys, in its own text and in the
// text of every error it wraps, which a caller reaches with errors.As or
// Unwrap: a *url.Error (whose URL may be a redirect's or a Download's)
// keeps its type with its URL redacted, any other error whose text holds a
// key becomes a redactedError. Errors below the last one that holds a key
// are kept as they are, so errors.Is still finds context.DeadlineExceeded,
// ECONNREFUSED or io.ErrUnexpectedEOF.
func (cl *call) redactErr(err error) error {
	holds := false
	for e := err; e != nil && !holds; e = errors.Unwrap(e) {
		holds = cl.redact(e.Error()) != e.Error()
	}
	if !holds {
		return err
	}
	if ue, ok := err.(*url.Error); ok {
		return &url.Error{Op: ue.Op, URL: cl.redact(ue.URL), Err: cl.redactErr(ue.Err)}
	}
	return &redactedError{err: cl.redactErr(errors.Unwrap(err)), text: cl.redact(err.Error())}
}

// requestIDHeaders are the headers that carry a request id, most specific
// first.
var requestIDHeaders = []string{"X-Request-Id", "X-Amzn-Requestid", "X-Amz-Cf-Id", "Cf-Ray"}

func requestID(h http.Header) string {
	for _, k := range requestIDHeaders {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// apiError starts the *APIError of this answer: status, attempts, headers
// and request id, redacted.
func (rs *response) apiError() *APIError {
	cl := rs.cl
	h := make(http.Header, len(rs.Header))
	for k, vs := range rs.Header {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = string(cl.keep([]byte(v), maxMessage))
		}
		h[k] = out
	}
	e := &APIError{
		Operation:   cl.op,
		StatusCode:  rs.StatusCode,
		Attempts:    cl.attempts,
		Header:      h,
		RequestID:   requestID(h),
		kind:        cl.costOf(kindOf(attemptSeen{status: rs.StatusCode})),
		mayHavePaid: cl.unknowns,
	}
	if d, ok := retryAfter(rs.Response, time.Now()); ok {
		e.RetryAfter = d
	}
	return e
}

// unexpected is the *APIError of a 2xx answer that is not what the
// operation promises. msg may be as long as the body: message bounds it.
func (rs *response) unexpected(body []byte, msg string) *APIError {
	e := rs.serviceFailure(body, msg)
	e.unexpected = true
	return e
}

// serviceFailure is the *APIError of a 2xx envelope in which the service
// says it failed (success false), with its message.
func (rs *response) serviceFailure(body []byte, msg string) *APIError {
	e := rs.apiError()
	e.Message = rs.cl.message(msg)
	e.Body = rs.cl.keep(body, maxErrorBody)
	return e
}

// statusError reads a bounded part of an answer that is not a 2xx and says
// what it was. A 1xx answer's body is never read: after a 101 it is another
// protocol's connection. A status outside HTTP's 1xx to 5xx is no answer
// the service gives.
func (rs *response) statusError() error {
	e := rs.apiError()
	var raw []byte
	if rs.StatusCode >= 200 {
		raw = rs.readErrorBody()
	}
	e.Body = rs.cl.keep(raw, maxErrorBody)
	if msg, ok := envelopeMessage(raw); ok && msg != "" {
		e.Message = rs.cl.message(msg)
	} else {
		e.Message = rs.cl.message(rs.cl.describeBody(rs.Header.Get("Content-Type"), raw))
	}
	switch {
	case rs.StatusCode < 200 || (rs.StatusCode >= 300 && rs.StatusCode < 400) || rs.StatusCode > 599:
		e.unexpected = true
		if loc := rs.Header.Get("Location"); loc != "" {
			e.Message = rs.cl.message(fmt.Sprintf("an answer of HTTP %d (to %s) instead of a result", rs.StatusCode, loc))
		} else {
			e.Message = fmt.Sprintf("an answer of HTTP %d instead of a result", rs.StatusCode)
		}
	case rs.cl.last.why != "":
		e.Message += " (" + rs.cl.last.why + ")"
	}
	return e
}

// readErrorBody reads at most maxErrorBody bytes of a failed answer, and a
// key's length more so that a key across that edge is whole when the body is
// redacted and cut, within the call's context and, when the call has no
// deadline, errorBodyWait.
func (rs *response) readErrorBody() []byte {
	if _, ok := rs.Request.Context().Deadline(); !ok {
		t := time.AfterFunc(errorBodyWait, func() { _ = rs.Body.Close() })
		defer t.Stop()
	}
	raw, _ := io.ReadAll(io.LimitReader(rs.Body, int64(maxErrorBody+rs.cl.keyLen())))
	return raw
}

// describeBody says what a body that is not an envelope holds, in a short
// line fit for an error message. The body is redacted before it is cut.
func (cl *call) describeBody(contentType string, body []byte) string {
	if len(body) == 0 {
		return "empty body"
	}
	snippet := strings.Join(strings.Fields(string(cl.keep(body, 512))), " ")
	if len(snippet) > 120 {
		snippet = snippet[:120] + "..."
	}
	if contentType == "" {
		contentType = "no content type"
	}
	return fmt.Sprintf("body is not the JSON envelope (%s): %q", contentType, snippet)
}

// upfront is the memory reserved for bodies on the word of a header.
var upfront atomic.Int64

// readBody reads a whole success body, within the call's cap on decoded
// bytes. Memory follows the bytes that arrived: the body is allocated at its
// Content-Length up front only within the process-wide upfrontBudget, and
// otherwise grows as bytes come.
func (rs *response) readBody() ([]byte, error) {
	limit := rs.cl.s.maxBytes
	n := rs.ContentLength
	if n > limit {
		return nil, rs.tooLarge(n)
	}
	if n >= 0 && upfront.Add(n) <= upfrontBudget {
		defer upfront.Add(-n)
		buf := make([]byte, n)
		if _, err := io.ReadFull(rs.Body, buf); err != nil {
			return nil, rs.readFailed(err)
		}
		return buf, nil
	} else if n >= 0 {
		upfront.Add(-n)
	}
	buf := make([]byte, 0, 32<<10)
	for {
		if len(buf) == cap(buf) {
			grow := min(2*int64(cap(buf)), limit+1)
			if n >= 0 {
				grow = min(grow, n+1)
			}
			// Not append: its growth policy would make the buffer up to
			// 2.5 times what was asked for.
			next := make([]byte, len(buf), max(grow, int64(len(buf))+512))
			copy(next, buf)
			buf = next
		}
		m, err := rs.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if int64(len(buf)) > limit {
			return nil, rs.tooLarge(-1)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, rs.readFailed(err)
		}
	}
}

// tooLarge is the error of an answer past the call's cap; declared is the
// Content-Length that said so, or -1 when the bytes did.
func (rs *response) tooLarge(declared int64) error {
	e := rs.apiError()
	e.unexpected = true
	what := "holds more"
	if declared >= 0 {
		what = fmt.Sprintf("declares %d bytes, more", declared)
	}
	e.Message = fmt.Sprintf("the answer %s than the %d bytes the client reads (raise it with WithMaxResponseBytes)", what, rs.cl.s.maxBytes)
	return e
}

// readFailed is the error of an answer cut off while it was read: the
// service may have done the work, so it is not sent again.
func (rs *response) readFailed(err error) error {
	cl := rs.cl
	err = fmt.Errorf("reading the answer: %w", err)
	return &NetworkError{Operation: cl.op, Attempts: cl.attempts, Err: cl.redactErr(err),
		kind: cl.costOf(attemptUnknown), mayHavePaid: cl.unknowns + 1}
}

// decoders are reused: a jsontext.Decoder reading a bytes.Buffer parses the
// buffer's own bytes, so values it returns alias the body.
var decoders = sync.Pool{New: func() any { return &bodyDecoder{} }}

type bodyDecoder struct {
	buf bytes.Buffer
	dec jsontext.Decoder
}

// An envelopeError is a body that is not the envelope, or an envelope that
// says it failed.
type envelopeError struct {
	msg    string
	failed bool // success is false: the service's own failure
}

func (e *envelopeError) Error() string { return e.msg }

// envelope walks an envelope in body and calls data with the decoder placed
// at the data value, whose kind it may check with PeekKind. It fails when
// the body is not one JSON object with a boolean success that is true and a
// data that is not null.
func envelope(body []byte, data func(d *jsontext.Decoder) error) error {
	bd := decoders.Get().(*bodyDecoder)
	defer func() {
		bd.buf = bytes.Buffer{}
		bd.dec.Reset(&bd.buf)
		decoders.Put(bd)
	}()
	bd.buf = *bytes.NewBuffer(body)
	bd.dec.Reset(&bd.buf)
	d := &bd.dec
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return &envelopeError{msg: "not a JSON object"}
	}
	var w envelopeWalk
	for d.PeekKind() == '"' {
		if err := w.member(d, data); err != nil {
			return &envelopeError{msg: "not valid JSON: " + err.Error()}
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return &envelopeError{msg: "not valid JSON: " + err.Error()}
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return &envelopeError{msg: "not one JSON value: more follows the envelope"}
	}
	return w.verdict()
}

// envelopeWalk is what envelope has seen of the object so far.
type envelopeWalk struct {
	success, sawSuccess, sawData bool
	msg                          jsontext.Value
	dataErr                      error
}

// member reads one name and its value.
func (w *envelopeWalk) member(d *jsontext.Decoder, data func(d *jsontext.Decoder) error) error {
	name, err := d.ReadValue()
	if err != nil {
		return err
	}
	switch string(name) {
	case `"success"`:
		tok, err := d.ReadToken()
		if err != nil || (tok.Kind() != 't' && tok.Kind() != 'f') {
			return errors.New("success is not a boolean")
		}
		w.success, w.sawSuccess = tok.Bool(), true
	case `"message"`:
		w.msg, err = d.ReadValue()
	case `"data"`:
		depth := d.StackDepth()
		_, before := d.StackIndex(depth)
		if d.PeekKind() != 'n' {
			w.sawData = true
			w.dataErr = data(d)
		}
		err = finishValue(d, depth, before)
	default:
		err = d.SkipValue()
	}
	return err
}

// verdict says what a well-formed envelope holds: nil for a success with
// data, or the error that says what is missing or what failed.
func (w *envelopeWalk) verdict() error {
	switch {
	case !w.sawSuccess:
		return &envelopeError{msg: "the answer has no success field"}
	case !w.success:
		text := unquoteBounded(w.msg, 4*maxMessage)
		if text == "" {
			text = "success is false and no message was given"
		}
		return &envelopeError{msg: text, failed: true}
	case !w.sawData:
		return &envelopeError{msg: "the envelope says success but carries no data"}
	}
	return w.dataErr
}

// errSyntax marks a data decoder's error as invalid JSON rather than an
// unexpected shape.
var errSyntax = errors.New("invalid JSON")

// finishValue moves d past the value that follows the name it read last in
// the object at depth (holding before tokens then), however much of it a data
// decoder read before it stopped.
func finishValue(d *jsontext.Decoder, depth int, before int64) error {
	for d.StackDepth() > depth {
		if _, err := d.ReadToken(); err != nil {
			return err
		}
	}
	if _, n := d.StackIndex(depth); n == before {
		return d.SkipValue()
	}
	return nil
}

// unquote returns the text of a raw JSON string, "" for anything else.
func unquote(v jsontext.Value) string {
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	// Sized once: the text is at most as long as its quoted form.
	b, err := jsontext.AppendUnquote(make([]byte, 0, len(v)), v)
	if err != nil {
		return ""
	}
	return string(b)
}

// unquoteBounded returns the text of at most the first n bytes of a raw JSON
// string, "" for anything else: a message is cut for errors anyway, and a
// 50 MiB one must not be copied whole first. A cut text ends with "...".
func unquoteBounded(v jsontext.Value, n int) string {
	if len(v) <= n {
		return unquote(v)
	}
	// Cut before any escape the limit would split, then close the string.
	cut := n
	if i := bytes.LastIndexByte(v[:cut], '\\'); i >= cut-6 {
		cut = i
	}
	b, err := jsontext.AppendUnquote(nil, append(bytes.Clone(v[:cut]), '"'))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s... (%d bytes in all)", b, len(v))
}

// envelopeMessage returns the message of an error body that is an envelope.
func envelopeMessage(body []byte) (string, bool) {
	if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '{' {
		return "", false
	}
	var env struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &env, json.MatchCaseInsensitiveNames(true)) != nil {
		return "", false
	}
	return env.Message, true
}

// decodeEnvelope reads the body of rs and decodes its data with data,
// turning every failure into the *APIError a caller gets.
func (rs *response) decodeEnvelope(inPlace bool, data func(d *jsontext.Decoder) error) error {
	body, err := rs.readBody()
	if err != nil {
		return err
	}
	head := body
	if inPlace {
		// Image data is decoded over the body: keep its start for an
		// error's Body.
		head = rs.cl.keep(body, 1<<10) // a redacted copy, cut after redaction
	}
	err = envelope(body, data)
	if err == nil {
		return nil
	}
	var ee *envelopeError
	switch {
	case errors.As(err, &ee) && ee.failed:
		return rs.serviceFailure(head, ee.msg)
	case errors.As(err, &ee):
		return rs.unexpected(head, ee.msg+": "+rs.cl.describeBody(rs.Header.Get("Content-Type"), head))
	}
	return rs.unexpected(head, err.Error())
}

// dataURL decodes a URL string and checks that it is an absolute http(s)
// URL.
func dataURL(d *jsontext.Decoder, where string) (URL, error) {
	if k := d.PeekKind(); k != '"' {
		return "", fmt.Errorf("%s is %s, want a non-empty URL string", where, kindName(k))
	}
	tok, err := d.ReadToken()
	if err != nil {
		return "", fmt.Errorf("%w: %v", errSyntax, err)
	}
	s := tok.String()
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		// Not cut here: the message is bounded once redacted.
		return "", fmt.Errorf("%s is %q, not an absolute http(s) URL", where, s)
	}
	return URL(s), nil
}

// dataURLs decodes an array of URL strings, or a lone URL string as a list
// of one.
func dataURLs(d *jsontext.Decoder) ([]URL, error) {
	if d.PeekKind() == '"' {
		u, err := dataURL(d, "data")
		if err != nil {
			return nil, err
		}
		return []URL{u}, nil
	}
	if k := d.PeekKind(); k != '[' {
		return nil, fmt.Errorf("data is %s, want an array of URL strings", kindName(k))
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	var out []URL
	for d.PeekKind() != ']' {
		u, err := dataURL(d, fmt.Sprintf("data[%d]", len(out)))
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	if len(out) == 0 {
		return nil, errors.New("data is an empty array, want URL strings")
	}
	return out, nil
}

// dataImages decodes image data of every shape the spec allows (an object
// with base64, an array of them, a bare string) and arrays of bare strings,
// at most max images. Each base64 string is decoded in place, in the body's
// own bytes, and validated in the same pass.
func dataImages(d *jsontext.Decoder, max int) ([]Image, error) {
	if d.PeekKind() != '[' {
		im, err := dataImage(d, "data")
		if err != nil {
			return nil, err
		}
		return []Image{im}, nil
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	var out []Image
	for d.PeekKind() != ']' {
		if len(out) == max {
			return nil, fmt.Errorf("data holds more than the %d image(s) asked for", max)
		}
		im, err := dataImage(d, fmt.Sprintf("data[%d]", len(out)))
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	if len(out) == 0 {
		return nil, errors.New("data is an empty array, want images")
	}
	return out, nil
}

// dataImage decodes one image: an object with a base64 string, or the
// string itself.
func dataImage(d *jsontext.Decoder, where string) (Image, error) {
	switch k := d.PeekKind(); k {
	case '"':
		return base64Image(d, where)
	case '{':
	default:
		return Image{}, fmt.Errorf("%s is %s, want an object with base64 or a base64 string", where, kindName(k))
	}
	if _, err := d.ReadToken(); err != nil {
		return Image{}, fmt.Errorf("%w: %v", errSyntax, err)
	}
	var (
		im    Image
		found bool
	)
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil {
			return Image{}, fmt.Errorf("%w: %v", errSyntax, err)
		}
		if string(name) != `"base64"` {
			if err := d.SkipValue(); err != nil {
				return Image{}, fmt.Errorf("%w: %v", errSyntax, err)
			}
			continue
		}
		if d.PeekKind() != '"' {
			return Image{}, fmt.Errorf("%s.base64 is %s, want a base64 string", where, kindName(d.PeekKind()))
		}
		if im, err = base64Image(d, where+".base64"); err != nil {
			return Image{}, err
		}
		found = true
	}
	if _, err := d.ReadToken(); err != nil {
		return Image{}, fmt.Errorf("%w: %v", errSyntax, err)
	}
	if !found {
		return Image{}, fmt.Errorf("%s is an object without a base64 string", where)
	}
	return im, nil
}

// base64Image decodes the base64 string at the decoder, in place: padded
// or not, wrapped in lines (\n or \r\n) or not, bare or as a data URL.
func base64Image(d *jsontext.Decoder, where string) (Image, error) {
	raw, err := d.ReadValue()
	if err != nil {
		return Image{}, fmt.Errorf("%w: %v", errSyntax, err)
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') >= 0 {
		// Escapes (\n line breaks, \/) are rare: unescape into a copy.
		s, err = jsontext.AppendUnquote(nil, raw)
		if err != nil {
			return Image{}, fmt.Errorf("%w: %v", errSyntax, err)
		}
	}
	if bytes.HasPrefix(s, []byte("data:")) {
		i := bytes.Index(s, []byte(";base64,"))
		if i < 0 || bytes.ContainsFunc(s[:i], func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return Image{}, fmt.Errorf("%s is a data URL without a clean ;base64, prefix", where)
		}
		s = s[i+len(";base64,"):]
	}
	enc := base64.StdEncoding
	if n := len(s) - bytes.Count(s, []byte{'\n'}) - bytes.Count(s, []byte{'\r'}); n%4 != 0 {
		enc = base64.RawStdEncoding
	}
	n, err := enc.Decode(s, s)
	if err != nil {
		return Image{}, fmt.Errorf("%s is not valid base64: %v", where, err)
	}
	if n == 0 {
		return Image{}, fmt.Errorf("%s is empty", where)
	}
	return Image{Data: s[:n:n]}, nil
}

// dataWriter decodes the writer tool's object.
func dataWriter(d *jsontext.Decoder) (*WriterResult, error) {
	if k := d.PeekKind(); k != '{' {
		return nil, fmt.Errorf("data is %s, want the writer object (language, useCase, word_count, text.choices)", kindName(k))
	}
	raw, err := d.ReadValue()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	var w struct {
		Language  string   `json:"language"`
		UseCase   string   `json:"useCase"`
		WordCount *float64 `json:"word_count"`
		Text      *struct {
			Choices []struct {
				Text      *string `json:"text"`
				Index     float64 `json:"index"`
				WordCount float64 `json:"word_count"`
			} `json:"choices"`
		} `json:"text"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("data is not the writer object (language, useCase, word_count, text.choices): %v", err)
	}
	if w.Text == nil || len(w.Text.Choices) == 0 {
		return nil, errors.New("data has no text.choices")
	}
	res := &WriterResult{Language: w.Language, UseCase: w.UseCase, Choices: make([]WriterChoice, len(w.Text.Choices))}
	total := 0
	for i, ch := range w.Text.Choices {
		if ch.Text == nil {
			return nil, fmt.Errorf("data.text.choices[%d] has no text", i)
		}
		res.Choices[i] = WriterChoice{Text: *ch.Text, Index: int(ch.Index), WordCount: int(ch.WordCount)}
		total += int(ch.WordCount)
	}
	res.WordCount = total
	if w.WordCount != nil {
		res.WordCount = int(*w.WordCount)
	}
	return res, nil
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '0':
		return "a number"
	}
	return "not valid JSON"
}

// audio checks that a 2xx answer to text-to-speech is audio, whatever its
// Content-Type says: a body that starts as JSON, HTML or XML, or a JSON or
// text type, is read (bounded) and reported instead.
func (rs *response) audio() (*Audio, error) {
	head, err := readHead(rs.Body, 512)
	if err != nil {
		return nil, rs.readFailed(err)
	}
	ct := rs.Header.Get("Content-Type")
	if notAudio(ct, head) {
		return nil, rs.notAudio(ct, head)
	}
	return &Audio{
		ContentType:   ct,
		ContentLength: rs.ContentLength,
		body:          &capped{r: io.MultiReader(bytes.NewReader(head), rs.Body), left: rs.cl.s.maxBytes, rs: rs},
		closer:        rs,
	}, nil
}

// readHead reads up to n bytes of r, stopping at the first read that brings
// a byte other than white space.
func readHead(r io.Reader, n int) ([]byte, error) {
	head := make([]byte, 0, n)
	for len(head) < cap(head) {
		m, err := r.Read(head[len(head):cap(head)])
		head = head[:len(head)+m]
		if err == io.EOF {
			return head, nil
		}
		if err != nil {
			return nil, err
		}
		if len(textStart(head)) > 0 {
			break
		}
	}
	return head, nil
}

// notAudio reports whether an answer with content type ct whose body starts
// with head is not audio: empty, JSON, HTML or XML, or typed as text or JSON.
func notAudio(ct string, head []byte) bool {
	first := textStart(head)
	return len(first) == 0 || strings.Contains(ct, "json") || strings.HasPrefix(ct, "text/") ||
		first[0] == '{' || first[0] == '[' || first[0] == '<'
}

// notAudio reads (bounded) an answer that is not audio and says what it is:
// the service's failure when it is an envelope with success false.
func (rs *response) notAudio(ct string, head []byte) error {
	body, err := io.ReadAll(io.MultiReader(bytes.NewReader(head), io.LimitReader(rs.Body, int64(maxErrorBody+rs.cl.keyLen()))))
	if err != nil {
		return rs.readFailed(err)
	}
	if len(textStart(body)) == 0 {
		return rs.unexpected(body, "an empty body where audio was promised")
	}
	var ee *envelopeError
	switch err := envelope(body, func(d *jsontext.Decoder) error { return d.SkipValue() }); {
	case errors.As(err, &ee) && ee.failed:
		e := rs.unexpected(body, ee.msg)
		e.unexpected = false
		return e
	case err != nil:
		return rs.unexpected(body, fmt.Sprintf("%s where audio was promised: %s", rs.cl.describeBody(ct, body), err))
	}
	return rs.unexpected(body, "a JSON envelope where audio was promised")
}

// textStart is where the text of a body starts, after a UTF-8 byte order
// mark (which some servers write before JSON) and blank space.
func textStart(b []byte) []byte {
	return bytes.TrimLeft(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), " \t\r\n")
}

// capped reads a stream up to the call's cap; past it, reading fails with
// the *APIError that says so, instead of stopping quietly.
type capped struct {
	r    io.Reader
	left int64
	rs   *response
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, c.rs.tooLarge(-1)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n - int(-c.left), c.rs.tooLarge(-1)
	}
	if err != nil && err != io.EOF {
		err = c.rs.readFailed(err)
	}
	return n, err
}

// dataURLOf decodes the URL string that is the whole data.
func dataURLOf(d *jsontext.Decoder) (URL, error) { return dataURL(d, "data") }

// images returns the data decoder of an operation that asked for up to max
// images.
func images(max int) func(*jsontext.Decoder) ([]Image, error) {
	return func(d *jsontext.Decoder) ([]Image, error) { return dataImages(d, max) }
}

// oneImage decodes the data of an operation that returns one image.
func oneImage(d *jsontext.Decoder) (Image, error) {
	ims, err := dataImages(d, 1)
	if err != nil {
		return Image{}, err
	}
	return ims[0], nil
}
