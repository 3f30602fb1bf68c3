package cassette

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// replay returns the recorded answer e to req: its status, headers and
// body, a stream's chunks paced as they came unless pacing is off.
func (c *Cassette) replay(e *entry, req *http.Request) (*http.Response, error) {
	h := e.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	var body io.ReadCloser = http.NoBody
	var size int64
	if e.Body != "" {
		f, err := c.st.root.Open(e.Body)
		if err != nil {
			return nil, fmt.Errorf("cassette: the recording of %s lost its body: %w", e.Op, err)
		}
		st, err := f.Stat()
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("cassette: %w", err)
		}
		size, body = st.Size(), f
		if len(e.Parts) > 0 {
			b, err := c.st.root.ReadFile(e.Body)
			_ = f.Close()
			if err == nil {
				b, err = c.joinImages(b)
			}
			if err != nil {
				return nil, err
			}
			size, body = int64(len(b)), io.NopCloser(bytes.NewReader(b))
		}
		if len(e.Chunks) > 0 {
			body = &paced{f: f, chunks: e.Chunks, start: time.Now(), ctx: req.Context(), pace: !c.o.NoPacing}
		}
	}
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	return &http.Response{
		Status:        strconv.Itoa(e.Status) + " " + http.StatusText(e.Status),
		StatusCode:    e.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          body,
		ContentLength: size,
		Request:       req,
	}, nil
}

// paced reads a recorded stream chunk by chunk, each no sooner than it
// came when recorded (when pace is set).
type paced struct {
	f      io.ReadCloser
	chunks [][2]int64
	i      int   // the next chunk
	left   int64 // what is left of the chunk being read
	start  time.Time
	ctx    context.Context
	pace   bool
}

func (p *paced) Read(b []byte) (int, error) {
	if p.left == 0 && p.i < len(p.chunks) {
		ch := p.chunks[p.i]
		p.i++
		p.left = ch[0]
		if p.pace {
			if err := sleepUntil(p.ctx, p.start.Add(time.Duration(ch[1])*time.Millisecond)); err != nil {
				return 0, err
			}
		}
	}
	if p.left <= 0 { // past the recorded chunks
		return p.f.Read(b)
	}
	n, err := p.f.Read(b[:min(int64(len(b)), p.left)])
	p.left -= int64(n)
	return n, err
}

func (p *paced) Close() error { return p.f.Close() }

// sleepUntil waits until t, or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
