package creativetest

import (
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
