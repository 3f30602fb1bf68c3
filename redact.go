package creative

import (
	"fmt"
	"io"
	"net/http"

	"github.com/creativegen/creative-go/internal/redact"
)

// This file lends the redactor (internal/redact) to the calls: every
// string from the network passes it before it reaches an error, a log line
// or a caller, and before it is cut, so that an access key a server echoes
// back, in whatever form, never leaves the SDK.

// A redactor removes the access keys of one call from text. The zero value
// removes nothing.
type redactor struct {
	r *redact.Redactor
}

// newRedactor returns a redactor of keys, the call's and then the Client's:
// a server may know the Client's key from earlier calls even when a call
// sends its own.
func newRedactor(keys ...[]string) *redactor { return &redactor{redact.New(keys...)} }

// redact removes the access keys from text that came from the network, in
// case a server echoes them: every string that leaves the SDK passes here,
// before it is truncated.
func (r *redactor) redact(s string) string { return r.r.Redact(s) }

// redactBytes is redact for a body: b itself when it holds no key, found
// without copying it.
func (r *redactor) redactBytes(b []byte) []byte { return r.r.RedactBytes(b) }

// holds reports whether s holds one of the access keys, in any form redact
// removes.
func (r *redactor) holds(s string) bool { return r.r.Holds(s) }

// keyLen is the length of the longest text redact removes: a cut made this
// far past a limit cannot split a key that redact would have found.
func (r *redactor) keyLen() int { return r.r.KeyLen() }

// keep returns at most n bytes of s, redacted first (so a key that straddles
// the cut is gone too), cut on a rune boundary.
func (r *redactor) keep(s []byte, n int) []byte { return r.r.Keep(s, n) }

// redactErr returns err without the keys, in its own text and in the text
// of every error it wraps (see redact.Redactor.Err).
func (r *redactor) redactErr(err error) error { return r.r.Err(err) }

// message bounds a message from the service for an error. Only the part
// that may be kept is copied.
func (r *redactor) message(s string) string {
	if len(s) <= maxMessage {
		return r.redact(s)
	}
	kept := r.keep([]byte(s[:min(len(s), maxMessage+r.keyLen())]), maxMessage)
	return fmt.Sprintf("%s... (%d bytes in all)", kept, len(s))
}

// redactResponse returns the copy of resp a caller may keep (the answer of
// WithResponseInto), with body as its Body: everything the other end wrote
// into it redacted (the status line, header names and values, trailers)
// and so every answer of the redirects before it, which it reaches through
// Request.Response. Each request of the chain keeps its headers but the
// access key. Trailers are those declared when it is handed over: values
// that arrive later stay in the original, never reach the caller.
func (r *redactor) redactResponse(resp *http.Response, body io.ReadCloser) *http.Response {
	out := *resp
	out.Body = body
	out.Status = string(r.keep([]byte(resp.Status), maxMessage))
	out.Header = r.redactHeader(resp.Header)
	if resp.Trailer != nil {
		out.Trailer = r.redactHeader(resp.Trailer)
	}
	if resp.Request != nil {
		req := *resp.Request
		req.GetBody = nil // the caller's copy is not for sending again
		req.Header = r.redactHeader(req.Header)
		req.Header.Del(headerAccessKey)
		if req.Response != nil {
			req.Response = r.redactResponse(req.Response, http.NoBody)
		}
		out.Request = &req
	}
	return &out
}
