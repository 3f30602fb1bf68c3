package creative

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"runtime"
	"sync"
	"testing"

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

func TestTheWireCarriesEveryHeaderAndTheExactJSON(t *testing.T) {
	c, mt := mockClient(t, "https://api.example.com", WithUserAgent("my-app/2"))
	var got *http.Request
	var body []byte
	mt.RegisterResponder(http.MethodPost, "https://api.example.com/audio/v1/text-to-music",
		func(r *http.Request) (*http.Response, error) {
			got = r
			body, _ = io.ReadAll(r.Body)
			return httpmock.NewStringResponse(200, `{"success":true,"message":"ok","data":"https://files.example.com/a.wav"}`), nil
		})

	u, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "jazz", Duration: 12})
	require.NoError(t, err)
	assert.Equal(t, URL("https://files.example.com/a.wav"), u)
	assert.Equal(t, http.MethodPost, got.Method)
	assert.Equal(t, `{"prompt":"jazz","duration":12}`, string(body))
	assert.Equal(t, int64(len(body)), got.ContentLength)
	assert.Equal(t, testKey, got.Header.Get("x-access-key"))
	assert.Equal(t, "application/json", got.Header.Get("Content-Type"))
	assert.Equal(t, "application/json", got.Header.Get("Accept"))
	assert.Equal(t, fmt.Sprintf("creative-go/%s (%s) my-app/2", Version, runtime.Version()), got.Header.Get("User-Agent"))

	_, err = c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "jazz"})
	require.NoError(t, err)
	assert.Equal(t, `{"prompt":"jazz"}`, string(body), "an unset duration is left to the service's default")
}

func TestPathsJoinTheBaseURLWithoutDoubledOrDroppedSlashes(t *testing.T) {
	tests := []struct{ base, want string }{
		{"https://api.example.com", "https://api.example.com/video/v1/infinite-zoom"},
		{"https://api.example.com/", "https://api.example.com/video/v1/infinite-zoom"},
		{"https://gw.example.com/creative", "https://gw.example.com/creative/video/v1/infinite-zoom"},
		{"https://gw.example.com/creative/", "https://gw.example.com/creative/video/v1/infinite-zoom"},
		{"https://gw.example.com:8443/a/b//", "https://gw.example.com:8443/a/b/video/v1/infinite-zoom"},
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			c, mt := mockClient(t, tt.base)
			mt.RegisterResponder(http.MethodPost, tt.want, httpmock.NewStringResponder(200, `{"success":true,"message":"ok","data":"https://f.example/z.gif"}`))
			_, err := c.InfiniteZoom(context.Background(), InfiniteZoomRequest{Prompt: "p"})
			require.NoError(t, err)
			assert.Equal(t, 1, mt.GetCallCountInfo()["POST "+tt.want])
		})
	}
}

func TestAMultipartUploadHasItsPartsAndAnExactContentLength(t *testing.T) {
	wav := append([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), make([]byte, 100)...)
	type part struct{ name, filename, ctype, content string }
	var parts []part
	var contentLength int64
	var read int64
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		contentLength = r.ContentLength
		mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if !assert.NoError(t, err) || !assert.Equal(t, "multipart/form-data", mt) {
			return
		}
		cr := &countingReader{r: r.Body}
		mr := multipart.NewReader(cr, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			parts = append(parts, part{p.FormName(), p.FileName(), p.Header.Get("Content-Type"), string(b)})
		}
		_, _ = io.Copy(io.Discard, cr)
		read = cr.n
		replyJSON(200, `{"success":true,"message":"ok","data":"http://127.0.0.1/x.wav"}`)(w, r)
	})
	c := newTestClient(t, ts.URL)
	_, err := c.EnhanceAudio(context.Background(), EnhanceAudioRequest{Audio: FileFromBytes("talk.mp3", wav), TypeID: "664f30c0ba9c162a962f75b6"})
	require.NoError(t, err)
	assert.Equal(t, []part{
		{"typeId", "", "", "664f30c0ba9c162a962f75b6"},
		{"audio", "talk.mp3", "audio/wav", string(wav)},
	}, parts, "the type comes from the bytes, not the name")
	assert.Equal(t, read, contentLength)
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
