package creativetest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/creativegen/creative-go/internal/memnet"
)

// StartInMemory is Start on an in-memory network (internal/memnet) instead
// of 127.0.0.1, for this package's tests that run in a synctest bubble,
// where a goroutine blocked on a real socket would stop the clock. It must
// be called inside the bubble. Only the Server's Client and HTTPClient
// reach it.
func StartInMemory(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	ln := memnet.Listen()
	s := newServer(&httptest.Server{Listener: ln, Config: &http.Server{}}, opts)
	s.hc = s.srv.Client() // Close closes its idle connections
	s.hc.Transport = ln.Transport()
	tb.Cleanup(s.Close)
	return s
}

// HTTPClient returns an http.Client that reaches s, on 127.0.0.1 or in
// memory, for requests made by hand.
func (s *Server) HTTPClient() *http.Client { return s.srv.Client() }
