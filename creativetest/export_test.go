package creativetest

import (
	"net/http"
	"testing"
)

// StartInMemory is Start on an in-memory network (internal/memnet) instead
// of 127.0.0.1, for this package's tests that run in a synctest bubble,
// where a goroutine blocked on a real socket would stop the clock. It must
// be called inside the bubble. Only the Server's Client and HTTPClient
// reach it.
func StartInMemory(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	return Start(tb, append(opts, WithInMemoryNetwork())...)
}

// HTTPClient returns an http.Client that reaches s, on 127.0.0.1 or in
// memory, for requests made by hand.
func (s *Server) HTTPClient() *http.Client { return s.srv.Client() }
