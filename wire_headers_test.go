package creative

import (
	"context"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/internal/ops"
)

// checkSpecHeaders checks the header of a request of op as the server got
// it against the spec (section 4 and 5): the access key, once, as it was
// given; application/json for a JSON body, multipart/form-data with a
// boundary for a form; and an Accept only where an operation answers more
// than its JSON envelope (text-to-speech: audio, or the envelope).
func checkSpecHeaders(t *testing.T, op string, form bool, h http.Header, extra ...string) {
	t.Helper()
	assert.Equal(t, []string{testKey}, h.Values(headerAccessKey), "the access key, once")
	if form {
		mt, params, err := mime.ParseMediaType(h.Get("Content-Type"))
		require.NoError(t, err)
		assert.Equal(t, "multipart/form-data", mt)
		assert.NotEmpty(t, params["boundary"])
	} else {
		assert.Equal(t, []string{"application/json"}, h.Values("Content-Type"))
	}
	if op == ops.TextToSpeech {
		assert.Equal(t, []string{"audio/mpeg, application/json"}, h.Values("Accept"))
	} else {
		assert.Empty(t, h.Values("Accept"), "an operation that answers its JSON envelope whatever it accepts")
	}
	assert.True(t, strings.HasPrefix(h.Get("User-Agent"), "creative-go/"), h.Get("User-Agent"))
	known := map[string]bool{"X-Access-Key": true, "Content-Type": true, "Content-Length": true, "Accept": true, "Accept-Encoding": true, "User-Agent": true}
	for _, k := range extra {
		known[k] = true
	}
	for k := range h {
		assert.True(t, known[k], "header %s: %q", k, h[k])
	}
}

// Every one of the sixteen operations sends on the wire the headers the
// spec asks for and no Accept it does not need, with the Client's own
// settings (the header built once per operation) and with a call's
// options (built for the call).
func TestEveryOperationSendsTheHeadersTheSpecAsksFor(t *testing.T) {
	seen := map[string]bool{}
	for _, tt := range endpointCases() {
		t.Run(tt.op, func(t *testing.T) {
			var got http.Header
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				got = r.Header.Clone()
				if tt.audio != "" {
					w.Header().Set("Content-Type", "audio/mpeg")
					_, _ = w.Write([]byte(tt.audio))
					return
				}
				replyJSON(200, `{"success":true,"message":"done","data":`+tt.data+`}`)(w, r)
			})
			res, err := tt.call(newTestClient(t, ts.URL, WithHeader("X-Client", "c")))
			require.NoError(t, err)
			if a, ok := res.(*Audio); ok {
				require.NoError(t, a.Close())
			}
			require.NotNil(t, got)
			checkSpecHeaders(t, tt.op, tt.form, got, "X-Client")
			assert.Equal(t, "c", got.Get("X-Client"))
			seen[tt.op] = true
		})
	}
	for _, o := range ops.All {
		assert.True(t, seen[o.Name], "%s has no case", o.Name)
	}
	assert.Len(t, seen, 16)

	var got http.Header
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		replyJSON(200, `{"success":true,"message":"done","data":"https://f.example/m.wav"}`)(w, r)
	})
	c := newTestClient(t, ts.URL, WithHeader("X-Client", "c"))
	_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"}, WithHeader("X-Call", "1"))
	require.NoError(t, err)
	checkSpecHeaders(t, ops.TextToMusic, false, got, "X-Client", "X-Call")
	assert.Equal(t, "1", got.Get("X-Call"))
}

// A Download says it takes any file, and a raw call that it reads JSON:
// both keep their Accept.
func TestDownloadAndExecuteKeepTheirAccept(t *testing.T) {
	var got http.Header
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte("file"))
			return
		}
		replyJSON(200, `{"success":true,"message":"done","data":"x"}`)(w, r)
	})
	c := newTestClient(t, ts.URL, WithPrivateDownloads())
	var b strings.Builder
	_, err := c.Download(context.Background(), URL(ts.URL+"/f.wav"), &b)
	require.NoError(t, err)
	assert.Equal(t, []string{"*/*"}, got.Values("Accept"))
	assert.Empty(t, got.Values(headerAccessKey), "no key to the file's host")

	var out []byte
	require.NoError(t, c.Execute(context.Background(), http.MethodPost, "/text/v1/other", map[string]string{"a": "b"}, &out))
	assert.Equal(t, []string{"application/json"}, got.Values("Accept"))
	assert.Equal(t, []string{testKey}, got.Values(headerAccessKey))
}
