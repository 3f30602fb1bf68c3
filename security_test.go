package creative

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestACallIsNotRedirectedToAnotherOrigin(t *testing.T) {
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
	assert.ErrorIs(t, err, ErrUnexpectedResponse, "a call's redirect to another origin is not followed")
	assert.Empty(t, keyThere, "nothing reaches another origin")

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
	require.ErrorIs(t, err, ErrUnexpectedResponse, "a call's redirect to another origin is not followed")
	assert.Equal(t, "s3cret", own.Get("X-Gateway-Secret"))
	assert.Equal(t, "t1", own.Get("X-Trace"))
	assert.Nil(t, other, "nothing reached the other origin")

	// A Download from the service's origin, redirected to a file host.
	_, err = c.Download(context.Background(), URL(service.URL+"/file"), io.Discard, WithHeader("X-Trace", "t1"))
	require.NoError(t, err)
	assert.Equal(t, "t1", own.Get("X-Trace"), "the call's own header goes to the first host")
	assert.Empty(t, other.Get("X-Trace"), "a redirect to another origin drops the call's headers")
	assert.Empty(t, other.Get("X-Gateway-Secret"))
	assert.Empty(t, other.Get(headerAccessKey))

	_, err = c.Download(context.Background(), URL(elsewhere.URL+"/file"), io.Discard, WithHeader("X-Range-Hint", "all"))
	require.NoError(t, err)
	assert.Empty(t, other.Get("X-Gateway-Secret"), "a download never carries the Client's headers")
	assert.Equal(t, "all", other.Get("X-Range-Hint"), "but does carry the call's own")
}

// escapeEach writes every byte of s as an escape: "%%%02x" for a URL's
// percent-encoding, `\u%04x` for a JSON or JavaScript \u escape.
func escapeEach(s, format string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}

// A keyURL is a URL under base holding the key k, as it is or escaped.
type keyURL struct {
	name string
	url  func(base, k string) string
}

// keyURLs are URLs a service might return, or a caller might download,
// with a key in them.
var keyURLs = []keyURL{
	{"plain in the query", func(base, k string) string { return base + "/img.png?k=" + k }},
	{"query-escaped", func(base, k string) string { return base + "/img.png?k=" + url.QueryEscape(k) }},
	{"every byte percent-encoded, in the path", func(base, k string) string { return base + "/" + escapeEach(k, "%%%02x") + "/img.png" }},
	{`\u-escaped in the query`, func(base, k string) string { return base + "/img.png?k=" + escapeEach(k, `\u%04x`) }},
	{"as the password of the user info", func(base, k string) string {
		u, _ := url.Parse(base + "/img.png")
		u.User = url.UserPassword("u", k)
		return u.String()
	}},
}

// keyModes are the keys of a call, and the key its URL holds: the call's
// own, or the Client's, which a server knows from earlier calls.
var keyModes = []struct {
	name string
	opts []Option
	key  string
}{
	{"the Client's key", nil, testKey},
	{"a call's own key", []Option{WithAccessKey(ownKey)}, ownKey},
	{"the Client's key in a call with its own", []Option{WithAccessKey(ownKey)}, testKey},
}

// keyFree are URL paths with no key, and with pieces of k but not all of
// it.
func keyFree(k string) []string {
	return []string{"/a.wav", "/" + k[:len(k)-1] + ".wav?k=" + k[1:]}
}

func TestURLResultsHoldingTheKeyAreRefused(t *testing.T) {
	ops := []struct {
		name string
		data func(u string) string // the answer's data, holding u
		call func(c *Client, opts []Option) (any, error)
	}{
		{"TextToMusic", jsonString, func(c *Client, opts []Option) (any, error) {
			return c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"}, opts...)
		}},
		{"InfiniteZoom", jsonString, func(c *Client, opts []Option) (any, error) {
			return c.InfiniteZoom(context.Background(), InfiniteZoomRequest{Prompt: "p"}, opts...)
		}},
		{"SplitAudio, the second URL",
			func(u string) string { return `["https://cdn.example/vocals.wav",` + jsonString(u) + `]` },
			func(c *Client, opts []Option) (any, error) {
				return c.SplitAudio(context.Background(), SplitAudioRequest{Audio: FileFromBytes("a.wav", wavBytes)}, opts...)
			}},
	}
	forms := append(slices.Clip(keyURLs), keyURL{"in the fragment", func(base, k string) string { return base + "/img.png#" + k }})
	for _, op := range ops {
		for _, m := range keyModes {
			for _, f := range forms {
				t.Run(op.name+"/"+m.name+"/"+f.name, func(t *testing.T) {
					ts := newTestServer(t, replyJSON(200, envelopeOf(op.data(f.url("https://cdn.example", m.key)))))
					got, err := op.call(newTestClient(t, ts.URL), m.opts)
					assert.Empty(t, got, "no result")
					require.Error(t, err)
					assert.ErrorIs(t, err, ErrUnexpectedResponse)
					var ae *APIError
					require.ErrorAs(t, err, &ae)
					assert.Equal(t, 200, ae.StatusCode)
					assert.Contains(t, ae.Message, "holds the access key")
					assert.Contains(t, ae.Message, "[redacted]")
					assert.Contains(t, ae.Message, "the work was done")
					for where, text := range errorTexts(err) {
						assert.Empty(t, leak(text, testKey, ownKey), "%s: %q", where, text)
					}
					assert.Equal(t, int64(1), ts.hits.Load(), "an answered call is not sent again")
				})
			}
		}
	}
	for _, m := range keyModes {
		for i, path := range keyFree(m.key) {
			t.Run(fmt.Sprintf("kept/%s/%d", m.name, i), func(t *testing.T) {
				u := "https://cdn.example" + path
				ts := newTestServer(t, replyJSON(200, envelopeOf(jsonString(u))))
				got, err := newTestClient(t, ts.URL).TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"}, m.opts...)
				require.NoError(t, err)
				assert.Equal(t, URL(u), got)
			})
		}
	}
}

func TestDownloadRefusesAURLHoldingTheKey(t *testing.T) {
	var withKey atomic.Int64
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(headerAccessKey) != "" {
			withKey.Add(1)
		}
		_, _ = io.WriteString(w, "RIFF-file-bytes")
	})
	downloads := []struct {
		name string
		do   func(t *testing.T, c *Client, u URL, opts []Option) (int64, error)
	}{
		{"Download", func(_ *testing.T, c *Client, u URL, opts []Option) (int64, error) {
			return c.Download(context.Background(), u, io.Discard, opts...)
		}},
		{"DownloadFile", func(t *testing.T, c *Client, u URL, opts []Option) (int64, error) {
			dir := t.TempDir()
			n, err := c.DownloadFile(context.Background(), u, filepath.Join(dir, "a.wav"), opts...)
			if err != nil {
				assert.Empty(t, entries(t, dir), "nothing left behind")
			}
			return n, err
		}},
	}
	for _, d := range downloads {
		for _, m := range keyModes {
			for _, f := range keyURLs {
				t.Run(d.name+"/"+m.name+"/"+f.name, func(t *testing.T) {
					c := newTestClient(t, ts.URL)
					hits, conns := ts.hits.Load(), ts.conns.Load()
					n, err := d.do(t, c, URL(f.url(ts.URL, m.key)), m.opts)
					assert.Zero(t, n)
					var ve *ValidationError
					require.ErrorAs(t, err, &ve)
					assert.ErrorIs(t, err, ErrInvalidRequest)
					assert.Equal(t, "url", ve.Field)
					assert.Contains(t, ve.Value, "[redacted]")
					for where, text := range errorTexts(err) {
						assert.Empty(t, leak(text, testKey, ownKey), "%s: %q", where, text)
					}
					assert.Equal(t, hits, ts.hits.Load(), "requests sent")
					assert.Equal(t, conns, ts.conns.Load(), "connections opened")
				})
			}
		}
	}
	for _, m := range keyModes {
		for i, path := range keyFree(m.key) {
			t.Run(fmt.Sprintf("downloaded/%s/%d", m.name, i), func(t *testing.T) {
				hits := ts.hits.Load()
				var b bytes.Buffer
				n, err := newTestClient(t, ts.URL).Download(context.Background(), URL(ts.URL+path), &b, m.opts...)
				require.NoError(t, err)
				assert.Equal(t, int64(15), n)
				assert.Equal(t, "RIFF-file-bytes", b.String())
				assert.Equal(t, hits+1, ts.hits.Load(), "requests sent")
			})
		}
	}
	assert.Zero(t, withKey.Load(), "requests that carried the key")
}
