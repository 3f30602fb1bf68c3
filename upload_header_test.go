package creative

import (
	"bytes"
	"context"
	"image/jpeg"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A JPEG's width and height come after its APP segments (Exif, XMP, ICC
// profiles): they are read as far as the format needs, bounded.
func TestAJPEGWithLargeAPPSegmentsIsMeasured(t *testing.T) {
	ok640 := jpegWithAPP(640, 480, 128<<10)
	tall := jpegWithAPP(10, 1025, 128<<10)
	huge := jpegWithAPP(640, 480, 2<<20)
	require.Greater(t, len(ok640), 128<<10)
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(huge))
	require.NoError(t, err, "the test's JPEG is valid")
	require.Equal(t, 640, cfg.Width)

	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	tests := []struct {
		name    string
		file    File
		content []byte
		rule    string // "" when accepted
	}{
		{"128 KiB of APP segments, as bytes", FileFromBytes("a.jpg", ok640), ok640, ""},
		{"128 KiB of APP segments, from a path", FileFromPath(write("a.jpg", ok640)), ok640, ""},
		{"128 KiB of APP segments, from a one-shot reader", FileFromReader("a.jpg", oneShot{bytes.NewReader(ok640)}), ok640, ""},
		{"128 KiB of APP segments before a 1025-pixel height", FileFromBytes("t.jpg", tall), nil, "must be at most 1024x1024 pixels"},
		{"2 MiB of APP segments, from a path", FileFromPath(write("h.jpg", huge)), huge, ""},
		{"2 MiB of APP segments, from a one-shot reader, past what is kept in memory", FileFromReader("h.jpg", oneShot{bytes.NewReader(huge)}), nil, "must have a readable image header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				rec.read(r)
				replyJSON(200, okImage)(w, r)
			})
			c := newTestClient(t, ts.URL)
			_, err := c.ReImagine(context.Background(), ReImagineRequest{Image: tt.file})
			if tt.rule != "" {
				var v *ValidationError
				require.ErrorAs(t, err, &v)
				assert.Contains(t, v.Rule, tt.rule)
				assert.Equal(t, int64(0), ts.hits.Load())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, [][]byte{tt.content}, rec.completeUploads())
		})
	}
}

// countingAt counts what is read of an io.ReaderAt (with Seek).
type countingAt struct {
	*bytes.Reader
	bytes atomic.Int64
	heads atomic.Int64 // reads at offset 0
}

func (c *countingAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.Reader.ReadAt(p, off)
	c.bytes.Add(int64(n))
	if off == 0 {
		c.heads.Add(1)
	}
	return n, err
}

// Sniffing reads a small head, once for the call's validation and once per
// attempt; the rest is read once per attempt, as it is sent.
func TestSniffingReadsASmallHeadOncePerAttempt(t *testing.T) {
	content := append(pngHeader(64, 64), make([]byte, 200<<10)...)
	src := &countingAt{Reader: bytes.NewReader(content)}
	ts := newTestServer(t, nil)
	ts.handler = func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if ts.hits.Load() == 1 {
			replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
			return
		}
		replyJSON(200, okImage)(w, r)
	}
	c := newTestClient(t, ts.URL)
	_, err := c.ReImagine(context.Background(), ReImagineRequest{Image: FileFromReader("in.png", src)})
	require.NoError(t, err)
	require.Equal(t, int64(2), ts.hits.Load())
	// Per read of the head: sniffLen bytes; per attempt: the head, then the
	// file from its first byte.
	assert.Equal(t, int64(3*sniffLen+2*len(content)), src.bytes.Load())
	assert.Equal(t, int64(3+2), src.heads.Load())
}

// What checking an upload allocates: a few hundred bytes, not a 64 KiB
// buffer.
func TestCheckingAnUploadAllocatesLittle(t *testing.T) {
	png := append(pngHeader(64, 64), make([]byte, 1<<20)...)
	jpg := jpegWithAPP(64, 64, 128<<10)
	path := filepath.Join(t.TempDir(), "in.png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	for name, f := range map[string]File{
		"a PNG as bytes":                       FileFromBytes("in.png", png),
		"a PNG from a path":                    FileFromPath(path),
		"a JPEG with 128 KiB of APP, as bytes": FileFromBytes("in.jpg", jpg),
	} {
		t.Run(name, func(t *testing.T) {
			const runs = 100
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range runs {
				v := checker{op: "image/re-imagine"}
				v.image("image", f, MaxReImagineSide)
				require.NoError(t, v.err())
			}
			runtime.ReadMemStats(&after)
			perCall := (after.TotalAlloc - before.TotalAlloc) / runs
			t.Logf("%d bytes allocated per check", perCall)
			assert.Less(t, perCall, uint64(4<<10))
		})
	}
}
