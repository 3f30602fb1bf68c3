package creative

import (
	"context"
	"crypto/sha256"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The file given by path changes between the first attempt (answered 503)
// and the retry. The retry either sends what was validated again or the
// call fails with a *ValidationError saying the file changed, not retried:
// the server never gets a whole upload of the changed file.
func TestAFileChangedBetweenAttemptsIsNotSentAsIfItWereTheSame(t *testing.T) {
	const size = 40 << 10
	original := paddedPNG(t, 64, 64, size)
	tests := []struct {
		name   string
		change func(t *testing.T, path string)
		// rule is in the error when the call must fail; "" when the retry
		// must send the file as it is now.
		rule  string
		cause error
	}{
		{"it grows", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.Write(make([]byte, 1000))
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, "changed after it was validated (it had 40960 bytes and has 41960 now)", nil},
		{"it shrinks", func(t *testing.T, path string) {
			require.NoError(t, os.Truncate(path, size/2))
		}, "changed after it was validated (it had 40960 bytes and has 20480 now)", nil},
		{"it is replaced by another file, even with the same bytes", func(t *testing.T, path string) {
			tmp := path + ".new"
			require.NoError(t, os.WriteFile(tmp, original, 0o644))
			require.NoError(t, os.Rename(tmp, path))
		}, "changed after it was validated (the path names another file now)", nil},
		{"it is deleted", func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
		}, "changed after it was validated (it cannot be found or read any more)", fs.ErrNotExist},
		{"it becomes 2048 pixels wide with the same length and modification time", func(t *testing.T, path string) {
			st, err := os.Stat(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, paddedPNG(t, 2048, 4, size), 0o644))
			// Hide the change from the file's metadata: only reading the
			// header again can tell.
			require.NoError(t, os.Chtimes(path, st.ModTime(), st.ModTime()))
		}, "it was image/png 64x64 of 40960 bytes and is image/png 2048x4 of 40960 bytes now", nil},
		{"only its pixels change, with the same length, dimensions and modification time", func(t *testing.T, path string) {
			st, err := os.Stat(path)
			require.NoError(t, err)
			other := paddedPNG(t, 64, 64, size)
			other[len(other)-1] = 1 // other bytes, the same header
			require.NoError(t, os.WriteFile(path, other, 0o644))
			require.NoError(t, os.Chtimes(path, st.ModTime(), st.ModTime()))
		}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "in.png")
			require.NoError(t, os.WriteFile(path, original, 0o644))
			rec := &recorder{}
			ts := newTestServer(t, nil)
			ts.handler = func(w http.ResponseWriter, r *http.Request) {
				rec.read(r)
				if ts.hits.Load() == 1 {
					tt.change(t, path)
					replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
					return
				}
				replyJSON(200, okImage)(w, r)
			}
			c := newTestClient(t, ts.URL)
			_, err := c.ReImagine(context.Background(), ReImagineRequest{Image: FileFromPath(path)})
			uploads := rec.completeUploads()
			if tt.rule == "" {
				require.NoError(t, err)
				now, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, [][]byte{original, now}, uploads, "the retry sends the file as it is now, checked again")
				for _, r := range rec.all() {
					assert.Equal(t, r.bodyLen, r.contentLength, "an exact Content-Length")
				}
				return
			}
			var v *ValidationError
			require.ErrorAs(t, err, &v, "%v", err)
			assert.Equal(t, "image", v.Field)
			assert.Contains(t, err.Error(), tt.rule)
			assert.Contains(t, err.Error(), "changed")
			if tt.cause != nil {
				assert.ErrorIs(t, err, tt.cause)
			}
			assert.Equal(t, [][]byte{original}, uploads, "only the validated file came whole, once")
			assert.LessOrEqual(t, ts.hits.Load(), int64(2))
		})
	}
}

// A file that is cut short or grows while an attempt sends it fails the
// attempt before the form is complete, and is not retried.
func TestAFileChangedWhileItIsBeingSentFailsAndIsNotRetried(t *testing.T) {
	const size = 32 << 20
	tests := []struct {
		name   string
		change func(path string) error
		rule   string
	}{
		{"cut short", func(path string) error { return os.Truncate(path, 1<<20) }, "bytes short of the 33554432 validated"},
		{"grown", func(path string) error {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = f.Write([]byte("more"))
			return errorsJoin(err, f.Close())
		}, "it was modified while it was being sent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "talk.wav")
			writeWAV(t, path, size)
			changed := make(chan error, 1)
			var once sync.Once
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				// Take the first MiB, change the file, then read on: the
				// client has far more than the socket buffers still to send.
				_, _ = io.CopyN(io.Discard, r.Body, 1<<20)
				once.Do(func() { changed <- tt.change(path) })
				_, _ = io.Copy(io.Discard, r.Body)
				replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
			})
			c := newTestClient(t, ts.URL)
			_, err := c.SplitAudio(context.Background(), SplitAudioRequest{Audio: FileFromPath(path)})
			require.NoError(t, <-changed)
			var v *ValidationError
			require.ErrorAs(t, err, &v, "%v", err)
			assert.Contains(t, err.Error(), tt.rule)
			var ne *NetworkError
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, 1, ne.Attempts, "not retried")
			assert.Equal(t, int64(1), ts.hits.Load())
		})
	}
}

// writeWAV writes a file of size bytes that sniffs as WAV.
func writeWAV(t *testing.T, path string, size int) [32]byte {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	h := sha256.New()
	chunk := make([]byte, 1<<20)
	copy(chunk, "RIFF\x00\x00\x00\x00WAVE")
	for written := 0; written < size; written += len(chunk) {
		b := chunk[:min(len(chunk), size-written)]
		b[len(b)-1] = byte(written >> 20)
		_, err := io.MultiWriter(f, h).Write(b)
		require.NoError(t, err)
		chunk[0] = byte(written) // only the first chunk starts with RIFF
	}
	require.NoError(t, f.Close())
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// The same rule holds for an *os.File given to FileFromReader: an attempt
// that finds it changed (by Stat) fails, and is not retried.
func TestAnOSFileThatChangesBetweenAttemptsFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.png")
	original := paddedPNG(t, 16, 16, 8<<10)
	require.NoError(t, os.WriteFile(path, original, 0o644))
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	rec := &recorder{}
	ts := newTestServer(t, nil)
	ts.handler = func(w http.ResponseWriter, r *http.Request) {
		rec.read(r)
		if ts.hits.Load() == 1 {
			g, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err == nil {
				_, _ = g.Write([]byte("appended"))
				g.Close()
			}
			replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
			return
		}
		replyJSON(200, okImage)(w, r)
	}
	c := newTestClient(t, ts.URL)
	start := time.Now()
	_, err = c.ChangeBackground(context.Background(), ChangeBackgroundRequest{Image: FileFromReader("in.png", f), Prompt: "beach"})
	var v *ValidationError
	require.ErrorAs(t, err, &v, "%v", err)
	assert.Contains(t, err.Error(), "changed after it was validated (it had 8192 bytes and has 8200 now)")
	assert.Equal(t, [][]byte{original}, rec.completeUploads())
	assert.Less(t, time.Since(start), 10*time.Second)
}
