package creative

import (
	"errors"
	"fmt"
	"regexp"
)

// This file tells, from a failure of net/http's RoundTrip, whether an
// HTTP/2 server said it did not process the request (REFUSED_STREAM, a
// stream above a GOAWAY's last): such an attempt is not sent, though its
// body may have been written whole. The transport (transport.go) marks its
// attemptErrors with it; the retry policy (retry.go) reads the mark.

// h2StreamError mirrors net/http's HTTP/2 stream error, whose type is
// unexported: errors.As fills any struct with its fields' names and types
// (as it fills golang.org/x/net/http2.StreamError).
type h2StreamError struct {
	StreamID uint32
	Code     uint32
	Cause    error
}

func (e h2StreamError) Error() string {
	return fmt.Sprintf("http2: stream %d reset with code %d", e.StreamID, e.Code)
}

// h2RefusedStream is REFUSED_STREAM (RFC 9113, section 8.7): the server
// did not process the stream, and says so.
const h2RefusedStream = 0x7

// h2NotResent is the one error net/http leaves as text only: asked to send
// again a request whose body it cannot reopen (the SDK gives it no
// GetBody), it formats the cause with %v. Of the causes it would send
// again for, two say the service did not process the request: REFUSED_STREAM
// from the server, and a graceful GOAWAY whose last stream is below the
// request's. The pattern is the whole text, built by net/http from fixed
// words and a number only (a server's GOAWAY debug data never enters it):
// no echo of the other end can make it match.
var h2NotResent = regexp.MustCompile(`^http2: Transport: cannot retry err \[(stream error: stream ID \d+; REFUSED_STREAM; received from peer|http2: Transport received Server's graceful shutdown GOAWAY)\] after Request\.Body was written; define Request\.GetBody to avoid this error$`)

// h2GoAwayFirst is the error net/http gives the first stream of a
// connection above a GOAWAY's last stream when the GOAWAY carries an error
// code: the server did not process it. Also fixed words and a code's name.
var h2GoAwayFirst = regexp.MustCompile(`^http2: Transport received GOAWAY from server ErrCode:([A-Z_]+|unknown error code 0x[0-9a-f]+)$`)

// unprocessed reports whether err, a failure of net/http's RoundTrip, says
// the service did not process the request though it may have been written
// whole: an HTTP/2 REFUSED_STREAM, by its type and code when net/http keeps
// them, and by their whole text the causes above, which net/http keeps as
// text only.
func unprocessed(err error) bool {
	var se h2StreamError
	if errors.As(err, &se) {
		return se.Code == h2RefusedStream
	}
	text := err.Error()
	return h2NotResent.MatchString(text) || h2GoAwayFirst.MatchString(text)
}
