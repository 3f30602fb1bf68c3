package creative

// The response: bounded reads of what the other end sends.

import (
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A Content-Length that lies cannot make the client allocate it up front:
// above the cap the answer is refused unread, and below it the body grows
// as bytes come.
func TestAHugeContentLengthIsNotAllocatedBeforeTheBodyComes(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fmHijack(w, func(c net.Conn) {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2000000000\r\n\r\n{\"success\":true")
		})
	})
	c := newTestClient(t, ts.URL)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
	runtime.ReadMemStats(&after)
	assert.ErrorIs(t, err, ErrUnexpectedResponse)
	assert.ErrorContains(t, err, "declares 2000000000 bytes, more than the 268435456 bytes the client reads (raise it with WithMaxResponseBytes)")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "allocated %d bytes", after.TotalAlloc-before.TotalAlloc)

	// Past the Client's answer budget, the answer is refused unread too.
	runtime.ReadMemStats(&before)
	_, err = c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"}, WithMaxResponseBytes(4<<30))
	runtime.ReadMemStats(&after)
	assert.ErrorIs(t, err, ErrUnexpectedResponse)
	assert.ErrorContains(t, err, "declares 2000000000 bytes, more than the 268435456 bytes of answers the Client holds at once (raise it with WithAnswerBudget)")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20), "allocated %d bytes", after.TotalAlloc-before.TotalAlloc)
}

// Within the cap and the budget, a Content-Length that lies makes the
// client allocate no more than a 128th of it before the bytes come.
func TestALyingContentLengthWithinTheBudgetIsNotAllocated(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fmHijack(w, func(c net.Conn) {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200000000\r\n\r\n{\"success\":true")
		})
	})
	c := newTestClient(t, ts.URL)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
	runtime.ReadMemStats(&after)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "allocated %d bytes", after.TotalAlloc-before.TotalAlloc)
}
