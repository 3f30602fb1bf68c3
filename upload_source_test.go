package creative

import (
	"bytes"
	"context"
	"image/jpeg"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
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

// A source that fails to read at 100 KiB is a local failure: not retried as
// if the network had failed, and the error unwraps to the reader's error.
func TestASourceThatFailsAt100KiBIsNotRetried(t *testing.T) {
	content := wavOf(400 << 10)
	const at = 100 << 10
	tests := []struct {
		name string
		file func() File
	}{
		{"a plain io.Reader", func() File { return FileFromReader("a.wav", &failingReader{data: content, limit: at}) }},
		{"an io.ReaderAt", func() File { return FileFromReader("a.wav", newFailingReaderAt(content, at)) }},
		{"an io.ReadSeeker", func() File {
			return FileFromReader("a.wav", &failingSeeker{seekOnly: newSeekOnly(content), limit: at})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				rec.read(r)
				replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
			})
			c := newTestClient(t, ts.URL)
			_, err := c.SplitAudio(context.Background(), SplitAudioRequest{Audio: tt.file()})
			require.Error(t, err)
			assert.ErrorIs(t, err, errDisk)
			var ne *NetworkError
			require.ErrorAs(t, err, &ne, "%v", err)
			assert.Equal(t, 1, ne.Attempts, "not retried")
			// The server may still be reading the aborted request when the
			// call returns: wait until it has.
			require.Eventually(t, func() bool { return len(rec.all()) == 1 }, 10*time.Second, time.Millisecond)
			assert.Equal(t, int64(1), ts.hits.Load(), "not retried")
			assert.Empty(t, rec.completeUploads(), "no whole form reached the server")
			assert.Contains(t, err.Error(), `reading audio "a.wav"`)
		})
	}
}

// One File shared by 8 goroutines making 40 calls at once. A path, bytes
// and io.ReaderAt sources are read by each call on its own; an
// io.ReadSeeker is read by one call at a time, another being refused; a
// one-shot reader is sent by one call. Every upload that reaches the
// server whole is the file, byte for byte. Run it with -race.
func TestOneFileSharedByConcurrentCalls(t *testing.T) {
	content := wavOf(256 << 10)
	path := filepath.Join(t.TempDir(), "talk.wav")
	require.NoError(t, os.WriteFile(path, content, 0o644))
	osFile, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { osFile.Close() })
	offset := bytes.NewReader(append([]byte("0123456789"), content...))
	_, err = offset.Seek(10, io.SeekStart)
	require.NoError(t, err)

	tests := []struct {
		name string
		file File
		// all: every call succeeds; otherwise refused must be in the error
		// of each call that does not.
		all     bool
		refused string
		once    bool
	}{
		{name: "a path", file: FileFromPath(path), all: true},
		{name: "bytes", file: FileFromBytes("talk.wav", content), all: true},
		{name: "an *os.File", file: FileFromReader("talk.wav", osFile), all: true},
		{name: "a *bytes.Reader at an offset", file: FileFromReader("talk.wav", offset), all: true},
		{name: "an io.ReadSeeker without ReadAt", file: FileFromReader("talk.wav", newSeekOnly(content)), refused: "another call is reading"},
		{name: "a one-shot io.Reader", file: FileFromReader("talk.wav", oneShot{bytes.NewReader(content)}), refused: "another call already took", once: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				rec.read(r)
				replyJSON(200, okURL)(w, r)
			})
			c := newTestClient(t, ts.URL)
			var mu sync.Mutex
			var errs []error
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 5 {
						_, err := c.SplitAudio(context.Background(), SplitAudioRequest{Audio: tt.file})
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			ok := 0
			for _, err := range errs {
				if err == nil {
					ok++
					continue
				}
				require.False(t, tt.all, "%v", err)
				var v *ValidationError
				require.ErrorAs(t, err, &v, "%v", err)
				assert.Contains(t, v.Rule, tt.refused)
			}
			uploads := rec.completeUploads()
			for i, u := range uploads {
				require.True(t, bytes.Equal(content, u), "upload %d of %d differs from the file", i, len(uploads))
			}
			assert.Equal(t, ok, len(uploads), "each success is one whole upload")
			switch {
			case tt.all:
				assert.Equal(t, 40, ok)
			case tt.once:
				assert.Equal(t, 1, ok)
				assert.Equal(t, int64(1), ts.hits.Load(), "the other calls send nothing")
			default:
				assert.GreaterOrEqual(t, ok, 1)
			}
			t.Logf("%d of 40 calls succeeded", ok)
		})
	}
}

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

// Each constructor picks the source for what it was given.
func TestEachKindOfReaderGetsItsSource(t *testing.T) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pr.Close(); pw.Close() })
	fh, err := os.Open(filepath.Join("testdata", "golden", "image_re-imagine.json"))
	require.NoError(t, err)
	t.Cleanup(func() { fh.Close() })
	var nilFile *os.File
	tests := []struct {
		name string
		file File
		want source
	}{
		{"a path", FileFromPath("x.png"), &pathSource{}},
		{"bytes", FileFromBytes("x.png", nil), &bytesSource{}},
		{"a *bytes.Reader", FileFromReader("x", bytes.NewReader(nil)), &readerAtSource{}},
		{"an *os.File", FileFromReader("x", fh), &readerAtSource{}},
		{"an io.ReadSeeker without ReadAt", FileFromReader("x", newSeekOnly(nil)), &seekerSource{}},
		{"a pipe", FileFromReader("x", pr), &onceSource{}},
		{"a reader without Seek", FileFromReader("x", oneShot{bytes.NewReader(nil)}), &onceSource{}},
		{"a typed nil", FileFromReader("x", nilFile), badSource{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.file.src
			if s, ok := src.(*seekableSource); ok {
				src = s.resolve() // found by the first check
			}
			assert.IsType(t, tt.want, src)
		})
	}
	assert.Nil(t, FileFromReader("x", nil).src, "no file")
	st := FileFromReader("x", fh).src.(*seekableSource).resolve().(*readerAtSource)
	assert.NotNil(t, st.stat, "an *os.File is asked for its size at each call")
}
