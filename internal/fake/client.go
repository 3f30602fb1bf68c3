package fake

import (
	"net/http"
	"time"

	creative "github.com/creativegen/creative-go"
)

// HTTPClient returns an http.Client that reaches the Server, on 127.0.0.1
// or on its in-memory network (WithInMemoryNetwork), for requests made by
// hand or for a program that builds its own SDK client
// (creative.WithHTTPClient).
func (s *Server) HTTPClient() *http.Client { return s.hc }

// Client returns an SDK client wired to the Server: its URL and access key,
// and retry waits of a few milliseconds so that tests of retry paths run
// fast (a Retry-After the Server sends is still honoured, unless opts hold
// InstantRetryAfter). opts come after these and override them. It panics if
// an option is invalid.
func (s *Server) Client(opts ...creative.Option) *creative.Client {
	all := []creative.Option{
		creative.WithBaseURL(s.URL),
		creative.WithAccessKey(s.AccessKey),
		creative.WithRetryWait(time.Millisecond, 10*time.Millisecond),
	}
	if s.inMemory {
		all = append(all, creative.WithHTTPClient(s.hc))
	}
	all = append(all, opts...)
	c, err := creative.New(all...)
	if err != nil {
		panic("creativetest: " + err.Error())
	}
	return c
}
