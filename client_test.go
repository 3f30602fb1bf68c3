package creative

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creativegen/creative-go/ids"
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
	t.Run("a missing base URL also says how to run without the service", func(t *testing.T) {
		_, err := New(WithAccessKey("k"))
		require.Error(t, err)
		assert.Equal(t, "creative: no base URL: set CREATIVE_BASE_URL or use WithBaseURL; to run without the service, package creativetest has a fake of it: srv := creativetest.NewServer(); c := srv.Client()", err.Error())
	})
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

// stampServer is a test server that records when each request arrived
// whole (once its body is read) and its header.
type stampServer struct {
	*testServer
	mu       sync.Mutex
	arrivals []time.Time
	headers  []http.Header
}

func newStampServer(t *testing.T, h func(n int, w http.ResponseWriter, r *http.Request)) *stampServer {
	t.Helper()
	return startStampServer(t, h, false)
}

// newMemStampServer is newStampServer in memory (newMemServer), for a test
// in a synctest bubble, where the stamps are the bubble's exact time.
func newMemStampServer(t *testing.T, h func(n int, w http.ResponseWriter, r *http.Request)) *stampServer {
	t.Helper()
	return startStampServer(t, h, true)
}

func startStampServer(t *testing.T, h func(n int, w http.ResponseWriter, r *http.Request), mem bool) *stampServer {
	ss := &stampServer{}
	ss.testServer = startTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ss.mu.Lock()
		ss.arrivals = append(ss.arrivals, time.Now())
		ss.headers = append(ss.headers, r.Header.Clone())
		n := len(ss.arrivals)
		ss.mu.Unlock()
		h(n, w, r)
	}, mem)
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

// An answer read to its end leaves its connection to the next call: calls
// made one after another, whatever they met, use one connection between
// them. A body closed before its end would cost a connection a call.
func TestCallsOneAfterAnotherKeepOneConnection(t *testing.T) {
	img := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfe, 'x', 0}, 300<<10)) // past the probed size
	answers := map[string]http.HandlerFunc{
		"a success": replyJSON(200, `{"success":true,"message":"ok","data":"http://127.0.0.1/m.wav"}`),
		"a refusal": replyJSON(400, `{"success":false,"message":"no"}`),
		"a failure that is not JSON": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(422)
			_, _ = w.Write([]byte("nope"))
		},
		"a success without Content-Length": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"success":true,"message":"ok",`))
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte(`"data":"http://127.0.0.1/m.wav"}`))
		},
		"images": replyJSON(200, `{"success":true,"message":"ok","data":[{"base64":"`+img+`"}]}`),
	}
	for name, h := range answers {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t, h)
			c := newTestClient(t, ts.URL, WithMaxRetries(0))
			for range 5 {
				if name == "images" {
					ims, err := c.TextToImage(context.Background(), TextToImageRequest{Prompt: "p", NumberOfResults: 1, StyleID: ids.StyleAnime})
					require.NoError(t, err)
					require.Len(t, ims, 1)
					continue
				}
				_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
				if strings.HasPrefix(name, "a success") {
					require.NoError(t, err)
				} else {
					require.Error(t, err)
				}
			}
			assert.Equal(t, int64(1), ts.conns.Load(), "5 calls, one connection")
		})
	}
}
