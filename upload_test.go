package creative

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestA256MiBUploadCutMidwayArrivesWholeOnTheRetryAtConstantMemory(t *testing.T) {
	const size = 256 << 20
	path := filepath.Join(t.TempDir(), "talk.wav")
	want := writeWAV(t, path, size)

	rec := &recorder{hashOnly: true}
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
		rec.read(r)
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
	seen := rec.all()
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
			rec := &recorder{}
			ts := newTestServer(t, nil)
			ts.handler = func(w http.ResponseWriter, r *http.Request) {
				rec.read(r)
				if ts.hits.Load() == 1 {
					replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
					return
				}
				replyJSON(200, `{"success":true,"message":"ok","data":{"base64":"iVBORw0KGgo="}}`)(w, r)
			}
			c := newTestClient(t, ts.URL)
			_, err := c.ChangeBackground(context.Background(), ChangeBackgroundRequest{Image: tt.file, Prompt: "beach"})
			require.NoError(t, err)
			seen := rec.all()
			require.Len(t, seen, 2)
			for _, s := range seen {
				assert.Equal(t, want, s.sum)
				assert.Equal(t, s.bodyLen, s.contentLength)
			}
		})
	}
}

// A typed nil reader (a nil *os.File in an io.Reader) is refused, not a
// panic.
func TestATypedNilReaderIsAValidationError(t *testing.T) {
	tests := []struct {
		r    io.Reader
		rule string
	}{
		{(*os.File)(nil), "is a nil *os.File"},
		{(*bytes.Reader)(nil), "is a nil *bytes.Reader"},
		{(*strings.Reader)(nil), "is a nil *strings.Reader"},
		{(*seekOnly)(nil), "is a nil *creative.seekOnly"},
		{(*failingReader)(nil), "is a nil *creative.failingReader"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			rt := &requestCounter{}
			c := newTestClient(t, "https://api.example.com", WithHTTPClient(&http.Client{Transport: rt}))
			var err error
			require.NotPanics(t, func() {
				_, err = c.SplitAudio(context.Background(), SplitAudioRequest{Audio: FileFromReader("a.wav", tt.r)})
			})
			var v *ValidationError
			require.ErrorAs(t, err, &v)
			assert.Equal(t, "audio", v.Field)
			assert.Equal(t, tt.rule, v.Rule)
			assert.Equal(t, int64(0), rt.n.Load())
		})
	}
	_, err := newTestClient(t, "https://api.example.com").SplitAudio(context.Background(), SplitAudioRequest{Audio: FileFromReader("a.wav", nil)})
	assert.ErrorContains(t, err, "audio is required")
}

func TestAMissingFileIsAValidationErrorThatUnwrapsToNotExist(t *testing.T) {
	rt := &requestCounter{}
	c := newTestClient(t, "https://api.example.com", WithHTTPClient(&http.Client{Transport: rt}))
	_, err := c.SplitAudio(context.Background(), SplitAudioRequest{Audio: FileFromPath(filepath.Join(t.TempDir(), "gone.wav"))})
	var v *ValidationError
	require.ErrorAs(t, err, &v)
	assert.Equal(t, "audio", v.Field)
	assert.Contains(t, v.Rule, "cannot be read")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, err, ErrInvalidRequest)
	assert.Equal(t, int64(0), rt.n.Load())
}
