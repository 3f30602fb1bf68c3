package creative

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// uploadSeen is what a test server read of one attempt's file part.
type uploadSeen struct {
	contentLength int64
	bodyLen       int64
	sum           [32]byte
	name          string
}

// readUpload streams the request's multipart body, hashing the file part.
func readUpload(t *testing.T, r *http.Request) uploadSeen {
	t.Helper()
	seen := uploadSeen{contentLength: r.ContentLength}
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	require.NoError(t, err)
	cr := &countingReader{r: r.Body}
	mr := multipart.NewReader(cr, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		if p.FileName() != "" {
			h := sha256.New()
			_, _ = io.Copy(h, p)
			copy(seen.sum[:], h.Sum(nil))
			seen.name = p.FileName()
		}
	}
	_, _ = io.Copy(io.Discard, cr)
	seen.bodyLen = cr.n
	return seen
}

func TestA256MiBUploadCutMidwayArrivesWholeOnTheRetryAtConstantMemory(t *testing.T) {
	const size = 256 << 20
	path := filepath.Join(t.TempDir(), "talk.wav")
	want := writeWAV(t, path, size)

	var mu sync.Mutex
	var seen []uploadSeen
	ts := newTestServer(t, nil)
	ts.handler = func(w http.ResponseWriter, r *http.Request) {
		if ts.hits.Load() == 1 {
			// Read half of the first attempt, then cut the connection.
			_, _ = io.CopyN(io.Discard, r.Body, size/2)
			hj, ok := w.(http.Hijacker)
			require.True(t, ok)
			conn, _, err := hj.Hijack()
			require.NoError(t, err)
			_ = conn.Close()
			return
		}
		s := readUpload(t, r)
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
		replyJSON(200, `{"success":true,"message":"ok","data":"http://127.0.0.1/e.wav"}`)(w, r)
	}
	c := newTestClient(t, ts.URL)

	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	u, err := c.EnhanceAudio(context.Background(), EnhanceAudioRequest{Audio: FileFromPath(path), TypeID: "664f30c0ba9c162a962f75b6"})
	close(stop)
	<-sampled
	require.NoError(t, err)
	assert.Equal(t, URL("http://127.0.0.1/e.wav"), u)
	assert.Equal(t, int64(2), ts.hits.Load())
	require.Len(t, seen, 1)
	assert.Equal(t, want, seen[0].sum, "the second attempt carries the whole file")
	assert.Equal(t, "talk.wav", seen[0].name)
	assert.Equal(t, seen[0].bodyLen, seen[0].contentLength, "an exact Content-Length")
	grown := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("heap in use grew by %.1f MiB during the upload", float64(grown)/(1<<20))
	assert.Less(t, grown, int64(4<<20), "the upload streams: the heap stays far below the file's size")
}

func TestUploadSourcesAreSentWholeAndRereadForARetry(t *testing.T) {
	png := pngHeader(64, 64)
	content := append(append([]byte{}, png...), bytes.Repeat([]byte("pixels"), 5000)...)
	want := sha256.Sum256(content)
	path := filepath.Join(t.TempDir(), "in.png")
	require.NoError(t, os.WriteFile(path, content, 0o644))
	osFile := func() io.Reader {
		f, err := os.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	offset := func() io.Reader { // a reader already past a header of 10 junk bytes
		r := bytes.NewReader(append([]byte("0123456789"), content...))
		_, _ = r.Seek(10, io.SeekStart)
		return r
	}
	tests := []struct {
		name string
		file File
	}{
		{"a path", FileFromPath(path)},
		{"bytes", FileFromBytes("in.png", content)},
		{"a *bytes.Reader at an offset", FileFromReader("in.png", offset())},
		{"a *strings.Reader", FileFromReader("in.png", strings.NewReader(string(content)))},
		{"an *os.File", FileFromReader("in.png", osFile())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []uploadSeen
			ts := newTestServer(t, nil)
			ts.handler = func(w http.ResponseWriter, r *http.Request) {
				seen = append(seen, readUpload(t, r))
				if ts.hits.Load() == 1 {
					replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
					return
				}
				replyJSON(200, `{"success":true,"message":"ok","data":{"base64":"iVBORw0KGgo="}}`)(w, r)
			}
			c := newTestClient(t, ts.URL)
			_, err := c.ChangeBackground(context.Background(), ChangeBackgroundRequest{Image: tt.file, Prompt: "beach"})
			require.NoError(t, err)
			require.Len(t, seen, 2)
			for _, s := range seen {
				assert.Equal(t, want, s.sum)
				assert.Equal(t, s.bodyLen, s.contentLength)
			}
		})
	}
}

// oneShot hides every method of its reader but Read.
type oneShot struct{ r io.Reader }

func (o oneShot) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestAOneShotReaderIsNotRetriedAfterItsBytesWentOut(t *testing.T) {
	content := append(pngHeader(8, 8), bytes.Repeat([]byte{7}, 100<<10)...)
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_ = readUpload(t, r)
		replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
	})
	c := newTestClient(t, ts.URL)
	_, err := c.ChangeBackground(context.Background(), ChangeBackgroundRequest{Image: FileFromReader("in.png", oneShot{bytes.NewReader(content)}), Prompt: "p"})
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, int64(1), ts.hits.Load(), "sent once")
	assert.Equal(t, 1, apiErr.Attempts)
	assert.Contains(t, err.Error(), "one-shot reader")
}

func TestAOneShotReaderWithoutALengthIsSentChunkedAndWhole(t *testing.T) {
	content := append(pngHeader(8, 8), bytes.Repeat([]byte{9}, 300<<10)...)
	var seen uploadSeen
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		seen = readUpload(t, r)
		replyJSON(200, `{"success":true,"message":"ok","data":{"base64":"iVBORw0KGgo="}}`)(w, r)
	})
	c := newTestClient(t, ts.URL)
	_, err := c.ChangeBackground(context.Background(), ChangeBackgroundRequest{Image: FileFromReader("in.png", oneShot{bytes.NewReader(content)}), Prompt: "p"})
	require.NoError(t, err)
	assert.Equal(t, int64(-1), seen.contentLength, "unknown length: chunked")
	assert.Equal(t, sha256.Sum256(content), seen.sum)
}
