package creative

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// DownloadFile writes atomically: the file at the path is either the whole
// download or what was there before, and no temporary file outlives the
// call.

// fileBytes is the file the test servers serve.
var fileBytes = bytes.Repeat([]byte("RIFF-file-bytes!"), 4096) // 64 KiB

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// umask reads the process's umask from /proc without changing it (setting
// it to read it back would race with other tests creating files).
func umask(t *testing.T) fs.FileMode {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status to read the umask from")
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			require.NoError(t, err)
			return fs.FileMode(m)
		}
	}
	t.Skip("no Umask line in /proc/self/status")
	return 0
}

func TestDownloadFileWritesTheWholeFileAtomically(t *testing.T) {
	ss := newStampServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(fileBytes) })
	c := newTestClient(t, ss.URL)
	dir := t.TempDir()
	path := filepath.Join(dir, "music.wav")
	require.NoError(t, os.WriteFile(path, []byte("the old file"), 0o600))

	n, err := c.DownloadFile(context.Background(), URL(ss.URL+"/files/music.wav"), path)
	require.NoError(t, err)
	assert.Equal(t, int64(len(fileBytes)), n, "the bytes written")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, fileBytes, got)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, 0o644&^umask(t), fi.Mode().Perm(), "0644 before the umask, whatever the old file's mode")
	assert.Equal(t, []string{"music.wav"}, entries(t, dir), "no temporary file is left")
	assert.Empty(t, ss.header(1).Get("X-Access-Key"), "a download never sends the key")
}

func TestDownloadFileInTheWorkingDirectory(t *testing.T) {
	ss := newStampServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(fileBytes) })
	c := newTestClient(t, ss.URL)
	dir := t.TempDir()
	t.Chdir(dir)
	n, err := c.DownloadFile(context.Background(), URL(ss.URL+"/f.wav"), "f.wav")
	require.NoError(t, err)
	assert.Equal(t, int64(len(fileBytes)), n)
	assert.Equal(t, []string{"f.wav"}, entries(t, dir))
}

func TestDownloadFileLeavesNothingBehindWhenItFails(t *testing.T) {
	tests := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request)
		opts    []Option
		cancel  bool // cancel the call once the body has begun
		check   func(t *testing.T, err error)
	}{
		{
			name:    "an answer of 404",
			handler: func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
			check: func(t *testing.T, err error) {
				var apiErr *APIError
				require.ErrorAs(t, err, &apiErr)
				assert.Equal(t, 404, apiErr.StatusCode)
			},
		},
		{
			name: "a body that breaks off",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(fileBytes)))
				_, _ = w.Write(fileBytes[:1000])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			},
			check: func(t *testing.T, err error) {
				var netErr *NetworkError
				assert.ErrorAs(t, err, &netErr)
				assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			},
		},
		{
			name:    "a file over WithMaxResponseBytes",
			handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(fileBytes) },
			opts:    []Option{WithMaxResponseBytes(1000)},
			check:   func(t *testing.T, err error) { assert.ErrorIs(t, err, ErrUnexpectedResponse) },
		},
		{
			name: "a cancellation mid-body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write(fileBytes[:1000])
				w.(http.Flusher).Flush()
				stall(r)
			},
			cancel: true,
			check:  func(t *testing.T, err error) { assert.ErrorIs(t, err, context.Canceled) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss := newStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) { tt.handler(w, r) })
			c := newTestClient(t, ss.URL, WithMaxRetries(0))
			dir := t.TempDir()
			path := filepath.Join(dir, "out.bin")
			require.NoError(t, os.WriteFile(path, []byte("the old file"), 0o644))

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				// Cancel once the first bytes of the body were read: they
				// are then being written to the temporary file.
				tt.opts = append(tt.opts, WithMiddleware(func(req *http.Request, next MiddlewareNext) (*http.Response, error) {
					resp, err := next(req)
					if err == nil {
						resp.Body = &cancelAfterRead{ReadCloser: resp.Body, cancel: cancel}
					}
					return resp, err
				}))
			}
			done := make(chan struct{})
			var err error
			go func() {
				defer close(done)
				_, err = c.DownloadFile(ctx, URL(ss.URL+"/out.bin"), path, tt.opts...)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("DownloadFile did not return")
			}
			require.Error(t, err)
			tt.check(t, err)
			got, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			assert.Equal(t, "the old file", string(got), "the file at the path is untouched")
			assert.Equal(t, []string{"out.bin"}, entries(t, dir), "no temporary file is left")
		})
	}
	t.Run("a folder that does not exist", func(t *testing.T) {
		ss := newStampServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(fileBytes) })
		_, err := newTestClient(t, ss.URL).DownloadFile(context.Background(), URL(ss.URL+"/f"), filepath.Join(t.TempDir(), "no", "f"))
		assert.ErrorIs(t, err, fs.ErrNotExist)
	})
	t.Run("a URL that is not http(s) sends nothing", func(t *testing.T) {
		ss := newStampServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(fileBytes) })
		dir := t.TempDir()
		_, err := newTestClient(t, ss.URL).DownloadFile(context.Background(), "file:///etc/passwd", filepath.Join(dir, "f"))
		var v *ValidationError
		assert.ErrorAs(t, err, &v)
		assert.Empty(t, entries(t, dir))
		assert.Equal(t, 0, ss.count())
	})
}

// cancelAfterRead cancels a context once a read returned bytes.
type cancelAfterRead struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelAfterRead) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n > 0 {
		c.cancel()
	}
	return n, err
}
