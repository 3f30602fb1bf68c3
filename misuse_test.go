package creative

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

// Misuse is an error, never a panic: every call of a nil *Client, a zero
// Client{} and with a nil context fails with ErrMisuse (and ErrNotSent),
// sending nothing.
func TestMisuseIsAnErrorNeverAPanic(t *testing.T) {
	ts := newTestServer(t, replyJSON(200, musicOK))
	good := ts.client(t)
	var nilClient *Client
	clients := []struct {
		name string
		c    *Client
		ctx  context.Context
	}{
		{"a nil *Client", nilClient, context.Background()},
		{"a zero Client{}", &Client{}, context.Background()},
		{"a nil context", good, nil},
	}
	for _, cl := range clients {
		for _, e := range fmEndpoints() {
			t.Run(cl.name+"/"+e.name, func(t *testing.T) {
				var err error
				require.NotPanics(t, func() { err = e.call(cl.ctx, cl.c, ts.URL) })
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrMisuse)
				assert.ErrorIs(t, err, ErrNotSent)
			})
		}
		t.Run(cl.name+"/DownloadFile", func(t *testing.T) {
			var err error
			require.NotPanics(t, func() {
				_, err = cl.c.DownloadFile(cl.ctx, URL(ts.URL+"/f.wav"), filepath.Join(t.TempDir(), "f.wav"))
			})
			assert.ErrorIs(t, err, ErrMisuse)
		})
		t.Run(cl.name+"/CloseIdleConnections and formatting", func(t *testing.T) {
			require.NotPanics(t, func() {
				cl.c.CloseIdleConnections()
				_ = cl.c.String()
				_ = cl.c.LogValue()
			})
		})
	}
	assert.Zero(t, ts.hits.Load(), "nothing was sent")

	t.Run("Download into a nil io.Writer", func(t *testing.T) {
		var err error
		require.NotPanics(t, func() { _, err = good.Download(context.Background(), URL(ts.URL+"/f.wav"), nil) })
		assert.ErrorIs(t, err, ErrMisuse)
		assert.Zero(t, ts.hits.Load(), "nothing was sent")
	})
	t.Run("a zero Audio", func(t *testing.T) {
		var a Audio
		require.NotPanics(t, func() {
			_, err := a.Read(make([]byte, 8))
			assert.ErrorIs(t, err, ErrMisuse)
			_, err = a.WriteTo(io.Discard)
			assert.ErrorIs(t, err, ErrMisuse)
			assert.ErrorIs(t, a.Save(filepath.Join(t.TempDir(), "a.mp3")), ErrMisuse)
			assert.NoError(t, a.Close())
			assert.Equal(t, ".bin", a.Ext())
		})
	})
	t.Run("a nil *Audio", func(t *testing.T) {
		var a *Audio
		require.NotPanics(t, func() {
			_, err := a.Read(make([]byte, 8))
			assert.ErrorIs(t, err, ErrMisuse)
			assert.NoError(t, a.Close())
		})
	})
	t.Run("a nil *WriterResult", func(t *testing.T) {
		var r *WriterResult
		require.NotPanics(t, func() { assert.Empty(t, r.Text()) })
	})
}

// An Audio closed from another goroutine while it is read says it was
// closed by the caller, not that the outcome is unknown, and races nothing.
func TestAudioClosedWhileReadSaysClosedByTheCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		ts := newMemServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "audio/mpeg")
			_, _ = w.Write(append([]byte("ID3\x04\x00\x00\x00\x00\x00\x00"), bytes.Repeat([]byte{0xff}, 1024)...))
			w.(http.Flusher).Flush()
			<-done // the rest never comes
		})
		defer close(done)
		c := ts.client(t)
		a, err := c.TextToSpeech(context.Background(), TextToSpeechRequest{Prompt: "hi", VoiceID: ids.VoiceFemale1})
		require.NoError(t, err)
		var copyErr error
		copied := make(chan struct{})
		go func() {
			defer close(copied)
			_, copyErr = io.Copy(io.Discard, a)
		}()
		synctest.Wait() // the copy is blocked in a read
		require.NoError(t, a.Close())
		<-copied
		assert.ErrorIs(t, copyErr, ErrClosed)
		assert.False(t, errors.Is(copyErr, ErrOutcomeUnknown), "%v", copyErr)
		_, err = a.Read(make([]byte, 1))
		assert.ErrorIs(t, err, ErrClosed, "a read after Close")
	})
}
