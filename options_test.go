package creative

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/creativegen/creative-go/ids"
)

// Every option that works on a call is tested twice: given to New and given
// to one call. The server on 127.0.0.1 says what reached it.

// placement gives options to a client of ts or to a call: it returns the
// client and the options to pass to the call.
type placement struct {
	name string
	put  func(t *testing.T, ts *testServer, opts ...Option) (*Client, []Option)
}

var placements = []placement{
	{"given to New", func(t *testing.T, ts *testServer, opts ...Option) (*Client, []Option) {
		return ts.client(t, opts...), nil
	}},
	{"given to the call", func(t *testing.T, ts *testServer, opts ...Option) (*Client, []Option) {
		return ts.client(t), opts
	}},
}

// replies answers the n-th request (from 1) with statuses[n-1] (the last
// one from then on), the error envelope for a failure and musicOK for a
// success, with X-Request-Id: req-<n>.
func replies(statuses ...int) func(n int, w http.ResponseWriter, r *http.Request) {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		status := statuses[min(n, len(statuses))-1]
		w.Header().Set("X-Request-Id", "req-"+strconv.Itoa(n))
		if status == 200 {
			replyJSON(200, musicOK)(w, r)
			return
		}
		replyJSON(status, `{"success":false,"message":"`+http.StatusText(status)+`"}`)(w, r)
	}
}

// stall answers nothing until the client goes away (or 5 s pass).
func stall(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(5 * time.Second):
	}
}

// WithTimeout's deadline is a timer: the cases run in a synctest bubble,
// their server in memory.
func TestWithTimeout(t *testing.T) {
	for _, p := range placements {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ss := newMemStampServer(t, func(_ int, _ http.ResponseWriter, r *http.Request) { stall(r) })
				c, call := p.put(t, ss.testServer, WithTimeout(100*time.Millisecond))
				start := time.Now()
				err := music(context.Background(), c, call...)
				assert.Equal(t, 100*time.Millisecond, time.Since(start), "the call ended at its timeout")
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				var netErr *NetworkError
				assert.ErrorAs(t, err, &netErr)
				assert.Equal(t, 1, ss.count(), "a stalled attempt is not retried past the call's timeout")
			})
		})
	}
	t.Run("a call's longer timeout overrides the client's", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ss := newMemStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
				time.Sleep(150 * time.Millisecond) // longer than the client's 50 ms
				replyJSON(200, musicOK)(w, r)
			})
			c := ss.client(t, WithTimeout(50*time.Millisecond))
			require.NoError(t, music(context.Background(), c, WithTimeout(5*time.Second)))
		})
	})
}

// attemptLogs returns the attributes of the records logged for attempts.
func attemptLogs(l *logCapture) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for i, line := range l.lines {
		if strings.HasPrefix(line, "creative: attempt") {
			out = append(out, l.attrs[i])
		}
	}
	return out
}

func TestWithLoggerRecordsEachAttemptWithItsRequestID(t *testing.T) {
	for _, p := range placements {
		t.Run(p.name, func(t *testing.T) {
			ss := newStampServer(t, replies(503, 200))
			logs := &logCapture{}
			c, call := p.put(t, ss.testServer, WithLogger(slog.New(logs)))
			require.NoError(t, music(context.Background(), c, call...))
			attempts := attemptLogs(logs)
			require.Len(t, attempts, 2, logs.all())
			for i, a := range attempts {
				assert.Equal(t, int64(i+1), a["attempt"])
				assert.Equal(t, "req-"+strconv.Itoa(i+1), a["request_id"])
				assert.Equal(t, "audio/text-to-music", a["operation"])
			}
			assert.Equal(t, int64(503), attempts[0]["status"])
			assert.Equal(t, int64(200), attempts[1]["status"])
			assert.Contains(t, logs.all(), "creative: retrying")
			assert.NotContains(t, logs.all(), testKey)
		})
	}
	t.Run("a call's logger replaces the client's for that call", func(t *testing.T) {
		ss := newStampServer(t, replies(200))
		mine, theirs := &logCapture{}, &logCapture{}
		c := newTestClient(t, ss.URL, WithLogger(slog.New(theirs)))
		require.NoError(t, music(context.Background(), c, WithLogger(slog.New(mine))))
		assert.Len(t, attemptLogs(mine), 1)
		assert.Empty(t, theirs.all())
	})
}

func TestWithMaxResponseBytes(t *testing.T) {
	for _, p := range placements {
		t.Run(p.name, func(t *testing.T) {
			ss := newStampServer(t, replies(200))
			c, call := p.put(t, ss.testServer, WithMaxResponseBytes(int64(len(musicOK)-1)))
			err := music(context.Background(), c, call...)
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
			assert.Contains(t, err.Error(), "WithMaxResponseBytes")
			assert.Equal(t, 1, ss.count(), "a body too large is not retried")

			c, call = p.put(t, ss.testServer, WithMaxResponseBytes(int64(len(musicOK))))
			assert.NoError(t, music(context.Background(), c, call...), "a body of exactly the cap passes")
		})
	}
	t.Run("a call's larger cap overrides the client's", func(t *testing.T) {
		ss := newStampServer(t, replies(200))
		c := newTestClient(t, ss.URL, WithMaxResponseBytes(10))
		assert.NoError(t, music(context.Background(), c, WithMaxResponseBytes(1<<20)))
		assert.Error(t, music(context.Background(), c))
	})
	t.Run("it bounds a Download only when given", func(t *testing.T) {
		ss := newStampServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write(make([]byte, 1000))
		})
		c := newTestClient(t, ss.URL)
		n, err := c.Download(context.Background(), URL(ss.URL+"/f.bin"), io.Discard)
		require.NoError(t, err)
		assert.Equal(t, int64(1000), n)
		_, err = c.Download(context.Background(), URL(ss.URL+"/f.bin"), io.Discard, WithMaxResponseBytes(100))
		assert.ErrorIs(t, err, ErrUnexpectedResponse)
	})
}

func TestWithAccessKeyOnACallSendsThatKeyAndRedactsIt(t *testing.T) {
	const callKey = "call-key-9d41c0-LEAKCHECK"
	ss := newStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-Access-Key")
		if key == callKey {
			// A careless service echoes the key in the body and a header.
			w.Header().Set("X-Echo", "key="+key)
			replyJSON(401, `{"success":false,"message":"key `+key+` is not allowed here"}`)(w, r)
			return
		}
		replyJSON(200, musicOK)(w, r)
	})
	logs := &logCapture{}
	c := newTestClient(t, ss.URL, WithLogger(slog.New(logs)))

	err := music(context.Background(), c, WithAccessKey(callKey))
	assert.Equal(t, callKey, ss.header(1).Get("X-Access-Key"), "the call's key is sent, not the client's")
	assert.ErrorIs(t, err, ErrUnauthorized)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	for what, text := range map[string]string{
		"the error":     err.Error(),
		"the message":   apiErr.Message,
		"the body":      string(apiErr.Body),
		"the header":    apiErr.Header.Get("X-Echo"),
		"%+v":           fmt.Sprintf("%+v", apiErr),
		"the log lines": logs.all(),
	} {
		assert.NotContains(t, text, callKey, what)
	}
	assert.Contains(t, apiErr.Message, "key [redacted] is not allowed")
	assert.Equal(t, "key=[redacted]", apiErr.Header.Get("X-Echo"))

	require.NoError(t, music(context.Background(), c))
	assert.Equal(t, testKey, ss.header(2).Get("X-Access-Key"), "the next call has the client's key again")
	require.NoError(t, music(context.Background(), c, WithAccessKey("")))
	assert.Equal(t, testKey, ss.header(3).Get("X-Access-Key"), "an empty key on a call leaves the client's")
}

// tracer records the order middleware ran in.
type tracer struct {
	mu    sync.Mutex
	steps []string
}

func (tr *tracer) add(s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.steps = append(tr.steps, s)
}

func (tr *tracer) mw(name string) Middleware {
	return func(req *http.Request, next MiddlewareNext) (*http.Response, error) {
		tr.add(name + ">")
		resp, err := next(req)
		if resp != nil {
			tr.add("<" + name + " " + strconv.Itoa(resp.StatusCode))
		}
		return resp, err
	}
}

func TestWithResponseInto(t *testing.T) {
	for _, p := range placements {
		t.Run(p.name+": the last attempt's status and headers, its body closed", func(t *testing.T) {
			ss := newStampServer(t, replies(503, 200))
			var resp *http.Response
			c, call := p.put(t, ss.testServer, WithResponseInto(&resp))
			require.NoError(t, music(context.Background(), c, call...))
			require.NotNil(t, resp)
			assert.Equal(t, 200, resp.StatusCode)
			assert.Equal(t, "req-2", resp.Header.Get("X-Request-Id"))
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			n, err := resp.Body.Read(make([]byte, 1))
			assert.Equal(t, 0, n)
			assert.Equal(t, io.EOF, err, "the body was read and closed already")
		})
	}
	t.Run("after a failure, the failed answer", func(t *testing.T) {
		ss := newStampServer(t, replies(400))
		var resp *http.Response
		err := music(context.Background(), newTestClient(t, ss.URL), WithResponseInto(&resp))
		assert.ErrorIs(t, err, ErrInvalidRequest)
		require.NotNil(t, resp)
		assert.Equal(t, 400, resp.StatusCode)
		assert.Equal(t, "req-1", resp.Header.Get("X-Request-Id"))
	})
	t.Run("headers that echo the key are redacted, and the request carries no key", func(t *testing.T) {
		ss := newStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Request-Id", "id-"+r.Header.Get("X-Access-Key"))
			w.Header().Set("X-Echo", url.QueryEscape(r.Header.Get("X-Access-Key")))
			replyJSON(200, musicOK)(w, r)
		})
		var resp *http.Response
		require.NoError(t, music(context.Background(), newTestClient(t, ss.URL), WithResponseInto(&resp)))
		require.NotNil(t, resp)
		assert.Equal(t, "id-"+redacted, resp.Header.Get("X-Request-Id"))
		assert.Equal(t, redacted, resp.Header.Get("X-Echo"))
		require.NotNil(t, resp.Request)
		assert.Empty(t, resp.Request.Header.Get("X-Access-Key"))
	})
	t.Run("nil when no answer came", func(t *testing.T) {
		var resp *http.Response
		c := newTestClient(t, "http://"+refusedAddr(t), WithMaxRetries(0))
		assert.Error(t, music(context.Background(), c, WithResponseInto(&resp)))
		assert.Nil(t, resp)
	})
	t.Run("for speech, the Audio is the body", func(t *testing.T) {
		ss := newStampServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "audio/mpeg")
			w.Header().Set("X-Request-Id", "speech-1")
			_, _ = io.WriteString(w, "ID3-mp3-bytes")
		})
		var resp *http.Response
		audio, err := newTestClient(t, ss.URL).TextToSpeech(context.Background(), TextToSpeechRequest{Prompt: "p", VoiceID: ids.VoiceMale1}, WithResponseInto(&resp))
		require.NoError(t, err)
		require.NotNil(t, resp, "set when the call returns")
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "speech-1", resp.Header.Get("X-Request-Id"))
		b, err := io.ReadAll(audio)
		require.NoError(t, err)
		assert.Equal(t, "ID3-mp3-bytes", string(b))
		require.NoError(t, audio.Close())
		n, _ := resp.Body.Read(make([]byte, 1))
		assert.Equal(t, 0, n, "closed with the Audio")
	})
	t.Run("a nil destination is refused", func(t *testing.T) {
		_, err := New(WithBaseURL("https://api.example.com"), WithAccessKey("k"), WithResponseInto(nil))
		assert.ErrorContains(t, err, "nil destination")
	})
}

func TestClientOnlyOptionsOnACallFailBeforeAnythingIsSent(t *testing.T) {
	ss := newStampServer(t, replies(200))
	c := newTestClient(t, ss.URL)
	tests := []struct {
		name string
		opt  Option
	}{
		{"WithBaseURL", WithBaseURL("https://elsewhere.example.com")},
		{"WithHTTPClient", WithHTTPClient(&http.Client{})},
		{"WithInsecureHTTP", WithInsecureHTTP()},
		{"WithRateLimiter", WithRateLimiter(rate.NewLimiter(1, 1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := music(context.Background(), c, WithMaxRetries(1), tt.opt)
			require.Error(t, err)
			assert.Equal(t, "creative: audio/text-to-music: "+tt.name+" configures a Client (give it to New), not one call", err.Error())
			_, err = c.Download(context.Background(), URL(ss.URL+"/f"), io.Discard, tt.opt)
			assert.ErrorContains(t, err, "download: "+tt.name+" configures a Client")
		})
	}
	assert.Equal(t, 0, ss.count(), "nothing was sent")
	require.NoError(t, music(context.Background(), c), "the client is unchanged")
}

func TestAPIErrorCarriesTheRequestID(t *testing.T) {
	tests := []struct {
		name   string
		header map[string]string
		want   string
	}{
		{"X-Request-Id", map[string]string{"X-Request-Id": "abc-1"}, "abc-1"},
		{"X-Amzn-RequestId", map[string]string{"X-Amzn-RequestId": "amzn-2"}, "amzn-2"},
		{"X-Amz-Cf-Id", map[string]string{"X-Amz-Cf-Id": "cf-3=="}, "cf-3=="},
		{"Cf-Ray", map[string]string{"Cf-Ray": "8a1b2c3d4e5f-FRA"}, "8a1b2c3d4e5f-FRA"},
		{"X-Request-Id before Cf-Ray", map[string]string{"Cf-Ray": "ray", "X-Request-Id": "own"}, "own"},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss := newStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				replyJSON(400, `{"success":false,"message":"prompt: too long"}`)(w, r)
			})
			err := music(context.Background(), newTestClient(t, ss.URL))
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tt.want, apiErr.RequestID)
			if tt.want == "" {
				assert.Equal(t, "creative: audio/text-to-music: HTTP 400: prompt: too long", err.Error())
			} else {
				assert.Equal(t, "creative: audio/text-to-music: HTTP 400: prompt: too long (request id "+tt.want+")", err.Error())
			}
			for k, v := range tt.header {
				assert.Equal(t, v, apiErr.Header.Get(k))
			}
		})
	}
}
