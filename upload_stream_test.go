package creative

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

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

func TestAOneShotReaderIsNotRetriedAfterItsBytesWentOut(t *testing.T) {
	content := append(pngHeader(8, 8), bytes.Repeat([]byte{7}, 100<<10)...)
	rec := &recorder{}
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.read(r)
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
