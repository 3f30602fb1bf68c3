package creative

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

// wavOf returns n bytes that sniff as WAV, each position distinct enough
// that a shifted or mixed copy differs.
func wavOf(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>10)
	}
	copy(b, "RIFF\x24\x00\x00\x00WAVEfmt ")
	return b
}

func TestAOneShotFileIsSentByOneCallOnly(t *testing.T) {
	content := wavOf(100 << 10)
	rec := &recorder{}
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.read(r)
		replyJSON(200, okURL)(w, r)
	})
	c := newTestClient(t, ts.URL)
	f := FileFromReader("a.wav", oneShot{bytes.NewReader(content)})

	_, err := c.EnhanceAudio(context.Background(), EnhanceAudioRequest{Audio: f, TypeID: ids.EnhancePodcast})
	require.NoError(t, err)
	_, err = c.EnhanceAudio(context.Background(), EnhanceAudioRequest{Audio: f, TypeID: ids.EnhancePodcast})
	var v *ValidationError
	require.ErrorAs(t, err, &v)
	assert.Equal(t, "audio", v.Field)
	assert.Contains(t, v.Rule, "one-shot io.Reader that another call already took")
	assert.Equal(t, int64(1), ts.hits.Load(), "the second call sends nothing")
	assert.Equal(t, [][]byte{content}, rec.completeUploads(), "the first call sent the whole file")
}

// A call that fails validation on another field sends nothing, so the
// one-shot File is still there for the next call.
func TestAOneShotFileRefusedForAnotherFieldCanStillBeSent(t *testing.T) {
	content := append(pngHeader(8, 8), make([]byte, 70<<10)...)
	rec := &recorder{}
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.read(r)
		replyJSON(200, okImage)(w, r)
	})
	c := newTestClient(t, ts.URL)
	f := FileFromReader("in.png", oneShot{bytes.NewReader(content)})
	_, err := c.ChangeBackground(context.Background(), ChangeBackgroundRequest{Image: f})
	var v *ValidationError
	require.ErrorAs(t, err, &v)
	assert.Equal(t, "prompt", v.Field)
	_, err = c.ChangeBackground(context.Background(), ChangeBackgroundRequest{Image: f, Prompt: "beach"})
	require.NoError(t, err)
	assert.Equal(t, [][]byte{content}, rec.completeUploads())
}

// A pipe's Seek fails ("illegal seek"): it streams once, chunked.
func TestAPipeStreamsOnceAsAOneShotReader(t *testing.T) {
	content := wavOf(300 << 10)
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { pr.Close() })
	go func() {
		defer pw.Close()
		for b := content; len(b) > 0; {
			n, err := pw.Write(b[:min(len(b), 7<<10)])
			if err != nil {
				return
			}
			b = b[n:]
		}
	}()
	rec := &recorder{}
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.read(r)
		replyJSON(200, okURL)(w, r)
	})
	c := newTestClient(t, ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = c.EnhanceAudio(ctx, EnhanceAudioRequest{Audio: FileFromReader("talk.wav", pr), TypeID: ids.EnhancePodcast})
	require.NoError(t, err)
	got := rec.all()
	require.Len(t, got, 1)
	assert.True(t, got[0].complete)
	assert.Equal(t, content, got[0].file)
	assert.Equal(t, int64(-1), got[0].contentLength, "the length of a pipe is unknown: chunked")
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

// A call that finds an io.ReadSeeker being read by another call is refused
// before it sends anything.
func TestAnIOReadSeekerInUseByAnotherCallIsRefused(t *testing.T) {
	content := wavOf(32 << 20) // more than the socket buffers hold
	started, finish := make(chan struct{}), make(chan struct{})
	rec := &recorder{}
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.CopyN(io.Discard, r.Body, 1<<10); err == nil {
			close(started)
			<-finish
		}
		rec.read(r)
		replyJSON(200, okURL)(w, r)
	})
	c := newTestClient(t, ts.URL)
	f := FileFromReader("talk.wav", newSeekOnly(content))
	first := make(chan error, 1)
	go func() {
		_, err := c.SplitAudio(context.Background(), SplitAudioRequest{Audio: f})
		first <- err
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the first upload did not start")
	}
	_, err := c.SplitAudio(context.Background(), SplitAudioRequest{Audio: f})
	close(finish)
	var v *ValidationError
	require.ErrorAs(t, err, &v)
	assert.Contains(t, v.Rule, "is an io.ReadSeeker that another call is reading")
	require.NoError(t, <-first)
	assert.Equal(t, int64(1), ts.hits.Load(), "the refused call sent nothing")
}

// An io.ReadSeeker is rewound for a retry: the same call may send it again.
func TestAnIOReadSeekerIsRewoundForARetry(t *testing.T) {
	content := wavOf(300 << 10)
	rec := &recorder{}
	ts := newTestServer(t, nil)
	ts.handler = func(w http.ResponseWriter, r *http.Request) {
		if ts.hits.Load() == 1 {
			// Answer before the body is read: the transport may still be
			// sending it when the retry starts.
			replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
			return
		}
		rec.read(r)
		replyJSON(200, okURL)(w, r)
	}
	c := newTestClient(t, ts.URL)
	f := FileFromReader("talk.wav", newSeekOnly(content))
	_, err := c.SplitAudio(context.Background(), SplitAudioRequest{Audio: f})
	require.NoError(t, err)
	assert.Equal(t, [][]byte{content}, rec.completeUploads())
	assert.Equal(t, int64(2), ts.hits.Load())
	// And the File serves the next call too, once the first one let go of it.
	require.Eventually(t, func() bool {
		_, err := c.SplitAudio(context.Background(), SplitAudioRequest{Audio: f})
		return !errors.Is(err, ErrInvalidRequest)
	}, 5*time.Second, 10*time.Millisecond)
}
