package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
)

func TestVerboseLogsStayOffTheProgressLine(t *testing.T) {
	srv, env := fakeEnv(t)
	srv.Fail("image/generate-qr", creativetest.Fault{Status: 503, Times: 1})
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, progress: true}
	code := a.run([]string{"-v", "image", "generate-qr", "--url", "https://e.example", "--prompt", "p", "--out", t.TempDir()})
	require.Equal(t, 0, code, stderr.String())
	// Every log line starts at the beginning of a line: after a newline or
	// after the display's erase sequence, never after progress text.
	for _, chunk := range strings.Split(stderr.String(), "\n") {
		if i := strings.Index(chunk, "time="); i > 0 {
			before := chunk[:i]
			assert.True(t, strings.HasSuffix(before, "\x1b[J"), "log line glued to %q", before)
		}
	}
	assert.Contains(t, stderr.String(), "creative: retrying")
	assert.Contains(t, stderr.String(), "creative: attempt")
	assert.Equal(t, 2, srv.Count("image/generate-qr"))
}

// The progress line names the attempt and the wait before a retry, on the
// bubble's clock: the backoff of 300 ms shows as 0.3s.
func TestProgressShowsTheAttemptAndTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := creativetest.Start(t, creativetest.WithInMemoryNetwork())
		srv.Fail("image/generate-qr", creativetest.Fault{Status: 503, Times: 1})
		s := newCallStatus("image/generate-qr")
		var lines []string
		look := func() { lines = append(lines, s.String()) }
		// Seen from the client's middleware (outside the call's) and from the
		// handler the records go to after the status read them.
		c := srv.Client(creative.WithRetryWait(300*time.Millisecond, 300*time.Millisecond), creative.WithMiddleware(
			func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
				resp, err := next(req)
				look()
				return resp, err
			}))
		after := &recordsHandler{seen: func(r slog.Record) {
			if r.Message == "creative: retrying" {
				look()
			}
		}}
		_, err := c.GenerateQR(t.Context(), creative.GenerateQRRequest{URL: "https://e.example", Prompt: "p"}, s.track(after)...)
		require.NoError(t, err)
		require.Len(t, lines, 3)
		assert.Equal(t, "image/generate-qr 0.0s", lines[0], "the first attempt is not named")
		assert.Regexp(t, `^image/generate-qr 0\.0s \(retry in 0\.[0-3]s\)$`, lines[1], "the wait before the retry (jittered)")
		assert.Regexp(t, `^image/generate-qr 0\.[0-3]s attempt 2$`, lines[2], "the retry, and no wait")
		assert.Equal(t, int32(2), s.attempt.Load())
	})
}

func TestProgressCountsUploadsAndDownloadsWithTheirSizes(t *testing.T) {
	srv, _ := fakeEnv(t)
	c := srv.Client()
	t.Run("an upload, counted anew on each attempt", func(t *testing.T) {
		srv.Fail("image/re-imagine", creativetest.Fault{Status: 503, Times: 1})
		s := newCallStatus("image/re-imagine")
		_, err := c.ReImagine(t.Context(), creative.ReImagineRequest{Image: creative.FileFromPath(pngFile(t, 300, 300))}, s.track(nil)...)
		require.NoError(t, err)
		reqs := srv.Requests()
		size := reqs[len(reqs)-1].Parts[0].Size
		require.Greater(t, size, int64(0))
		// The form around the file adds a few hundred bytes.
		assert.Regexp(t, `attempt 2 sent (\d+) B of (\d+) B$`, s.String())
		sent, total := s.sent.Load(), s.size.Load()
		assert.Equal(t, total, sent, "the second attempt sent it all, and the first is not added")
		assert.InDelta(t, size, total, 1024)
	})
	t.Run("a download, with the size its answer declares", func(t *testing.T) {
		release := make(chan struct{})
		files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "131072")
			_, _ = w.Write(make([]byte, 65536))
			w.(http.Flusher).Flush()
			<-release
			_, _ = w.Write(make([]byte, 65536))
		}))
		defer files.Close()
		s := newCallStatus("download")
		done := make(chan error, 1)
		go func() {
			_, err := c.Download(t.Context(), creative.URL(files.URL+"/f.wav"), io.Discard, s.track(nil)...)
			done <- err
		}()
		require.Eventually(t, func() bool { return s.got.Load() == 65536 }, 5*time.Second, time.Millisecond)
		assert.Regexp(t, `^download \d\.\ds got 64\.0 KiB of 128\.0 KiB$`, s.String())
		close(release)
		require.NoError(t, <-done)
		assert.Contains(t, s.String(), "got 128.0 KiB of 128.0 KiB")
	})
}

// recordsHandler is a slog.Handler that shows each record to seen.
type recordsHandler struct{ seen func(slog.Record) }

func (h *recordsHandler) Enabled(context.Context, slog.Level) bool      { return true }
func (h *recordsHandler) Handle(_ context.Context, r slog.Record) error { h.seen(r); return nil }
func (h *recordsHandler) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h *recordsHandler) WithGroup(string) slog.Handler                 { return h }
