package creative

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestARedirectToAnotherOriginLosesTheKey(t *testing.T) {
	var keyThere []string
	other := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		keyThere = append(keyThere, r.Header.Get("x-access-key"))
		replyJSON(200, `{"success":true,"message":"ok","data":"http://127.0.0.1/a.wav"}`)(w, r)
	})
	_, port, _ := net.SplitHostPort(other.Listener.Addr().String())
	otherURL := "http://localhost:" + port // same machine, another origin

	var keyHome []string
	home := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		keyHome = append(keyHome, r.Header.Get("x-access-key"))
		switch r.URL.Path {
		case "/audio/v1/text-to-music":
			http.Redirect(w, r, otherURL+"/moved", http.StatusTemporaryRedirect)
		case "/video/v1/infinite-zoom":
			http.Redirect(w, r, "/same-origin", http.StatusTemporaryRedirect)
		default:
			replyJSON(200, `{"success":true,"message":"ok","data":"http://127.0.0.1/z.gif"}`)(w, r)
		}
	})
	c := newTestClient(t, home.URL)

	_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
	require.NoError(t, err)
	assert.Equal(t, []string{""}, keyThere, "the key must not reach another origin")

	_, err = c.InfiniteZoom(context.Background(), InfiniteZoomRequest{Prompt: "p"})
	require.NoError(t, err)
	assert.Equal(t, []string{testKey, testKey, testKey}, keyHome, "a same-origin redirect keeps the key")
}

func TestDownloadNeverSendsTheKey(t *testing.T) {
	var got []string
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("x-access-key"))
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, "RIFF-file-bytes")
	})
	c := newTestClient(t, ts.URL) // the file lives on the base URL's own host

	var b bytes.Buffer
	n, err := c.Download(context.Background(), URL(ts.URL+"/files/a.wav"), &b)
	require.NoError(t, err)
	assert.Equal(t, int64(15), n)
	assert.Equal(t, "RIFF-file-bytes", b.String())

	_, err = c.Download(context.Background(), URL(ts.URL+"/missing"), io.Discard)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 404, apiErr.StatusCode)
	assert.Equal(t, "download", apiErr.Operation)
	assert.Equal(t, []string{"", ""}, got)

	for _, bad := range []URL{"", "file:///etc/passwd", "ftp://x.example/a", "/relative"} {
		_, err := c.Download(context.Background(), bad, io.Discard)
		var v *ValidationError
		assert.ErrorAs(t, err, &v, "%q", bad)
	}
	assert.Len(t, got, 2, "refused URLs send nothing")
}

func TestFormattingAClientNeverShowsTheKey(t *testing.T) {
	c := newTestClient(t, "https://api.example.com", WithLogger(slog.New(slog.DiscardHandler)))
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		assert.NotContains(t, fmt.Sprintf(verb, c), testKey, verb)
		assert.NotContains(t, fmt.Sprintf(verb, *c), testKey, verb+" of the value")
	}
	assert.Contains(t, fmt.Sprint(c), "[redacted]")
	var b bytes.Buffer
	slog.New(slog.NewJSONHandler(&b, nil)).Info("client", "c", c)
	assert.NotContains(t, b.String(), testKey)
	assert.Contains(t, b.String(), "api.example.com")
}

func TestLoggingShowsAttemptsAndRetriesWithoutTheKey(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.handler = func(w http.ResponseWriter, r *http.Request) {
		if ts.hits.Load() == 1 {
			replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
			return
		}
		replyJSON(200, `{"success":true,"message":"ok","data":"http://127.0.0.1/a.wav"}`)(w, r)
	}
	logs := &logCapture{}
	c := newTestClient(t, ts.URL, WithLogger(slog.New(logs)))
	_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
	require.NoError(t, err)

	require.Len(t, logs.lines, 3)
	assert.Equal(t, []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelDebug}, logs.level)
	first, retry, second := logs.attrs[0], logs.attrs[1], logs.attrs[2]
	assert.Equal(t, "audio/text-to-music", first["operation"])
	assert.EqualValues(t, 1, first["attempt"])
	assert.EqualValues(t, 503, first["status"])
	assert.Equal(t, "refused", first["kind"])
	assert.Contains(t, first, "duration")
	assert.Contains(t, first, "bytes")
	assert.EqualValues(t, 1, retry["attempt"])
	assert.EqualValues(t, 503, retry["status"])
	assert.Contains(t, retry, "wait")
	assert.EqualValues(t, 2, second["attempt"])
	assert.EqualValues(t, 200, second["status"])
	assert.Equal(t, "answered", second["kind"])
	assert.NotContains(t, logs.all(), testKey)
}

func TestNoErrorOrLogLineEverHoldsTheKey(t *testing.T) {
	echo := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("x-access-key")
		switch r.URL.Path {
		case "/audio/v1/text-to-music":
			replyJSON(400, `{"success":false,"message":"key `+key+` is not valid"}`)(w, r)
		case "/image/v1/generate-qr":
			w.WriteHeader(502)
			_, _ = io.WriteString(w, "<html>bad gateway for "+key+"</html>")
		default:
			replyJSON(200, `{"success":false,"message":"denied for `+key+`"}`)(w, r)
		}
	})
	refused := "http://" + refusedAddr(t)

	logs := &logCapture{}
	var errs []error
	for _, base := range []string{echo.URL, refused} {
		c := newTestClient(t, base, WithLogger(slog.New(logs)), WithMaxRetries(1))
		ctx := context.Background()
		_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"})
		errs = append(errs, err)
		_, err = c.GenerateQR(ctx, GenerateQRRequest{URL: "https://example.com", Prompt: "p"})
		errs = append(errs, err)
		_, err = c.InfiniteZoom(ctx, InfiniteZoomRequest{Prompt: "p"})
		errs = append(errs, err)
		_, err = c.TextToImage(ctx, TextToImageRequest{Prompt: "p", NumberOfResults: 11})
		errs = append(errs, err)
		_, err = c.Download(ctx, URL(base+"/audio/v1/text-to-music"), io.Discard)
		errs = append(errs, err)
	}
	for _, err := range errs {
		require.Error(t, err)
		assert.NotContains(t, err.Error(), testKey)
		assert.NotContains(t, fmt.Sprintf("%+v", err), testKey)
		var apiErr *APIError
		if assertAs(err, &apiErr) {
			assert.NotContains(t, string(apiErr.Body), testKey)
		}
	}
	assert.NotEmpty(t, logs.lines)
	assert.NotContains(t, logs.all(), testKey)
	assert.True(t, strings.Contains(errs[0].Error(), "[redacted]"), "an echoed key is redacted: %v", errs[0])
}

func assertAs(err error, target **APIError) bool {
	e, ok := err.(*APIError)
	if ok {
		*target = e
	}
	return ok
}

func TestTheDefaultClientLogsNothing(t *testing.T) {
	var stderr bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	ts := newTestServer(t, replyJSON(503, `{"success":false,"message":"busy"}`))
	c := newTestClient(t, ts.URL)
	_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
	require.Error(t, err)
	assert.Empty(t, stderr.String())
}

func TestHeadersOfWithHeaderStayWithTheService(t *testing.T) {
	var other http.Header
	elsewhere := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		other = r.Header.Clone()
		_, _ = io.Copy(io.Discard, r.Body)
		replyJSON(200, `{"success":true,"data":"https://f.example/a.wav"}`)(w, r)
	})
	var own http.Header
	service := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		own = r.Header.Clone()
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	})
	c := newTestClient(t, service.URL, WithHeader("X-Gateway-Secret", "s3cret"))
	_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"}, WithHeader("X-Trace", "t1"))
	require.NoError(t, err)
	assert.Equal(t, "s3cret", own.Get("X-Gateway-Secret"))
	assert.Equal(t, "t1", own.Get("X-Trace"))
	assert.Empty(t, other.Get("X-Gateway-Secret"), "a redirect to another origin drops the Client's headers")
	assert.Empty(t, other.Get("X-Trace"), "and the call's")
	assert.Empty(t, other.Get(headerAccessKey))

	_, err = c.Download(context.Background(), URL(elsewhere.URL+"/file"), io.Discard, WithHeader("X-Range-Hint", "all"))
	require.NoError(t, err)
	assert.Empty(t, other.Get("X-Gateway-Secret"), "a download never carries the Client's headers")
	assert.Equal(t, "all", other.Get("X-Range-Hint"), "but does carry the call's own")
}
