package creative

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewReadsTheEnvironmentAndOptionsOverrideIt(t *testing.T) {
	t.Setenv(EnvBaseURL, "https://env.example.com")
	t.Setenv(EnvAccessKey, "env-key")
	c, err := New()
	require.NoError(t, err)
	assert.Equal(t, "https://env.example.com", c.prefix)
	assert.Equal(t, "env-key", c.key()[0])

	c, err = New(WithBaseURL("https://opt.example.com/api/"), WithAccessKey("opt-key"))
	require.NoError(t, err)
	assert.Equal(t, "https://opt.example.com/api", c.prefix)
	assert.Equal(t, "opt-key", c.key()[0])
}

func TestNewRefusesWhatCannotWork(t *testing.T) {
	t.Setenv(EnvBaseURL, "")
	t.Setenv(EnvAccessKey, "")
	tests := []struct {
		name string
		opts []Option
		want string
	}{
		{"a missing base URL names the variable and the option", []Option{WithAccessKey("k")}, "set CREATIVE_BASE_URL or use WithBaseURL"},
		{"a missing key names the variable and the option", []Option{WithBaseURL("https://x.example")}, "set CREATIVE_ACCESS_KEY or use WithAccessKey"},
		{"a URL without a scheme is refused", []Option{WithBaseURL("x.example"), WithAccessKey("k")}, "is not an http(s) URL with a host"},
		{"an ftp URL is refused", []Option{WithBaseURL("ftp://x.example"), WithAccessKey("k")}, "is not an http(s) URL with a host"},
		{"user information is refused", []Option{WithBaseURL("https://u:p@x.example"), WithAccessKey("k")}, "must not carry user information"},
		{"a query is refused", []Option{WithBaseURL("https://x.example/?a=b"), WithAccessKey("k")}, "must not carry a query"},
		{"plain http to a remote host is refused", []Option{WithBaseURL("http://x.example"), WithAccessKey("k")}, "WithInsecureHTTP"},
		{"a key with a line break is refused", []Option{WithBaseURL("https://x.example"), WithAccessKey("k\r\nX: y")}, "control character"},
		{"negative retries are refused", []Option{WithMaxRetries(-1)}, "WithMaxRetries"},
		{"a minimum wait above the maximum is refused", []Option{WithRetryWait(2, 1)}, "WithRetryWait"},
		{"a negative timeout is refused", []Option{WithTimeout(-1)}, "WithTimeout"},
		{"a nil http client is refused", []Option{WithHTTPClient(nil)}, "WithHTTPClient"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestNewAllowsPlainHTTPOnlyToLoopbackOrWhenAsked(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:8080", "http://localhost", "http://[::1]:9000"} {
		_, err := New(WithBaseURL(u), WithAccessKey("k"))
		assert.NoError(t, err, u)
	}
	_, err := New(WithBaseURL("http://x.example"), WithAccessKey("k"), WithInsecureHTTP())
	assert.NoError(t, err)
}

// mockClient returns a client whose transport is an httpmock transport.
func mockClient(t *testing.T, base string, opts ...Option) (*Client, *httpmock.MockTransport) {
	t.Helper()
	mt := httpmock.NewMockTransport()
	c := newTestClient(t, base, append([]Option{WithHTTPClient(&http.Client{Transport: mt})}, opts...)...)
	return c, mt
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestConcurrentCallsReuseThePooledConnections(t *testing.T) {
	ts := newTestServer(t, replyJSON(200, `{"success":true,"message":"ok","data":"http://127.0.0.1/m.wav"}`))
	c := newTestClient(t, ts.URL)
	round := func() {
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
				assert.NoError(t, err)
			}()
		}
		wg.Wait()
	}
	round()
	warm := ts.conns.Load()
	for range 9 {
		round()
	}
	// A pool that keeps 2 idle connections per host, as net/http's default
	// transport does, reopens about 14 in every round: over a hundred here.
	assert.LessOrEqual(t, ts.conns.Load()-warm, int64(16), "144 more calls in rounds of 16 reuse the warm connections")
}

func TestErrorsAreTypedAndClassified(t *testing.T) {
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = 'x'
	}
	tests := []struct {
		name     string
		status   int
		body     string
		ctype    string
		sentinel error
		message  string
	}{
		{"a 400 envelope is an invalid request with the service's message", 400, `{"success":false,"message":"prompt is too long"}`, "application/json", ErrInvalidRequest, "prompt is too long"},
		{"a 401 is unauthorized", 401, `{"success":false,"message":"bad key"}`, "application/json", ErrUnauthorized, "bad key"},
		{"a 403 is unauthorized", 403, `forbidden`, "text/plain", ErrUnauthorized, "forbidden"},
		{"a 404 says what came", 404, `<html>nope</html>`, "text/html", nil, "body is not the JSON envelope (text/html)"},
		{"a 200 with success false carries the message", 200, `{"success":false,"message":"quota used up"}`, "application/json", nil, "quota used up"},
		{"a 200 HTML page is unexpected", 200, `<html><body>maintenance</body></html>`, "text/html", ErrUnexpectedResponse, "maintenance"},
		{"a 200 with broken JSON is unexpected", 200, `{"success":tru`, "application/json", ErrUnexpectedResponse, "not the JSON envelope"},
		{"a 200 without data is unexpected", 200, `{"success":true,"message":"ok"}`, "application/json", ErrUnexpectedResponse, "carries no data"},
		{"a 200 without success is unexpected", 200, `{"data":"x"}`, "application/json", ErrUnexpectedResponse, "no success field"},
		{"a 200 with data of the wrong shape is unexpected", 200, `{"success":true,"message":"ok","data":42}`, "application/json", ErrUnexpectedResponse, "data is a number, want a non-empty URL string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			c := newTestClient(t, ts.URL)
			u, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
			assert.Empty(t, u, "no zero value is presented as success")
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, "audio/text-to-music", apiErr.Operation)
			assert.Equal(t, tt.status, apiErr.StatusCode)
			assert.Equal(t, 1, apiErr.Attempts)
			assert.Contains(t, apiErr.Message, tt.message)
			if tt.sentinel != nil {
				assert.ErrorIs(t, err, tt.sentinel)
			}
			for _, other := range []error{ErrInvalidRequest, ErrUnauthorized, ErrRateLimited, ErrServer, ErrUnexpectedResponse} {
				if other != tt.sentinel {
					assert.False(t, errors.Is(err, other), "must not match %v", other)
				}
			}
		})
	}

	t.Run("the kept body is bounded to 64 KiB", func(t *testing.T) {
		ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(502)
			_, _ = w.Write(big)
		})
		c := newTestClient(t, ts.URL, WithMaxRetries(0))
		_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Len(t, apiErr.Body, 64<<10)
		assert.ErrorIs(t, err, ErrServer)
	})
}

func TestErrorMessagesReadAsTheStyleSays(t *testing.T) {
	e := &APIError{Operation: "image/generate-qr", StatusCode: 502, Attempts: 3, Message: "bad gateway"}
	assert.Equal(t, "creative: image/generate-qr: HTTP 502 after 3 attempts: bad gateway", e.Error())
	v := &ValidationError{Operation: "image/text-to-image", Field: "numberOfResults", Rule: "must be between 1 and 10", Value: "11"}
	assert.Equal(t, "creative: image/text-to-image: numberOfResults must be between 1 and 10, got 11", v.Error())
	n := &NetworkError{Operation: "audio/enhance", Attempts: 3, Err: io.ErrUnexpectedEOF}
	assert.Equal(t, "creative: audio/enhance: 3 attempts: unexpected EOF", n.Error())
	assert.ErrorIs(t, n, io.ErrUnexpectedEOF)
}

// TestOneClientServes64GoroutinesMaking2000Calls mixes successes, retried
// failures and definitive failures, and matches every result to its own
// request.
func TestOneClientServes64GoroutinesMaking2000Calls(t *testing.T) {
	const calls, workers = 2000, 64
	var mu sync.Mutex
	seen := map[string]int{} // prompt -> attempts
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Prompt string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		seen[req.Prompt]++
		attempt := seen[req.Prompt]
		mu.Unlock()
		var n int
		_, _ = fmt.Sscanf(req.Prompt, "call-%d", &n)
		switch {
		case n%10 == 3: // a definitive failure
			replyJSON(400, `{"success":false,"message":"rejected `+req.Prompt+`"}`)(w, r)
		case n%10 == 7 && attempt == 1: // fails once, then succeeds
			replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
		default:
			replyJSON(200, `{"success":true,"message":"ok","data":"https://files.example/`+req.Prompt+`.wav"}`)(w, r)
		}
	})
	c := newTestClient(t, ts.URL)
	var next atomic.Int64
	var wg sync.WaitGroup
	var ok, rejected atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > calls {
					return
				}
				prompt := fmt.Sprintf("call-%d", n)
				u, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: prompt})
				if n%10 == 3 {
					var apiErr *APIError
					if assert.ErrorAs(t, err, &apiErr) {
						assert.Equal(t, "rejected "+prompt, apiErr.Message)
						assert.Equal(t, 1, apiErr.Attempts)
					}
					rejected.Add(1)
					continue
				}
				if assert.NoError(t, err, prompt) {
					assert.Equal(t, URL("https://files.example/"+prompt+".wav"), u)
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(1800), ok.Load())
	assert.Equal(t, int64(200), rejected.Load())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, calls)
	for prompt, attempts := range seen {
		want := 1
		if strings.HasSuffix(prompt, "7") {
			want = 2
		}
		assert.Equal(t, want, attempts, prompt)
	}
	// A cold start of 64 callers can dial somewhat more than 64; a pool of 2
	// idle connections per host would open well over a thousand.
	assert.LessOrEqual(t, ts.conns.Load(), int64(4*workers), "the pool is reused")
}

// stampServer is a test server that records when each request arrived and
// its header.
type stampServer struct {
	*testServer
	mu       sync.Mutex
	arrivals []time.Time
	headers  []http.Header
}

func newStampServer(t *testing.T, h func(n int, w http.ResponseWriter, r *http.Request)) *stampServer {
	t.Helper()
	ss := &stampServer{}
	ss.testServer = newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ss.mu.Lock()
		ss.arrivals = append(ss.arrivals, time.Now())
		ss.headers = append(ss.headers, r.Header.Clone())
		n := len(ss.arrivals)
		ss.mu.Unlock()
		h(n, w, r)
	})
	return ss
}

func (ss *stampServer) stamps() []time.Time {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]time.Time(nil), ss.arrivals...)
}

// header returns the header of the i-th request, counting from 1.
func (ss *stampServer) header(i int) http.Header {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if i < 1 || i > len(ss.headers) {
		return nil
	}
	return ss.headers[i-1]
}

// count is how many requests arrived.
func (ss *stampServer) count() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.arrivals)
}

const musicOK = `{"success":true,"message":"ok","data":"http://127.0.0.1/a.wav"}`

func music(ctx context.Context, c *Client, opts ...Option) error {
	_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"}, opts...)
	return err
}
