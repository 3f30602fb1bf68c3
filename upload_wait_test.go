package creative

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
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

// blockingUpload is an upload whose reads block until it is closed, as a
// slow network file system or a stalled pipe would, and counts them.
type blockingUpload struct {
	closed chan struct{}
	reads  atomic.Int64
}

func (b *blockingUpload) wait() (int, error) {
	b.reads.Add(1)
	<-b.closed
	return 0, io.ErrClosedPipe
}

// seek says the upload is 4 KiB long, from offset 0.
func (b *blockingUpload) seek(whence int) (int64, error) {
	if whence == io.SeekEnd {
		return 4096, nil
	}
	return 0, nil
}

type blockingReaderAt struct{ *blockingUpload }

func (b blockingReaderAt) Read([]byte) (int, error)           { return b.wait() }
func (b blockingReaderAt) ReadAt([]byte, int64) (int, error)  { return b.wait() }
func (b blockingReaderAt) Seek(_ int64, w int) (int64, error) { return b.seek(w) }

type blockingReadSeeker struct{ *blockingUpload }

func (b blockingReadSeeker) Read([]byte) (int, error)           { return b.wait() }
func (b blockingReadSeeker) Seek(_ int64, w int) (int64, error) { return b.seek(w) }

type blockingReader struct{ *blockingUpload }

func (b blockingReader) Read([]byte) (int, error) { return b.wait() }

// Every kind of upload (an io.ReaderAt, an io.ReadSeeker, a one-shot
// reader) whose type check blocks holds the call no longer than its
// context: a 200 ms deadline ends it at 200 ms on the bubble's clock, not
// when the reader wakes 3 s later; and a context that ended before the
// call reads no byte of the upload. Nothing is sent either way.
func TestEveryUploadsTypeCheckHonoursTheContext(t *testing.T) {
	kinds := map[string]func(b *blockingUpload) io.Reader{
		"an io.ReaderAt":    func(b *blockingUpload) io.Reader { return blockingReaderAt{b} },
		"an io.ReadSeeker":  func(b *blockingUpload) io.Reader { return blockingReadSeeker{b} },
		"a one-shot reader": func(b *blockingUpload) io.Reader { return blockingReader{b} },
	}
	for name, mk := range kinds {
		t.Run(name+"/blocking during the check", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ts := newMemServer(t, replyJSON(200, musicOK))
				c := ts.client(t)
				b := &blockingUpload{closed: make(chan struct{})}
				time.AfterFunc(3*time.Second, func() { close(b.closed) })
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				start := time.Now()
				_, err := c.EnhanceAudio(ctx, EnhanceAudioRequest{Audio: FileFromReader("talk.wav", mk(b)), TypeID: ids.EnhancePodcast})
				require.Error(t, err)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.ErrorIs(t, err, ErrNotSent)
				assert.Equal(t, 200*time.Millisecond, time.Since(start), "it ended with the context")
				assert.EqualValues(t, 1, b.reads.Load(), "the check began to read")
				time.Sleep(3 * time.Second) // the reader wakes; nothing is sent after the call
				synctest.Wait()
				assert.Zero(t, ts.hits.Load(), "nothing was sent")
			})
		})
		t.Run(name+"/a context that ended before the call", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ts := newMemServer(t, replyJSON(200, musicOK))
				c := ts.client(t)
				b := &blockingUpload{closed: make(chan struct{})}
				defer close(b.closed)
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_, err := c.EnhanceAudio(ctx, EnhanceAudioRequest{Audio: FileFromReader("talk.wav", mk(b)), TypeID: ids.EnhancePodcast})
				assert.ErrorIs(t, err, context.Canceled)
				assert.ErrorIs(t, err, ErrNotSent)
				synctest.Wait()
				assert.Zero(t, b.reads.Load(), "no byte of the upload was read")
				assert.Zero(t, ts.hits.Load(), "nothing was sent")
			})
		})
	}
}

// seekHeld is an io.ReadSeeker whose Seek blocks until it is released, as
// a reader over a slow network file system would.
type seekHeld struct {
	*seekOnly
	released chan struct{}
	seeks    atomic.Int64
}

func (s *seekHeld) Seek(off int64, whence int) (int64, error) {
	s.seeks.Add(1)
	<-s.released
	return s.seekOnly.Seek(off, whence)
}

// FileFromReader never calls a Seek that may block: it returns at once,
// and the first call's check asks the reader within its context, so that a
// Seek that blocks ends that call at its deadline with nothing sent. Once
// the reader answers, a call sends it.
func TestFileFromReaderDoesNotSeekAndTheCallHonoursItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newMemServer(t, replyJSON(200, musicOK))
		c := ts.client(t)
		r := &seekHeld{seekOnly: newSeekOnly(wavBytes), released: make(chan struct{})}
		made := make(chan File, 1)
		go func() { made <- FileFromReader("talk.wav", r) }()
		synctest.Wait()
		var f File
		select {
		case f = <-made:
		default:
			close(r.released)
			t.Fatal("FileFromReader blocked on the reader's Seek")
		}
		assert.Zero(t, r.seeks.Load(), "no Seek before a call")

		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.EnhanceAudio(ctx, EnhanceAudioRequest{Audio: f, TypeID: ids.EnhancePodcast})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, ErrNotSent)
		assert.Equal(t, 200*time.Millisecond, time.Since(start), "it ended with the context")
		assert.Zero(t, ts.hits.Load(), "nothing was sent")

		// The first call's check, left holding the reader in its Seek,
		// lets go of it once the Seek returns.
		close(r.released)
		synctest.Wait()
		_, err = c.EnhanceAudio(context.Background(), EnhanceAudioRequest{Audio: f, TypeID: ids.EnhancePodcast})
		require.NoError(t, err)
		assert.EqualValues(t, 1, ts.hits.Load())
	})
}
