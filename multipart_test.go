package creative

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
