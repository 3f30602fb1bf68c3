package creative

import "io"

// This file holds the contract between the multipart body and the
// pipeline that sends it; request.go defines the same interface, and this
// copy goes when the two meet.

// A requestBody is what one call sends, on every attempt.
type requestBody interface {
	contentType() string
	size() int64              // the exact length in bytes, or -1 when unknown
	open() (io.Reader, error) // a fresh reader for each attempt
	sent() bool               // true once a body that cannot be replayed has gone out
}

var _ requestBody = (*multipartBody)(nil)
