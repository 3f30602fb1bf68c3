package creative

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The SDK alone decides to send a call again: net/http never replays one,
// over HTTP/1.1 or HTTP/2, whatever header the caller adds. Each row makes
// two calls against a server of raw frames: the first is answered (so the
// second finds a kept-alive connection), the second meets the row's fault.
// The server counts, for the second call, the requests that arrived whole
// and those it processed (a REFUSED_STREAM, or a stream above a GOAWAY's
// last, is not processed).

// h2Act is what the server does with a request that arrived whole.
type h2Act struct {
	kind string // "answer", "reset", "headers-reset", "goaway" (then close), "goaway-below" (then wait for the client to leave), "answer-goaway", "drop"
	code uint32 // the reset's or GOAWAY's code
}

var (
	h2Answer       = h2Act{kind: "answer"}
	h2AnswerGoAway = h2Act{kind: "answer-goaway"}
	h2Drop         = h2Act{kind: "drop"}
	h2GoAway       = h2Act{kind: "goaway"}
	h2GoAwayBelow  = h2Act{kind: "goaway-below"}
)

func h2Reset(code uint32) h2Act { return h2Act{kind: "reset", code: code} }

// HTTP/2 error codes (RFC 9113, section 7).
const (
	h2NoError       = 0x0
	h2ProtocolError = 0x1
	h2InternalError = 0x2
	h2Cancel        = 0x8
)

// replayServer is a loopback server that speaks HTTP/2 with prior
// knowledge (h2c, or over TLS with ALPN h2) or HTTP/1.1, from raw frames,
// so that it can reset a stream with any code and send GOAWAY when it
// chooses. act says what to do with the n-th request that arrived whole
// (from 0).
type replayServer struct {
	*rawServer
	act       func(n int) h2Act
	mu        sync.Mutex
	whole     int // requests that arrived whole
	processed int // of them, those the server may have acted on
}

func (s *replayServer) arrived() h2Act {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.act(s.whole)
	s.whole++
	if !(a.kind == "reset" && a.code == h2RefusedStream) && a.kind != "goaway-below" { // an answer begun was processed
		s.processed++
	}
	return a
}

func (s *replayServer) counts() (whole, processed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.whole, s.processed
}

// h2Frame writes one frame.
func h2Frame(w io.Writer, typ, flags byte, stream uint32, payload []byte) error {
	hdr := make([]byte, 9, 9+len(payload))
	hdr[0], hdr[1], hdr[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	hdr[3], hdr[4] = typ, flags
	binary.BigEndian.PutUint32(hdr[5:], stream)
	_, err := w.Write(append(hdr, payload...))
	return err
}

// h2 frame types and flags used here.
const (
	h2Data, h2Headers, h2RST, h2Settings, h2Ping, h2GoAwayFrame = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7
	h2EndStream, h2Ack, h2EndHeaders                            = 0x1, 0x1, 0x4
)

func h2GoAwayPayload(last, code uint32) []byte {
	p := make([]byte, 8)
	binary.BigEndian.PutUint32(p, last)
	binary.BigEndian.PutUint32(p[4:], code)
	return p
}

// serveH2 serves one HTTP/2 connection.
func (s *replayServer) serveH2(conn net.Conn, done <-chan struct{}) {
	defer closeWhenDone(conn, done)()
	br := bufio.NewReader(conn)
	preface := make([]byte, len(http2Preface))
	if _, err := io.ReadFull(br, preface); err != nil || string(preface) != http2Preface {
		return
	}
	if h2Frame(conn, h2Settings, 0, 0, nil) != nil {
		return
	}
	hdr := make([]byte, 9)
	last := uint32(1<<31 - 1) // streams above a GOAWAY's last are not processed
	for {
		if _, err := io.ReadFull(br, hdr); err != nil {
			return
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		typ, flags, stream := hdr[3], hdr[4], binary.BigEndian.Uint32(hdr[5:])&0x7fffffff
		payload := make([]byte, n)
		if _, err := io.ReadFull(br, payload); err != nil {
			return
		}
		var err error
		switch {
		case typ == h2Settings && flags&h2Ack == 0:
			err = h2Frame(conn, h2Settings, h2Ack, 0, nil)
		case typ == h2Ping && flags&h2Ack == 0:
			err = h2Frame(conn, h2Ping, h2Ack, 0, payload)
		case (typ == h2Headers || typ == h2Data) && flags&h2EndStream != 0 && stream > last:
			s.mu.Lock()
			s.whole++ // sent before the client read the GOAWAY: ignored
			s.mu.Unlock()
		case (typ == h2Headers || typ == h2Data) && flags&h2EndStream != 0:
			a := s.arrived()
			if a.kind == "answer-goaway" {
				last = stream
			}
			if !s.h2Act(conn, stream, a, done) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// h2Act does a with the request on stream; false ends the connection.
func (s *replayServer) h2Act(conn net.Conn, stream uint32, a h2Act, done <-chan struct{}) bool {
	switch a.kind {
	case "answer", "answer-goaway":
		// :status 200 (static index 8), content-type (static name 31) as a literal.
		hdrs := append([]byte{0x88, 0x5f, byte(len("application/json"))}, "application/json"...)
		if h2Frame(conn, h2Headers, h2EndHeaders, stream, hdrs) != nil ||
			h2Frame(conn, h2Data, h2EndStream, stream, []byte(musicOK)) != nil {
			return false
		}
		if a.kind == "answer-goaway" { // no new stream on this connection
			return h2Frame(conn, h2GoAwayFrame, 0, 0, h2GoAwayPayload(stream, h2NoError)) == nil
		}
		return true
	case "headers-reset": // the answer's headers and part of its body, then the stream reset
		hdrs := append([]byte{0x88, 0x5f, byte(len("application/json"))}, "application/json"...)
		if h2Frame(conn, h2Headers, h2EndHeaders, stream, hdrs) != nil ||
			h2Frame(conn, h2Data, 0, stream, []byte(musicOK[:len(musicOK)/2])) != nil {
			return false
		}
		code := make([]byte, 4)
		binary.BigEndian.PutUint32(code, a.code)
		return h2Frame(conn, h2RST, 0, stream, code) == nil
	case "reset":
		code := make([]byte, 4)
		binary.BigEndian.PutUint32(code, a.code)
		return h2Frame(conn, h2RST, 0, stream, code) == nil
	case "goaway": // processed, then the connection closes without an answer
		_ = h2Frame(conn, h2GoAwayFrame, 0, 0, h2GoAwayPayload(stream, h2NoError))
		return false
	case "goaway-below": // not processed: the client may send it elsewhere
		if h2Frame(conn, h2GoAwayFrame, 0, 0, h2GoAwayPayload(max(stream, 2)-2, a.code)) != nil {
			return false
		}
		awaitClose(conn, done)
		return false
	}
	return false // drop
}

// serveH1 serves one HTTP/1.1 connection, kept alive.
func (s *replayServer) serveH1(conn net.Conn, done <-chan struct{}) {
	defer closeWhenDone(conn, done)()
	br := bufio.NewReader(conn)
	for {
		if readRequest(br) != nil {
			return
		}
		if s.arrived().kind == "drop" {
			return
		}
		if _, err := fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(musicOK), musicOK); err != nil {
			return
		}
	}
}

// closeWhenDone closes conn when the test ends (done), so that a connection
// a client keeps open (one that got a GOAWAY, say) does not hold the
// server's end; the function it returns stops watching.
func closeWhenDone(conn net.Conn, done <-chan struct{}) func() {
	stop := make(chan struct{})
	go func() {
		select {
		case <-done:
			_ = conn.Close()
		case <-stop:
		}
	}()
	return func() { close(stop) }
}

// replayProto is a way to reach a replayServer: the server's listener and
// the client's transport.
type replayProto struct {
	name  string
	start func(t *testing.T, s *replayServer) (baseURL string, hc *http.Client)
}

var replayProtos = []replayProto{
	{"HTTP/1.1", func(t *testing.T, s *replayServer) (string, *http.Client) {
		s.rawServer = newRawServer(t, s.serveH1)
		return "http://" + s.addr(), &http.Client{Transport: &http.Transport{}}
	}},
	{"h2c", func(t *testing.T, s *replayServer) (string, *http.Client) {
		s.rawServer = newRawServer(t, s.serveH2)
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		return "http://" + s.addr(), &http.Client{Transport: &http.Transport{Protocols: &p}}
	}},
	{"HTTP/2 over TLS", func(t *testing.T, s *replayServer) (string, *http.Client) {
		// httptest's certificate, for 127.0.0.1, and a client that trusts it.
		cert := httptest.NewUnstartedServer(http.NotFoundHandler())
		cert.EnableHTTP2 = true
		cert.StartTLS()
		cfg := cert.TLS.Clone()
		hc := cert.Client()
		cert.Close()
		cfg.NextProtos = []string{"h2"}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		s.rawServer = startRawServer(t, tls.NewListener(ln, cfg), s.serveH2)
		return "https://" + s.addr(), hc
	}},
}

// after answers the first request (the warm-up call's), then does acts one
// by one, then answers; forever answers the first and then does a always.
func after(acts ...h2Act) func(int) h2Act {
	return func(n int) h2Act {
		if n == 0 || n > len(acts) {
			return h2Answer
		}
		return acts[n-1]
	}
}

func forever(a h2Act) func(int) h2Act {
	return func(n int) h2Act {
		if n == 0 {
			return h2Answer
		}
		return a
	}
}

func TestNetHTTPNeverReplaysACall(t *testing.T) {
	const (
		ok      = "succeeds"
		unknown = "outcome unknown"
		notSent = "not sent"
	)
	rows := []struct {
		name      string
		h1        bool // the row applies to HTTP/1.1 (else HTTP/2 only)
		act       func(int) h2Act
		want      string
		whole     int // requests of the second call that arrived whole
		orMore    int // or up to this many more (sent on a connection the server had closed to new streams)
		processed int // of them, those the server processed
	}{
		{name: "connection dropped after the whole request", h1: true, act: forever(h2Drop), want: unknown, whole: 1, processed: 1},
		{name: "RST_STREAM PROTOCOL_ERROR after the whole request, every time", act: forever(h2Reset(h2ProtocolError)), want: unknown, whole: 1, processed: 1},
		{name: "RST_STREAM INTERNAL_ERROR after the whole request", act: forever(h2Reset(h2InternalError)), want: unknown, whole: 1, processed: 1},
		{name: "RST_STREAM CANCEL after the whole request", act: forever(h2Reset(h2Cancel)), want: unknown, whole: 1, processed: 1},
		{name: "RST_STREAM REFUSED_STREAM once, then an answer", act: after(h2Reset(h2RefusedStream)), want: ok, whole: 2, processed: 1},
		{name: "RST_STREAM REFUSED_STREAM every time", act: forever(h2Reset(h2RefusedStream)), want: notSent, whole: 3, processed: 0},
		{name: "the answer's headers, then RST_STREAM REFUSED_STREAM", act: forever(h2Act{kind: "headers-reset", code: h2RefusedStream}), want: unknown, whole: 1, processed: 1},
		{name: "the answer's headers, then RST_STREAM CANCEL", act: forever(h2Act{kind: "headers-reset", code: h2Cancel}), want: unknown, whole: 1, processed: 1},
		{name: "GOAWAY after the request, naming it processed, then closed", act: forever(h2GoAway), want: unknown, whole: 1, processed: 1},
		{name: "GOAWAY below the request (not processed), then an answer on a new connection", act: after(h2GoAwayBelow), want: ok, whole: 2, processed: 1},
		{name: "GOAWAY with an error code below the first stream of a new connection", act: func(n int) h2Act {
			switch n {
			case 0:
				return h2AnswerGoAway // the call goes on a new connection, as its stream 1
			case 1:
				return h2Act{kind: "goaway-below", code: h2ProtocolError}
			}
			return h2Answer
		}, want: ok, whole: 2, processed: 1},
		{name: "GOAWAY before the request (after the warm-up's answer)", act: func(n int) h2Act {
			if n == 0 {
				return h2AnswerGoAway
			}
			return h2Answer
		}, want: ok, whole: 1, orMore: 1, processed: 1},
	}
	for _, proto := range replayProtos {
		for _, row := range rows {
			if proto.name == "HTTP/1.1" && !row.h1 {
				continue
			}
			for _, idem := range []bool{false, true} {
				name := proto.name + "/" + row.name
				if idem {
					name += "/with Idempotency-Key"
				}
				t.Run(name, func(t *testing.T) {
					s := &replayServer{act: row.act}
					base, hc := proto.start(t, s)
					opts := []Option{WithHTTPClient(hc)}
					if idem {
						opts = append(opts, WithHeader("Idempotency-Key", "k-1"))
					}
					c := newTestClient(t, base, opts...)
					ctx, cancel := context.WithTimeout(context.Background(), safety)
					defer cancel()
					require.NoError(t, music(ctx, c), "the warm-up call")
					whole0, processed0 := s.counts()
					err := music(ctx, c)
					whole, processed := s.counts()
					if row.orMore == 0 {
						assert.Equal(t, row.whole, whole-whole0, "requests of the call that arrived whole")
					} else {
						assert.GreaterOrEqual(t, whole-whole0, row.whole, "requests of the call that arrived whole")
						assert.LessOrEqual(t, whole-whole0, row.whole+row.orMore, "requests of the call that arrived whole")
					}
					assert.Equal(t, row.processed, processed-processed0, "requests of the call the server processed")
					switch row.want {
					case ok:
						assert.NoError(t, err)
					case unknown:
						assert.ErrorIs(t, err, ErrOutcomeUnknown)
					case notSent:
						assert.ErrorIs(t, err, ErrNotSent)
						assert.NotErrorIs(t, err, ErrOutcomeUnknown)
					}
					var ne *NetworkError
					if row.want != ok && assert.True(t, errors.As(err, &ne), "%v", err) {
						assert.Equal(t, row.whole, ne.Attempts, "attempts the error reports")
					}
				})
			}
		}
	}
}

// net/http keeps the type of an HTTP/2 stream error when it does not
// flatten it: the classifier reads its code through errors.As, as it would
// read golang.org/x/net/http2.StreamError.
type fakeStreamError struct {
	StreamID uint32
	Code     uint8 // another integer type, as net/http's own ErrCode is
	Cause    error
}

func (e fakeStreamError) Error() string { return "stream error" }

func (e fakeStreamError) As(target any) bool {
	se, ok := target.(*h2StreamError)
	if ok {
		*se = h2StreamError{StreamID: e.StreamID, Code: uint32(e.Code), Cause: e.Cause}
	}
	return ok
}

func TestUnprocessedReadsTheStreamErrorsCode(t *testing.T) {
	assert.True(t, unprocessed(fmt.Errorf("wrapped: %w", fakeStreamError{StreamID: 3, Code: h2RefusedStream})))
	assert.False(t, unprocessed(fakeStreamError{StreamID: 3, Code: h2ProtocolError}))
	assert.False(t, unprocessed(errors.New(`http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=NO_ERROR, debug="http2: Transport: cannot retry err [stream error: stream ID 1; REFUSED_STREAM; received from peer] after Request.Body was written; define Request.GetBody to avoid this error"`)),
		"a server's GOAWAY debug data holding the very text")
	assert.True(t, unprocessed(errors.New("http2: Transport: cannot retry err [stream error: stream ID 5; REFUSED_STREAM; received from peer] after Request.Body was written; define Request.GetBody to avoid this error")))
	assert.False(t, unprocessed(errors.New("http2: Transport: cannot retry err [stream error: stream ID 5; PROTOCOL_ERROR; received from peer] after Request.Body was written; define Request.GetBody to avoid this error")))
	assert.False(t, unprocessed(errors.New(strings.Repeat("REFUSED_STREAM", 2))))
	assert.True(t, unprocessed(errors.New("http2: Transport received GOAWAY from server ErrCode:PROTOCOL_ERROR")))
	assert.False(t, unprocessed(errors.New(`http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=NO_ERROR, debug="http2: Transport received GOAWAY from server ErrCode:PROTOCOL_ERROR"`)))
}
