package creative

import (
	"errors"
	"fmt"
	"net/http"
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
	// Client is paused (a 429 or 503 asked every call to wait) past the
	// call's deadline.
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
	// data, or data of a shape the operation does not return; a 1xx or a 3xx
	// the client does not follow; a status outside 100 to 599.
	ErrUnexpectedResponse = errors.New("creative: unexpected response")
	// ErrOutcomeUnknown matches a failure after the request reached the
	// service whole, when no definitive answer came back: a reset, an EOF or
	// a per-attempt timeout after the body was written, any 5xx other than
	// 503, an answer cut off while it was read. The service may have done the
	// work and charged for it, so the call was not sent again (unless the
	// caller opted in to paying twice).
	ErrOutcomeUnknown = errors.New("creative: outcome unknown: the service may have done the work")
)

// An APIError reports an answer from the service that is not a success: an
// HTTP error status, a 2xx envelope with success false, or a 2xx body that is
// not the envelope the operation promises. Use errors.As to read it and
// errors.Is with the sentinels (ErrUnauthorized, ErrRateLimited, ErrServer,
// ErrInvalidRequest, ErrUnexpectedResponse) to classify it.
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

	unexpected bool // the answer is not what the operation promises
	paused     bool // refused, nothing sent, during the client's pause
}

// Error reports the operation, the status, the attempts and the message, as
// in "creative: image/generate-qr: HTTP 502 after 3 attempts: bad gateway".
func (e *APIError) Error() string {
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
	if e.RequestID != "" {
		b.WriteString(" (request id ")
		b.WriteString(e.RequestID)
		b.WriteString(")")
	}
	return b.String()
}

// Is reports whether target is the sentinel error that fits e.
func (e *APIError) Is(target error) bool {
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
	return false
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
func (e *ValidationError) Unwrap() error { return e.Err }

// A NetworkError reports a call that got no HTTP answer: the connection was
// refused, reset or timed out on every attempt, or the context ended. It
// unwraps to the cause, so errors.Is(err, context.DeadlineExceeded) works.
type NetworkError struct {
	// Operation is the endpoint's name, such as "audio/text-to-music", or
	// "download" for Client.Download.
	Operation string
	// Attempts is how many times the request was sent.
	Attempts int
	// Err is the cause of the last failure.
	Err error
}

// Error reports the operation, the attempts and the cause.
func (e *NetworkError) Error() string {
	if e.Attempts > 1 {
		return fmt.Sprintf("creative: %s: %d attempts: %v", e.Operation, e.Attempts, e.Err)
	}
	return fmt.Sprintf("creative: %s: %v", e.Operation, e.Err)
}

// Unwrap returns the cause.
func (e *NetworkError) Unwrap() error { return e.Err }
