package creative

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"
)

// This file is the one gate every answer passes, success or failure,
// envelope or stream: the response and its Close, the errors of a status
// that is not a success, and bounded reads (size, time, decoded size).
// Text from the answer passes the call's redactor (redact.go) before it
// reaches an error or a log; envelopes are walked in envelope.go and their
// data decoded in decode.go.

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
)

// response is a 2xx answer on its way through the gate.
type response struct {
	*http.Response
	cl     *call
	cancel func() // ends the call's timeout
	closed bool
	handed bool        // WithResponseInto has it
	err    error       // how reading the answer failed, for the call trace (observe.go)
	res    reservation // the answer's part of the Client's budget (readBody)
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
	if rs.cl.c.std && rs.ProtoMajor == 1 {
		// net/http's goroutine of the connection, which the body's end
		// woke, puts the connection back in the idle pool. Yielding lets
		// it do so before this goroutine sends again: without it, a caller
		// making many calls at once found no idle connection about a tenth
		// of the time and opened another (BenchmarkConcurrent).
		runtime.Gosched()
	}
	rs.handOver(http.NoBody)
	if rs.cl.ct != nil {
		rs.cl.traceEnd(rs.err)
	}
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
	*dst = rs.cl.redactResponse(rs.Response, body)
}

// redactHeader returns a copy of h with every value redacted and bounded.
func (r *redactor) redactHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		kept := make([]string, len(vs))
		for i, v := range vs {
			kept[i] = string(r.keep([]byte(v), maxMessage))
		}
		k = r.redact(k) // a name can echo the key too
		out[k] = append(out[k], kept...)
	}
	return out
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

// requestIDOf is the request id of h as a call tells it (an error, a
// trace, a log line): redacted and bounded as the headers of an *APIError
// are, so a server cannot make it longer than a message.
func (cl *call) requestIDOf(h http.Header) string {
	id := requestID(h)
	if id == "" {
		return ""
	}
	return string(cl.keep([]byte(id), maxMessage))
}

// apiError starts the *APIError of this answer: status, attempts, headers
// and request id, redacted.
func (rs *response) apiError() *APIError {
	cl := rs.cl
	h := cl.redactHeader(rs.Header)
	e := &APIError{
		Operation:   cl.op,
		StatusCode:  rs.StatusCode,
		Attempts:    cl.attempts,
		Header:      h,
		RequestID:   requestID(h),
		kind:        cl.costOf(kindOf(attemptSeen{status: rs.StatusCode})),
		mayHavePaid: cl.unknowns,
		resent:      cl.unknowns > 0 && kindOf(attemptSeen{status: rs.StatusCode}) != attemptUnknown,
	}
	if d, ok := retryAfter(rs.Response, time.Now()); ok {
		e.RetryAfter = d
	}
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
	if _, ok := rs.ctx().Deadline(); !ok {
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

// readBody reads a whole success body, within the call's cap on decoded
// bytes and the Client's answer budget (budget.go), which the body holds
// until release is called. Memory follows the bytes that arrived: a body
// whose Content-Length is known is read into one buffer of that length,
// made at once up to trustUpTo and past it once a 128th of the body came (a
// header that lies must send that much first), so that its memory is its
// length at any size; one without is read in chunks (readChunks). The
// reservation is the response's own: one body a response.
func (rs *response) readBody() (body []byte, held *reservation, err error) {
	limit := rs.cl.s.maxBytes
	n := rs.ContentLength
	if n > limit {
		return nil, nil, rs.tooLarge(n)
	}
	rs.res = rs.cl.c.reserve()
	r := &rs.res
	if n > r.b.size {
		return nil, nil, rs.overBudget(n, r.b.size)
	}
	defer func() {
		if err != nil {
			r.release()
		}
	}()
	if n >= 0 {
		if err := r.take(rs.ctx(), n); err != nil {
			return nil, nil, rs.readFailed(err)
		}
		body, err = rs.readKnown(n)
	} else {
		body, err = rs.readChunks(r, limit)
	}
	return body, r, err
}

// trustUpTo is the Content-Length up to which a body's buffer is made
// before its bytes come: a header that lies makes the client allocate at
// most this (within the budget) for nothing.
const trustUpTo = 4 << 20

// readKnown reads a body of Content-Length n: up to trustUpTo, into one
// buffer of n bytes; past it, the first 128th into a buffer that grows
// from 16 KiB, then the whole into one of n bytes.
func (rs *response) readKnown(n int64) ([]byte, error) {
	if n > trustUpTo && n/128 <= probeMax {
		return rs.readProbed(n)
	}
	first, start := n, n
	if n > trustUpTo {
		first, start = n/128, 16<<10
	}
	buf := make([]byte, 0, start)
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			c := min(2*int64(cap(buf)), first)
			if int64(len(buf)) >= first {
				c = n
			}
			next := make([]byte, len(buf), c)
			copy(next, buf)
			buf = next
		}
		m, err := rs.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF && int64(len(buf)) < n {
			err = fmt.Errorf("got %d of %d bytes: %w", len(buf), n, io.ErrUnexpectedEOF)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, rs.readFailed(err)
		}
	}
	return buf, nil
}

// probeMax bounds the first 128th of a body that readProbed reads into a
// buffer of probeBufs: bodies up to 16 MiB.
const probeMax = 128 << 10

// probeBufs hold the first 128th of bodies past trustUpTo, so that only the
// body's own buffer is allocated for it.
var probeBufs = sync.Pool{New: func() any { b := make([]byte, probeMax); return &b }}

// readProbed is readKnown of a body past trustUpTo whose first 128th fits
// in probeMax: that part is read into a reused buffer, then the body into
// one buffer of n bytes.
func (rs *response) readProbed(n int64) ([]byte, error) {
	pb := probeBufs.Get().(*[]byte)
	defer probeBufs.Put(pb)
	first := int(n / 128)
	probe := (*pb)[:first]
	if m, err := io.ReadFull(rs.Body, probe); err != nil {
		return nil, rs.readFailed(cutShort(err, int64(m), n))
	}
	// Made with its length at first: make([]byte, n) then copy would be
	// compiled to one call that clears all n bytes, even when the memory
	// comes fresh from the system, already clear.
	buf := make([]byte, first, n)
	copy(buf, probe)
	buf = buf[:n]
	if m, err := io.ReadFull(rs.Body, buf[first:]); err != nil {
		return nil, rs.readFailed(cutShort(err, int64(first+m), n))
	}
	return buf, nil
}

// cutShort says that a body of n bytes ended after got, when err is the
// end of the body.
func cutShort(err error, got, n int64) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("got %d of %d bytes: %w", got, n, io.ErrUnexpectedEOF)
	}
	return err
}

// chunkMax is the largest piece a body of unknown length is read in.
const chunkMax = 4 << 20

// readChunks reads a body of unknown length (chunked, or decompressed by
// the transport) in pieces, each reserved before it is allocated, then
// joins them in one buffer of the body's length. Joined, it takes twice its
// length for a moment: it may hold at most half the budget, which bounds
// its part of the budget's overdraft (budget.go) when it holds it.
func (rs *response) readChunks(r *reservation, limit int64) ([]byte, error) {
	ctx := rs.ctx()
	var (
		chunks [][]byte
		total  int64
	)
	most := min(limit, r.b.size/2)
	size := int64(32 << 10)
	for {
		size = min(size, most+1-total)
		if err := r.take(ctx, size); err != nil {
			return nil, rs.readFailed(err)
		}
		c := make([]byte, size)
		m, err := fill(rs.Body, c)
		chunks, total = append(chunks, c[:m]), total+int64(m)
		r.give(size - int64(m))
		if total > limit {
			return nil, rs.tooLarge(-1)
		}
		if total > most {
			return nil, rs.overBudget(-1, r.b.size)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, rs.readFailed(err)
		}
		size = min(2*size, chunkMax)
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	if err := r.take(ctx, total); err != nil {
		return nil, rs.readFailed(err)
	}
	body := make([]byte, 0, total)
	for _, c := range chunks {
		body = append(body, c...)
	}
	r.give(total)
	return body, nil
}

// fill reads r into p until p is full or a read fails, and returns that
// failure as it is: io.EOF for a body that ended, and anything else (an
// io.ErrUnexpectedEOF of a chunked body cut short among them) for one that
// did not, where io.ReadFull would call both an end.
func fill(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// ctx is the context of the request the answer is to; a middleware may
// answer without one.
func (rs *response) ctx() context.Context {
	if rs.Request != nil {
		return rs.Request.Context()
	}
	return context.Background()
}

// overBudget is the error of an answer that declares more bytes than the
// Client's answer budget holds, or (declared -1) of one without a
// Content-Length that holds more than half of it: read, it would not fit.
func (rs *response) overBudget(declared, size int64) error {
	e := rs.apiError()
	e.unexpected = true
	what := fmt.Sprintf("declares %d bytes, more than the %d bytes", declared, size)
	if declared < 0 {
		what = fmt.Sprintf("has no Content-Length and holds more than %d bytes, half the %d bytes", size/2, size)
	}
	e.Message = fmt.Sprintf("the answer %s of answers the Client holds at once (raise it with WithAnswerBudget)", what)
	return e
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
	ne := &NetworkError{Operation: cl.op, Attempts: cl.attempts, Err: cl.told(err),
		kind: cl.costOf(attemptUnknown), mayHavePaid: cl.unknowns + 1, resent: cl.unknowns > 0}
	if rs.err == nil {
		rs.err = ne
	}
	return ne
}

// copyTo copies a downloaded body to w, within the call's cap when one was
// given, and checks it is as long as it said.
func (rs *response) copyTo(w io.Writer) (int64, error) {
	limit := int64(1<<63 - 1)
	if rs.cl.s.maxBytesSet {
		limit = rs.cl.s.maxBytes
	}
	body := &capped{r: rs.Body, left: limit, rs: rs}
	head, err := rs.downloadHead(body)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(w, io.MultiReader(bytes.NewReader(head), body))
	if err != nil {
		switch err.(type) {
		case *APIError, *NetworkError:
			return n, err
		}
		return n, fmt.Errorf("creative: %s: writing after %d bytes: %w", rs.cl.op, n, err)
	}
	if rs.ContentLength >= 0 && n != rs.ContentLength {
		return n, rs.readFailed(fmt.Errorf("got %d of %d bytes: %w", n, rs.ContentLength, io.ErrUnexpectedEOF))
	}
	return n, nil
}

// downloadHead reads the start of a download. One that starts as a JSON
// object is read on, up to maxErrorBody bytes: the service's error
// envelope (success false) sent with a 200 is the service's failure, with
// its message redacted, and never the file. Anything else is returned to be
// passed on whole.
func (rs *response) downloadHead(r io.Reader) ([]byte, error) {
	head, err := readHead(r, 512)
	if err != nil {
		return nil, err
	}
	if t := textStart(head); len(t) == 0 || t[0] != '{' {
		return head, nil
	}
	more, err := io.ReadAll(io.LimitReader(r, int64(maxErrorBody+rs.cl.keyLen())))
	if err != nil {
		return nil, err
	}
	body := append(head, more...)
	var ee *envelopeError
	if err := envelope(body, false, rs.cl.redactor, func(d *bodyDecoder) error { return d.SkipValue() }); errors.As(err, &ee) && ee.failed {
		return nil, rs.serviceFailure(body, ee.msg)
	}
	return body, nil
}
