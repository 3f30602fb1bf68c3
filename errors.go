package creative

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors for errors.Is. An *APIError matches the one that fits its
// status code; a *ValidationError matches ErrInvalidRequest.
var (
	// ErrUnauthorized matches a 401 or 403 answer: the access key is missing,
	// wrong or not allowed to call the operation.
	ErrUnauthorized = errors.New("creative: unauthorized")
	// ErrRateLimited matches a 429 answer that was still failing when the
	// retries ran out (or that asked for a longer wait than the client
	// allows), and a call refused without sending anything because the
	// Client is paused for its access key (a 429 or 503 asked every call
	// with that key to wait) past the call's deadline.
	ErrRateLimited = errors.New("creative: rate limited")
	// ErrServer matches any 5xx answer that was still failing when the retries
	// ran out.
	ErrServer = errors.New("creative: server error")
	// ErrInvalidRequest matches the service's definitive 400 failure and every
	// *ValidationError found before a request was sent. Retrying such a request
	// unchanged cannot succeed.
	ErrInvalidRequest = errors.New("creative: invalid request")
	// ErrUnexpectedResponse matches an answer that is not what the interface
	// promises: a 2xx whose body is not the JSON envelope, an envelope without
	// data, or data of a shape the operation does not return (a URL result
	// that holds the access key among them); a 1xx or a 3xx the client does
	// not follow; a status outside 100 to 599.
	ErrUnexpectedResponse = errors.New("creative: unexpected response")
	// ErrOutcomeUnknown matches a failure after the request reached the
	// service whole, when no definitive answer came back: a reset, an EOF or
	// a per-attempt timeout after the request was written, any 5xx other
	// than 503 (and 501 and 505, which no retry changes), an answer cut off
	// while it was read, a success whose call's context ended as it came.
	// The service may have done the work and charged for
	// it, so the call was not sent again, unless WithRetryMayPayAgain asked
	// for it. A Download, which costs nothing to repeat, never matches it.
	// With ErrNotSent and ErrRefused it tells the three kinds of failure
	// apart.
	ErrOutcomeUnknown = errors.New("creative: outcome unknown: the service may have done the work")
	// ErrNotSent matches a failure before the request reached the service
	// whole: a DNS, dial or TLS failure, a connection closed or reset while
	// the request was written, a per-attempt timeout before it was, a local
	// read error of an upload, a call refused by the rate limiter or by the
	// Client's pause, a context that ended first. Nothing was done and
	// nothing is owed: the call may be made again.
	ErrNotSent = errors.New("creative: not sent")
	// ErrRefused matches an answer in which the service says it did not do
	// the work: 408, 429 or 503, still failing when the retries ran out or
	// asking for a longer wait than the call allows. The call may be made
	// again, later.
	ErrRefused = errors.New("creative: refused by the service")
	// ErrClosed is the error of reading an Audio that its caller closed,
	// before or during the read (Close may come from another goroutine):
	// the caller ended the stream, not the service or the network.
	ErrClosed = errors.New("creative: the audio stream was closed by the caller")
	// ErrMisuse matches an error of a call the SDK could not make as it
	// was asked: a nil or zero Client, a nil context, a nil io.Writer, a
	// zero Audio. Nothing was sent.
	ErrMisuse = errors.New("creative: misuse")
)

// An APIError reports an answer from the service that is not a success: an
// HTTP error status, a 2xx envelope with success false, or a 2xx body that is
// not the envelope the operation promises. Use errors.As to read it and
// errors.Is with the sentinels (ErrUnauthorized, ErrRateLimited, ErrServer,
// ErrInvalidRequest, ErrUnexpectedResponse) to classify it, and with
// ErrRefused, ErrOutcomeUnknown or ErrNotSent to learn what it may have
// cost.
type APIError struct {
	// Operation is the endpoint's name, its path without the version, such as
	// "image/text-to-image".
	Operation string
	// StatusCode is the HTTP status of the last attempt.
	StatusCode int
	// Message is the envelope's message, or a description of what came when
	// the body was not an envelope.
	Message string
	// Attempts is how many times the request was sent.
	Attempts int
	// RetryAfter is the wait the service asked for in a Retry-After header on
	// the last answer, zero when it asked for none.
	RetryAfter time.Duration
	// Body is the start of the raw answer body, at most 64 KiB, for answers
	// that were not a success (an HTML page from a proxy, say).
	Body []byte
	// Header is the last answer's header, its values redacted like every
	// string the client keeps.
	Header http.Header
	// RequestID is the id the service or a proxy gave the last answer
	// (X-Request-Id, X-Amzn-RequestId, X-Amz-Cf-Id or Cf-Ray), for support.
	RequestID string

	unexpected  bool        // the answer is not what the operation promises
	paused      bool        // refused, nothing sent, during the client's pause
	kind        attemptKind // what the last attempt may have cost
	mayHavePaid int         // attempts whose outcome is unknown
	resent      bool        // an attempt followed one whose outcome was unknown
}

// Error reports the operation, the status, the attempts and the message, as
// in "creative: image/generate-qr: HTTP 502 after 3 attempts: bad gateway".
func (e *APIError) Error() string {
	if e == nil {
		return "creative: <nil *APIError>"
	}
	var b strings.Builder
	b.WriteString("creative: ")
	b.WriteString(e.Operation)
	fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if !e.paused { // its message says already that nothing was sent
		b.WriteString(costNote(e.kind, e.Attempts, e.mayHavePaid, e.resent))
	}
	if e.RequestID != "" {
		b.WriteString(" (request id ")
		b.WriteString(e.RequestID)
		b.WriteString(")")
	}
	return b.String()
}

// Is reports whether target is the sentinel error that fits e.
func (e *APIError) Is(target error) bool {
	if e == nil {
		return false
	}
	switch target {
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests || e.paused
	case ErrServer:
		return e.StatusCode >= 500 && e.StatusCode <= 599 && !e.paused
	case ErrInvalidRequest:
		return e.StatusCode == http.StatusBadRequest
	case ErrUnexpectedResponse:
		return e.unexpected
	}
	return e.kind.is(target)
}

// is reports whether target is the sentinel of kind o: ErrNotSent,
// ErrRefused or ErrOutcomeUnknown.
func (o attemptKind) is(target error) bool {
	switch target {
	case ErrNotSent:
		return o == attemptNotSent
	case ErrRefused:
		return o == attemptRefused
	case ErrOutcomeUnknown:
		return o == attemptUnknown
	}
	return false
}

// costNote says, for an error's text, which kind of failure ended the call
// and what it may have cost.
func costNote(k attemptKind, attempts, mayHavePaid int, resent bool) string {
	switch {
	case k == attemptNotSent:
		return " (not sent: the request did not reach the service whole, so nothing was done)"
	case k == attemptRefused:
		return " (refused: the service did not do the work)"
	case k != attemptUnknown:
		return ""
	case mayHavePaid <= 1 && !resent:
		return fmt.Sprintf(" (outcome unknown: the service may have done the work and charged for it, so it was not sent again, after %s)", plural(attempts, "attempt"))
	}
	return fmt.Sprintf(" (outcome unknown: the service may have done the work and charged for it, up to %s, in %s with WithRetryMayPayAgain)", plural(max(mayHavePaid, 1), "time"), plural(attempts, "attempt"))
}

// plural writes n things, as "1 attempt" or "3 attempts".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// A ValidationError reports a request that cannot succeed, found before any
// byte was sent. It matches ErrInvalidRequest.
type ValidationError struct {
	// Operation is the endpoint's name, such as "image/text-to-image".
	Operation string
	// Field is the request field at fault, named as on the wire
	// ("numberOfResults", "image").
	Field string
	// Rule says what the field must be ("must be between 1 and 10").
	Rule string
	// Value is the offending value as given, when it helps (empty for
	// missing fields and uploads).
	Value string
	// Err is the cause, when there is one: the error of a file that cannot
	// be opened or read, so errors.Is(err, fs.ErrNotExist) works.
	Err error
}

// Error reports the operation, field, rule and value, as in
// "creative: image/text-to-image: numberOfResults must be between 1 and 10, got 11".
func (e *ValidationError) Error() string {
	if e == nil {
		return "creative: <nil *ValidationError>"
	}
	var b strings.Builder
	b.WriteString("creative: ")
	if e.Operation != "" {
		b.WriteString(e.Operation)
		b.WriteString(": ")
	}
	b.WriteString(e.Field)
	b.WriteString(" ")
	b.WriteString(e.Rule)
	if e.Value != "" {
		b.WriteString(", got ")
		b.WriteString(e.Value)
	}
	return b.String()
}

// Is reports whether target is ErrInvalidRequest.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidRequest }

// Unwrap returns the cause, or nil.
func (e *ValidationError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// A NetworkError reports a call that got no HTTP answer: the connection was
// refused, reset or timed out, or the context ended. It unwraps to the
// cause, so errors.Is(err, context.DeadlineExceeded) works, and matches
// ErrNotSent when the request never reached the service whole, or
// ErrOutcomeUnknown when it did and no answer came back.
type NetworkError struct {
	// Operation is the endpoint's name, such as "audio/text-to-music", or
	// "download" for Client.Download.
	Operation string
	// Attempts is how many times the request was sent.
	Attempts int
	// Err is the cause of the last failure.
	Err error

	kind        attemptKind // what the last attempt may have cost
	mayHavePaid int         // attempts whose outcome is unknown
	resent      bool        // an attempt followed one whose outcome was unknown
}

// Error reports the operation, the attempts and the cause, and when the
// outcome is unknown, that the work may have been done and paid.
func (e *NetworkError) Error() string {
	if e == nil {
		return "creative: <nil *NetworkError>"
	}
	note := costNote(e.kind, e.Attempts, e.mayHavePaid, e.resent)
	if e.Attempts > 1 {
		return fmt.Sprintf("creative: %s: %d attempts: %v%s", e.Operation, e.Attempts, e.Err, note)
	}
	return fmt.Sprintf("creative: %s: %v%s", e.Operation, e.Err, note)
}

// Unwrap returns the cause.
func (e *NetworkError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Is reports whether target is the sentinel of the failure's kind:
// ErrNotSent or ErrOutcomeUnknown.
func (e *NetworkError) Is(target error) bool { return e != nil && e.kind.is(target) }

// A misuseError is a call the SDK could not make as it was asked (a nil or
// zero Client, a nil context, a nil io.Writer): nothing was sent.
type misuseError struct{ op, what string }

func (e *misuseError) Error() string {
	return "creative: " + e.op + ": " + e.what
}

// Is matches ErrMisuse and ErrNotSent.
func (e *misuseError) Is(target error) bool { return target == ErrMisuse || target == ErrNotSent }

// usable is the one check of misuse before any call of c: a nil or zero
// Client and a nil context fail here, with nothing sent, instead of
// panicking further on.
func (c *Client) usable(ctx context.Context, op string) error {
	switch {
	case c == nil:
		return &misuseError{op, "a nil *Client: make one with New"}
	case c.base == nil || c.key == nil:
		return &misuseError{op, "a zero Client: make one with New"}
	case ctx == nil:
		return &misuseError{op, "a nil context: give context.Background() or a context of your own"}
	}
	return nil
}

// boundedError is an error whose text was cut to a message's length
// (told); it unwraps to its cause.
type boundedError struct {
	err  error
	text string
}

func (e *boundedError) Error() string { return e.text }
func (e *boundedError) Unwrap() error { return e.err }
