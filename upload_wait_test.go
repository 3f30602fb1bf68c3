package creative

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

// A one-shot reader that blocks before its head could be read holds no
// call past its context: the call ends when its context does, with nothing
// sent.
func TestAReadAheadThatBlocksEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newMemServer(t, replyJSON(200, musicOK))
		c := ts.client(t)
		pr, pw := io.Pipe()
		defer pw.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := c.EnhanceAudio(ctx, EnhanceAudioRequest{Audio: FileFromReader("talk.wav", pr), TypeID: ids.EnhancePodcast})
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, ErrNotSent)
		assert.Equal(t, time.Second, time.Since(start), "it ended with the context, on the bubble's clock")
		assert.Zero(t, ts.hits.Load(), "nothing was sent")
	})
}

// A one-shot reader that stalls in the middle of the body does not hold the
// call past its deadline: the body gives up when the context ends, so
// net/http's writer returns.
func TestAnUploadBodyThatStallsEndsWithTheContext(t *testing.T) {
	arrived := make(chan struct{}, 1)
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		_, _ = io.Copy(io.Discard, r.Body)
	})
	c := ts.client(t, WithMaxRetries(0))
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		// A WAV's head and a little more, then nothing.
		_, _ = pw.Write(append([]byte("RIFF\x24\x08\x00\x00WAVEfmt "), bytes.Repeat([]byte{0}, 4096)...))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.EnhanceAudio(ctx, EnhanceAudioRequest{Audio: FileFromReader("talk.wav", pr), TypeID: ids.EnhancePodcast})
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(safety):
		t.Fatal("the call outlived its deadline by far: a stalled body held it")
	}
	<-arrived
}
