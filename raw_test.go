package creative

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// seen is what a test server kept of each request it received, read to
// its end.
type seen struct {
	mu   sync.Mutex
	reqs []seenRequest
}

type seenRequest struct {
	method, path, query string
	header              http.Header
	body                []byte
	contentLength       int64
}

func (s *seen) record(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, seenRequest{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: body, contentLength: r.ContentLength})
}

func (s *seen) all() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.reqs...)
}

// recordAndReply records each request and answers with status and body.
func recordAndReply(s *seen, status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// plainReader hides every method of r but Read: a one-shot reader.
type plainReader struct{ r io.Reader }

func (p plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

// typedReader is a reader that names its content type.
type typedReader struct {
	io.Reader
	ct string
}

func (t typedReader) ContentType() string { return t.ct }

func TestExecuteSendsTheBodyAsGiven(t *testing.T) {
	type thing struct {
		Prompt string `json:"prompt"`
		N      int    `json:"n"`
	}
	partly := bytes.NewReader([]byte(`xx{"from":"seeker"}`))
	_, _ = partly.Seek(2, io.SeekStart) // a reader read from is sent from where it stands
	cases := []struct {
		name, method string
		params       any
		wantBody     string
		wantCT       string
		wantLen      int64
	}{
		{"bytes", "POST", []byte(`{"prompt":"as is" }`), `{"prompt":"as is" }`, "application/json", 19},
		{"value", "POST", thing{"calm", 2}, `{"prompt":"calm","n":2}`, "application/json", 23},
		{"reader at", "PUT", strings.NewReader(`{"r":1}`), `{"r":1}`, "application/json", 7},
		{"seeker from its place", "POST", partly, `{"from":"seeker"}`, "application/json", 17},
		{"one-shot reader", "POST", plainReader{strings.NewReader(`{"once":true}`)}, `{"once":true}`, "application/json", -1},
		{"typed reader", "POST", typedReader{strings.NewReader("abc"), "text/plain"}, "abc", "text/plain", -1},
		{"nil", "DELETE", nil, "", "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s seen
			ts := newTestServer(t, recordAndReply(&s, 200, `{"success":true,"data":"ok"}`))
			c := ts.client(t)
			var got []byte
			err := c.Execute(context.Background(), tc.method, "/image/v2/new-thing?x=1", tc.params, &got)
			require.NoError(t, err)
			require.JSONEq(t, `{"success":true,"data":"ok"}`, string(got))
			reqs := s.all()
			require.Len(t, reqs, 1)
			r := reqs[0]
			require.Equal(t, tc.method, r.method)
			require.Equal(t, "/image/v2/new-thing", r.path)
			require.Equal(t, "x=1", r.query)
			require.Equal(t, tc.wantBody, string(r.body))
			require.Equal(t, tc.wantCT, r.header.Get("Content-Type"))
			require.Equal(t, tc.wantLen, r.contentLength)
			require.Equal(t, testKey, r.header.Get(headerAccessKey))
			require.Equal(t, "application/json", r.header.Get("Accept"))
			require.True(t, strings.HasPrefix(r.header.Get("User-Agent"), "creative-go/"))
		})
	}
}

func TestExecuteKeepsTheBaseURLsPath(t *testing.T) {
	var s seen
	ts := newTestServer(t, recordAndReply(&s, 200, `{"success":true,"data":1}`))
	c := newTestClient(t, ts.URL+"/gw/creative/")
	require.NoError(t, c.Post(context.Background(), "audio/v9/hum", map[string]string{"a": "b"}, nil))
	require.NoError(t, c.Get(context.Background(), "/audio/v9/hum", nil))
	require.NoError(t, c.Get(context.Background(), "audio/v9.1/..hum.json;v=2", nil), "dots within a name are a name")
	reqs := s.all()
	require.Len(t, reqs, 3)
	require.Equal(t, "/gw/creative/audio/v9.1/..hum.json;v=2", reqs[2].path)
	require.Equal(t, "/gw/creative/audio/v9/hum", reqs[0].path)
	require.Equal(t, `{"a":"b"}`, string(reqs[0].body))
	require.Equal(t, "GET", reqs[1].method)
	require.Empty(t, reqs[1].body)
}

func TestExecuteRefusesPathsOffTheBaseURL(t *testing.T) {
	var other seen
	elsewhere := newTestServer(t, recordAndReply(&other, 200, `{}`))
	var s seen
	ts := newTestServer(t, recordAndReply(&s, 200, `{"success":true,"data":1}`))
	c := newTestClient(t, ts.URL+"/creative")
	host := strings.TrimPrefix(elsewhere.URL, "http://")
	for _, path := range []string{
		elsewhere.URL + "/x",
		"//" + host + "/x",
		ts.URL + "/creative/x", // even the base URL's own origin: a path, not a URL
		"../x",
		"/a/../../x",
		"a/./b",
		"%2e%2e/x",
		"a/%2E%2E/%2e%2E/x",
		"a\\..\\x",
		"a/b#frag",
		"a/\x00b",
		"a/" + testKey,
		"a?k=" + testKey,
		"a/%5C..%5Cx",         // a backslash, percent-encoded
		"a/b%00c",             // a NUL, percent-encoded
		"a/%252e%252e/x",      // dots encoded twice, for a server that decodes twice
		"a/..%252f..%252fx",   // a slash encoded twice
		"a;b/..;/..;/x",       // Tomcat's path parameters
		"\uff0e\uff0e/x",      // fullwidth dots, which NFKC folds into "."
		"a/\u2025/x",          // the two dot leader, ".." once normalized
		"a/.%20/x",            // a dot and a space, which Windows drops
		"a/%2e%2e%3bjsession", // "..;" percent-encoded
	} {
		for _, method := range []string{"POST", "GET"} {
			err := c.Execute(context.Background(), method, path, []byte(`{}`), nil)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve, "%s %q", method, path)
			require.ErrorIs(t, err, ErrInvalidRequest)
			require.NotContains(t, err.Error(), testKey)
		}
	}
	require.Error(t, c.Execute(context.Background(), "PO ST", "/x", nil, nil))
	const callKey = "ck-1234567890-CALLKEY"
	err := c.Execute(context.Background(), "POST", "a/"+callKey, nil, nil, WithAccessKey(callKey))
	require.ErrorIs(t, err, ErrInvalidRequest)
	require.NotContains(t, err.Error(), callKey)
	// A key given as the method (the arguments swapped) is a token HTTP
	// would carry as it is, and errors name the call by it.
	err = c.Execute(context.Background(), testKey, "a", nil, nil)
	require.ErrorIs(t, err, ErrInvalidRequest)
	require.Empty(t, leak(err.Error(), testKey))
	err = c.Execute(context.Background(), callKey, "a", nil, nil, WithAccessKey(callKey))
	require.ErrorIs(t, err, ErrInvalidRequest)
	require.NotContains(t, err.Error(), callKey)
	require.Empty(t, other.all(), "a request reached another host")
	require.Empty(t, s.all(), "a refused path was sent")
	require.Zero(t, elsewhere.hits.Load()+ts.hits.Load())
}

func TestExecuteNeverSendsTheKeyOffOrigin(t *testing.T) {
	// A redirect of a raw call to another origin is refused as every
	// call's is: the key reaches no other host.
	var other seen
	elsewhere := newTestServer(t, recordAndReply(&other, 200, `{"success":true,"data":1}`))
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, elsewhere.URL+"/x", http.StatusTemporaryRedirect)
	})
	c := ts.client(t)
	err := c.Execute(context.Background(), "POST", "/image/v2/x", []byte(`{}`), nil)
	require.ErrorIs(t, err, ErrUnexpectedResponse)
	require.Empty(t, other.all())
	require.EqualValues(t, 1, ts.hits.Load())
}

func TestExecuteResults(t *testing.T) {
	const answer = `{"success":true,"message":"ok","data":{"url":"https://f.example/a.wav","credits":3}}`
	ts := newTestServer(t, replyJSON(200, answer))
	c := ts.client(t)
	ctx := context.Background()

	var raw []byte
	require.NoError(t, c.Post(ctx, "/x/v2/y", nil, &raw))
	require.Equal(t, answer, string(raw))

	var v struct {
		Data struct {
			URL     string `json:"url"`
			Credits int    `json:"credits"`
		} `json:"data"`
	}
	require.NoError(t, c.Post(ctx, "/x/v2/y", nil, &v))
	require.Equal(t, "https://f.example/a.wav", v.Data.URL)
	require.Equal(t, 3, v.Data.Credits)

	var resp *http.Response
	require.NoError(t, c.Post(ctx, "/x/v2/y", nil, &resp))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, answer, string(body))
	require.Equal(t, 200, resp.StatusCode)
	require.Empty(t, resp.Request.Header.Get(headerAccessKey), "the answer handed over carries the key in no header")

	require.NoError(t, c.Post(ctx, "/x/v2/y", nil, nil))
	require.EqualValues(t, 4, ts.hits.Load())

	var notPtr struct{}
	require.ErrorIs(t, c.Post(ctx, "/x/v2/y", nil, notPtr), ErrInvalidRequest)
	require.EqualValues(t, 4, ts.hits.Load(), "a wrong res is refused before anything is sent")
}

func TestExecuteAnswersAreBoundedAndChecked(t *testing.T) {
	t.Run("too large", func(t *testing.T) {
		ts := newTestServer(t, replyJSON(200, `{"success":true,"data":"`+strings.Repeat("a", 1000)+`"}`))
		c := ts.client(t)
		var raw []byte
		err := c.Post(context.Background(), "/x/v2/y", nil, &raw, WithMaxResponseBytes(100))
		require.ErrorIs(t, err, ErrUnexpectedResponse)
		var resp *http.Response
		require.NoError(t, c.Post(context.Background(), "/x/v2/y", nil, &resp, WithMaxResponseBytes(100)))
		_, err = io.ReadAll(resp.Body)
		require.ErrorIs(t, err, ErrUnexpectedResponse)
		require.NoError(t, resp.Body.Close())
	})
	t.Run("success false", func(t *testing.T) {
		ts := newTestServer(t, replyJSON(200, `{"success":false,"message":"no credits left for `+testKey+`"}`))
		c := ts.client(t)
		var v map[string]any
		err := c.Post(context.Background(), "/x/v2/y", nil, &v)
		var ae *APIError
		require.ErrorAs(t, err, &ae)
		require.Contains(t, ae.Message, "no credits left")
		require.NotContains(t, err.Error(), testKey)
		require.Nil(t, v)
	})
	t.Run("error status", func(t *testing.T) {
		ts := newTestServer(t, replyJSON(400, `{"success":false,"message":"bad field"}`))
		c := ts.client(t)
		err := c.Post(context.Background(), "/x/v2/y", nil, nil)
		require.ErrorIs(t, err, ErrInvalidRequest)
		var ae *APIError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, "POST /x/v2/y", ae.Operation)
		require.EqualValues(t, 1, ts.hits.Load())
	})
}

func TestExecuteCutAnswerIsOutcomeUnknown(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		hijack(w, r, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"success\":true,", nil)
	})
	c := ts.client(t)
	for _, res := range []any{nil, new([]byte), new(map[string]any)} {
		before := ts.hits.Load()
		err := c.Post(context.Background(), "/x/v2/y", []byte(`{}`), res)
		require.ErrorIs(t, err, ErrOutcomeUnknown, "%T", res)
		require.Equal(t, before+1, ts.hits.Load(), "a cut answer was sent again")
	}
	var resp *http.Response
	require.NoError(t, c.Post(context.Background(), "/x/v2/y", []byte(`{}`), &resp))
	_, err := io.ReadAll(resp.Body)
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	require.NoError(t, resp.Body.Close())
}

// An answer with neither a length nor chunks ends where its connection
// closes: JSON cut short there is an answer cut short, whatever res is.
func TestExecuteJSONCutByTheClosingConnectionIsOutcomeUnknown(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		hijack(w, r, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"success\":true,\"data\":{\"a\":", nil)
	})
	c := ts.client(t)
	for _, res := range []any{nil, new([]byte), new(map[string]any)} {
		before := ts.hits.Load()
		err := c.Post(context.Background(), "/x/v2/y", []byte(`{}`), res)
		require.ErrorIs(t, err, ErrOutcomeUnknown, "%T", res)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "%T", res)
		require.Equal(t, before+1, ts.hits.Load(), "a cut answer was sent again")
	}
}

func TestExecuteRetriesOnlyWhatWasNotDone(t *testing.T) {
	t.Run("refused is retried with the same bytes", func(t *testing.T) {
		var s seen
		n := 0
		ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
			s.record(r)
			n++
			if n == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			_, _ = io.WriteString(w, `{"success":true,"data":1}`)
		})
		c := ts.client(t)
		body := bytes.NewReader([]byte(`{"p":"retry me"}`))
		require.NoError(t, c.Post(context.Background(), "/x/v2/y", body, nil))
		reqs := s.all()
		require.Len(t, reqs, 2)
		require.Equal(t, `{"p":"retry me"}`, string(reqs[0].body))
		require.Equal(t, `{"p":"retry me"}`, string(reqs[1].body))
	})
	t.Run("unknown is not retried", func(t *testing.T) {
		ts := newTestServer(t, replyJSON(500, `{"success":false,"message":"boom"}`))
		c := ts.client(t)
		err := c.Post(context.Background(), "/x/v2/y", map[string]int{"a": 1}, nil)
		require.ErrorIs(t, err, ErrOutcomeUnknown)
		require.EqualValues(t, 1, ts.hits.Load())
	})
	t.Run("a one-shot reader is sent once", func(t *testing.T) {
		ts := newTestServer(t, replyJSON(503, `{"success":false,"message":"busy"}`))
		c := ts.client(t)
		err := c.Post(context.Background(), "/x/v2/y", plainReader{strings.NewReader(`{"a":1}`)}, nil)
		require.ErrorIs(t, err, ErrRefused)
		require.Contains(t, err.Error(), "one-shot")
		require.EqualValues(t, 1, ts.hits.Load())
	})
	t.Run("a reader that fails is not sent", func(t *testing.T) {
		ts := newTestServer(t, replyJSON(200, `{"success":true,"data":1}`))
		c := ts.client(t)
		err := c.Post(context.Background(), "/x/v2/y", plainReader{iotest.ErrReader(errors.New("disk gone"))}, nil)
		require.Error(t, err)
		require.NotErrorIs(t, err, ErrOutcomeUnknown)
	})
}

func TestExecuteRunsThePipelinesOptions(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Request-Id", "req-9")
		_, _ = io.WriteString(w, `{"success":true,"data":1}`)
	})
	c := ts.client(t, WithHeader("X-Client", "c"))
	var (
		attempts int
		resp     *http.Response
		hdr      http.Header
	)
	mw := func(req *http.Request, next MiddlewareNext) (*http.Response, error) {
		attempts++
		hdr = req.Header.Clone()
		return next(req)
	}
	err := c.Post(context.Background(), "/x/v2/y", nil, nil, WithMiddleware(mw), WithResponseInto(&resp), WithHeader("X-Call", "1"), WithAccessKey("call-key"))
	require.NoError(t, err)
	require.Equal(t, 1, attempts)
	require.Equal(t, "call-key", hdr.Get(headerAccessKey))
	require.Equal(t, "c", hdr.Get("X-Client"))
	require.Equal(t, "1", hdr.Get("X-Call"))
	require.NotNil(t, resp)
	require.Equal(t, "req-9", resp.Header.Get("X-Request-Id"))
	require.Empty(t, resp.Request.Header.Get(headerAccessKey))
}

// A res that is a nil pointer, of the kinds Execute fills itself too, is
// refused before anything is sent: the paid answer would have nowhere to
// go.
func TestExecuteRefusesANilRes(t *testing.T) {
	ts := newTestServer(t, replyJSON(200, `{"success":true,"data":1}`))
	c := ts.client(t)
	for _, res := range []any{(*[]byte)(nil), (**http.Response)(nil), (*map[string]any)(nil), map[string]any{}, 3} {
		err := c.Post(context.Background(), "/x/v2/y", nil, res)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, "%T", res)
		require.Equal(t, "res", ve.Field)
	}
	require.Zero(t, ts.hits.Load(), "a call whose answer had nowhere to go was sent")
}
