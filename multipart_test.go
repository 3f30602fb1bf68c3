package creative

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/internal/ops"
)

func TestAOneShotReaderWithoutALengthIsSentChunkedAndWhole(t *testing.T) {
	content := append(pngHeader(8, 8), bytes.Repeat([]byte{9}, 300<<10)...)
	rec := &recorder{}
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.read(r)
		replyJSON(200, `{"success":true,"message":"ok","data":{"base64":"iVBORw0KGgo="}}`)(w, r)
	})
	c := newTestClient(t, ts.URL)
	_, err := c.ChangeBackground(context.Background(), ChangeBackgroundRequest{Image: FileFromReader("in.png", oneShot{bytes.NewReader(content)}), Prompt: "p"})
	require.NoError(t, err)
	seen := rec.all()[0]
	assert.True(t, seen.complete)
	assert.Equal(t, int64(-1), seen.contentLength, "unknown length: chunked")
	assert.Equal(t, sha256.Sum256(content), seen.sum)
}

// checkedBody validates f as a call would and lays out its form.
func checkedBody(t *testing.T, f File) *multipartBody {
	t.Helper()
	v := checker{op: ops.ChangeBackground}
	up := v.upload("image", f)
	require.NoError(t, v.err())
	m, err := form(ops.ChangeBackground, struct {
		Prompt string `url:"prompt"`
	}{"beach"}, up)
	require.NoError(t, err)
	return m
}

// readTiny reads r to its end a byte at a time, with an empty read before
// each byte: no stage may be skipped or cut by small or empty reads.
func readTiny(t *testing.T, r io.Reader) []byte {
	t.Helper()
	var out []byte
	var one [1]byte
	for range 1 << 20 {
		if n, err := r.Read(one[:0]); err == io.EOF {
			return out
		} else if n != 0 || err != nil {
			t.Fatalf("an empty read gave %d, %v", n, err)
		}
		n, err := r.Read(one[:])
		out = append(out, one[:n]...)
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
	}
	t.Fatal("the body did not end")
	return nil
}

// The body goes through its stages (fields and the part's header, the
// file, the closing boundary) the same way whatever the size of the reads,
// and is as long as it declares.
func TestTheBodyIsTheSameWhateverTheReads(t *testing.T) {
	content := append(pngHeader(8, 8), bytes.Repeat([]byte{3}, 3000)...)
	m := checkedBody(t, FileFromBytes("in.png", content))
	r, err := m.open()
	require.NoError(t, err)
	whole, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.(io.Closer).Close())
	assert.Equal(t, m.size(), int64(len(whole)))
	assert.Equal(t, len(whole), r.(interface{ Len() int }).Len())

	r, err = m.open()
	require.NoError(t, err)
	assert.Equal(t, whole, readTiny(t, r), "byte by byte")

	_, params, err := mime.ParseMediaType(m.contentType())
	require.NoError(t, err)
	mr := multipart.NewReader(bytes.NewReader(whole), params["boundary"])
	p, err := mr.NextPart()
	require.NoError(t, err)
	assert.Equal(t, "prompt", p.FormName())
	p, err = mr.NextPart()
	require.NoError(t, err)
	assert.Equal(t, "in.png", p.FileName())
	assert.Equal(t, "image/png", p.Header.Get("Content-Type"))
	got, _ := io.ReadAll(p)
	assert.Equal(t, content, got)
	_, err = mr.NextPart()
	assert.Equal(t, io.EOF, err)
}

// A body that failed keeps failing with the same error, and says why: the
// bytes changed after they were validated. Such a failure is a
// *sourceError, which is not retried.
func TestAFailedBodyStaysFailed(t *testing.T) {
	content := append(pngHeader(8, 8), bytes.Repeat([]byte{3}, 100)...)
	m := checkedBody(t, FileFromBytes("in.png", content))
	copy(content, pngHeader(9, 9)) // the caller changed the bytes
	r, err := m.open()
	require.NoError(t, err)
	_, err = io.ReadAll(r)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, ve.Rule, "changed after it was validated")
	_, ok := errors.AsType[*sourceError](err)
	assert.True(t, ok, "not retried")
	n, again := r.Read(make([]byte, 10))
	assert.Zero(t, n)
	assert.Equal(t, err, again)
}

// A body of a one-shot reader says it was sent once its file began to go
// out, and is never sent again; other bodies are never spent.
func TestSentTellsWhetherTheBodyCanBeSentAgain(t *testing.T) {
	content := append(pngHeader(8, 8), bytes.Repeat([]byte{5}, 100)...)
	replayable := checkedBody(t, FileFromBytes("in.png", content))
	once := checkedBody(t, FileFromReader("in.png", oneShot{bytes.NewReader(content)}))

	r, err := once.open()
	require.NoError(t, err)
	assert.False(t, once.sent(), "nothing read yet")
	_, err = io.ReadAll(r)
	require.NoError(t, err)
	assert.True(t, once.sent())
	_, err = once.open()
	assert.ErrorAs(t, err, new(*replayError))

	for range 2 {
		r, err := replayable.open()
		require.NoError(t, err)
		_, err = io.ReadAll(r)
		require.NoError(t, err)
		assert.False(t, replayable.sent())
	}
}

// Closing an attempt's body in the middle of the file lets go of what it
// held: an io.ReadSeeker is free for another call at once.
func TestClosingTheBodyLetsGoOfTheSource(t *testing.T) {
	content := append(pngHeader(8, 8), bytes.Repeat([]byte{5}, 4000)...)
	f := FileFromReader("in.png", newSeekOnly(content))
	m := checkedBody(t, f)
	r, err := m.open()
	require.NoError(t, err)
	_, err = io.ReadFull(r, make([]byte, len(m.prefix)+10))
	require.NoError(t, err)
	src := resolved(f.src).(*seekerSource)
	other := &multipartBody{}
	assert.True(t, src.heldByOther(other), "the attempt holds the reader")
	require.NoError(t, r.(io.Closer).Close())
	assert.False(t, src.heldByOther(other), "Close let go of it")
	_, err = r.Read(make([]byte, 10))
	assert.ErrorIs(t, err, errClosed, "a closed body is not read on")
}
