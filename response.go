package creative

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
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
		kind: cl.costOf(attemptUnknown), mayHavePaid: cl.unknowns + 1, resent: cl.unknowns > 0}
}

// copyTo copies a downloaded body to w, within the call's cap when one was
// given, and checks it is as long as it said.
func (rs *response) copyTo(w io.Writer) (int64, error) {
	limit := int64(1<<63 - 1)
	if rs.cl.s.maxBytesSet {
		limit = rs.cl.s.maxBytes
	}
	n, err := io.Copy(w, &capped{r: rs.Body, left: limit, rs: rs})
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
