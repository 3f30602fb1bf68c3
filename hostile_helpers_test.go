package creative

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/memnet"
)

// heapAllocs is the heap the process has allocated so far, in bytes: the
// difference across a call bounds what the call allocated (and whatever
// else ran meanwhile, which only makes a bound harder to meet).
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// safety bounds every wait of a hostile server, so that a test that goes
// wrong fails instead of hanging.
const safety = 10 * time.Second

// awaitClose waits until the client closes conn or the test ends.
func awaitClose(conn net.Conn, done <-chan struct{}) {
	go func() {
		select {
		case <-done:
			_ = conn.Close()
		case <-time.After(safety):
			_ = conn.Close()
		}
	}()
	_, _ = io.Copy(io.Discard, conn)
}

// testDone returns a channel closed when t ends, before the servers the test
// started before calling it are closed.
func testDone(t *testing.T) <-chan struct{} {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return done
}

// hijack takes the connection of a request whose body was read, writes raw
// to it, and then runs then (if any) before closing it.
func hijack(w http.ResponseWriter, r *http.Request, raw string, then func(net.Conn)) {
	_, _ = io.Copy(io.Discard, r.Body)
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, raw); err != nil {
		return
	}
	if then != nil {
		then(conn)
	}
}

// drip writes p one byte a second, flushing each, until p ends or the
// client goes away.
func drip(w http.ResponseWriter, r *http.Request, p string, done <-chan struct{}) {
	f := w.(http.Flusher)
	for i := 0; i < len(p); i++ {
		if _, err := io.WriteString(w, p[i:i+1]); err != nil {
			return
		}
		f.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-done:
			return
		case <-time.After(time.Second):
		}
	}
}

// endless writes prefix and then chunk again and again until the client
// goes away.
func endless(w io.Writer, prefix string, chunk []byte) {
	if _, err := io.WriteString(w, prefix); err != nil {
		return
	}
	for {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// rawServer listens on 127.0.0.1 (or in memory) and hands each connection
// to serve, for answers net/http would not write: a TLS client talking to
// plain HTTP, headers that drip. It counts connections.
type rawServer struct {
	ln    net.Listener
	mem   *memnet.Listener // ln, when in memory
	conns atomic.Int64
	wg    sync.WaitGroup
}

func newRawServer(t *testing.T, serve func(conn net.Conn, done <-chan struct{})) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startRawServer(t, ln, serve)
}

// newMemRawServer is newRawServer in memory (internal/memnet), for a test
// in a synctest bubble; its clients need s.dial().
func newMemRawServer(t *testing.T, serve func(conn net.Conn, done <-chan struct{})) *rawServer {
	t.Helper()
	ln := memnet.Listen()
	s := startRawServer(t, ln, serve)
	s.mem = ln
	return s
}

func startRawServer(t *testing.T, ln net.Listener, serve func(conn net.Conn, done <-chan struct{})) *rawServer {
	s := &rawServer{ln: ln}
	done := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer conn.Close()
				serve(conn, done)
			}()
		}
	}()
	t.Cleanup(func() {
		close(done)
		_ = ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *rawServer) addr() string { return s.ln.Addr().String() }

// dial is the options a client needs to reach s, as testServer.dial.
func (s *rawServer) dial() []Option {
	if s.mem != nil {
		return []Option{WithHTTPClient(&http.Client{Transport: s.mem.Transport()})}
	}
	return nil
}

// readRequest reads one HTTP request from br, its body included.
func readRequest(br *bufio.Reader) error {
	req, err := http.ReadRequest(br)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err
}

// gzipMember compresses p as one gzip member.
func gzipMember(p []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = zw.Write(p)
	_ = zw.Close()
	return b.Bytes()
}

// gzipBomb is prefix followed by a GiB of 'A' (base64 of zeros), as a gzip
// stream of about a MiB: a member of 1 MiB of 'A' repeated 1024 times (gzip
// readers read concatenated members as one stream).
func gzipBomb(prefix string) []byte {
	return append(gzipMember([]byte(prefix)), bytes.Repeat(bombMember(), 1024)...)
}

var bombMember = sync.OnceValue(func() []byte { return gzipMember(bytes.Repeat([]byte("A"), 1<<20)) })

// pngDeclaring returns a PNG of a few dozen bytes whose header declares
// w×h RGBA pixels: a valid IHDR (its CRC included), one IDAT of a tiny zlib
// stream and IEND.
func pngDeclaring(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		b.WriteString(typ)
		b.Write(data)
		_ = binary.Write(&b, binary.BigEndian, crc.Sum32())
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8 bits a sample, RGBA
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x63, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01})
	chunk("IEND", nil)
	return b.Bytes()
}

// jpegDeclaring returns the start of a baseline JFIF JPEG whose frame
// header declares w×h pixels.
func jpegDeclaring(w, h uint16) []byte {
	b := []byte{0xff, 0xd8}
	b = append(b, 0xff, 0xe0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0) // JFIF: config ends at the frame header
	b = append(b, 0xff, 0xc0, 0x00, 0x0b, 8, byte(h>>8), byte(h), byte(w>>8), byte(w), 1, 1, 0x11, 0)
	return append(b, 0xff, 0xd9)
}

// gifDeclaring returns a GIF whose logical screen is w×h pixels.
func gifDeclaring(w, h uint16) []byte {
	b := []byte("GIF89a")
	b = binary.LittleEndian.AppendUint16(b, w)
	b = binary.LittleEndian.AppendUint16(b, h)
	b = append(b, 0, 0, 0)                                  // no global color table
	b = append(b, 0x2c, 0, 0, 0, 0)                         // an image at 0,0
	b = binary.LittleEndian.AppendUint16(b, w)              // as wide
	b = binary.LittleEndian.AppendUint16(b, h)              // and as high
	b = append(b, 0x80, 0, 0, 0, 0, 0, 0, 2, 2, 0x44, 1, 0) // a color table and a little LZW
	return append(b, 0x3b)
}

// keyForms are the forms in which a key may be echoed: as it is, escaped
// for a URL's query or path (with upper- or lower-case hex), and with its
// slashes escaped as some JSON encoders do.
func keyForms(k string) []string {
	forms := []string{k, url.QueryEscape(k), url.PathEscape(k), strings.ReplaceAll(k, "/", `\/`)}
	for _, f := range forms[1:3] {
		forms = append(forms, lowercaseEscapes(f))
	}
	if h := html.EscapeString(k); h != k {
		forms = append(forms, h)
	}
	for _, f := range binaryForms(k) {
		forms = append(forms, f, strings.ToLower(f), strings.ToUpper(f))
	}
	return forms
}

// binaryForms are k in hex and in base32 (both alphabets), each without
// its last character, which depends on what follows k.
func binaryForms(k string) []string {
	var out []string
	for _, enc := range []string{hex.EncodeToString([]byte(k)), base32.StdEncoding.EncodeToString([]byte(k)), base32.HexEncoding.EncodeToString([]byte(k))} {
		enc = strings.TrimRight(enc, "=")
		out = append(out, enc[:len(enc)-1])
	}
	return out
}

func lowercaseEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = bytes.ToLower(b[i+1 : i+2])[0], bytes.ToLower(b[i+2 : i+3])[0]
		}
	}
	return string(b)
}

// leak says where text holds one of keys, in any of its forms, or a piece
// of 12 bytes or more of one: a key cut at the edge of what was kept still
// gives most of it away.
func leak(text string, keys ...string) string {
	for _, k := range keys {
		for _, f := range keyForms(k) {
			if i := strings.Index(text, f); i >= 0 {
				return fmt.Sprintf("the key as %q at %d", f, i)
			}
		}
		const piece = 12
		for i := 0; i+piece <= len(k); i++ {
			if j := strings.Index(text, k[i:i+piece]); j >= 0 {
				return fmt.Sprintf("%q of the key at %d", k[i:i+piece], j)
			}
		}
	}
	return ""
}

// errorTexts are every text a user can get from err: its message, its
// formatting with every verb, each cause it unwraps to, and the fields of
// an *APIError or *NetworkError.
func errorTexts(err error) map[string]string {
	out := map[string]string{
		"Error()": err.Error(),
		"%v":      fmt.Sprintf("%v", err),
		"%+v":     fmt.Sprintf("%+v", err),
		"%#v":     fmt.Sprintf("%#v", err),
		"%s":      fmt.Sprintf("%s", err),
		"%q":      fmt.Sprintf("%q", err),
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		out["APIError.Message"] = apiErr.Message
		out["APIError.Body"] = string(apiErr.Body)
		out["APIError.RequestID"] = apiErr.RequestID
		for k, vs := range apiErr.Header {
			for i, v := range vs {
				out[fmt.Sprintf("APIError.Header[%s][%d]", k, i)] = v
			}
		}
	}
	var netErr *NetworkError
	if errors.As(err, &netErr) {
		out["NetworkError.Error()"] = netErr.Error()
		out["NetworkError.Err"] = netErr.Err.Error()
		out["NetworkError.Err %+v"] = fmt.Sprintf("%+v", netErr.Err)
	}
	return out
}

// causes are the texts of the errors err unwraps to, one level after
// another (following the first of a joined list).
func causes(err error) []string {
	var out []string
	for e := errors.Unwrap(err); e != nil; {
		out = append(out, fmt.Sprintf("%T: %s", e, e.Error()))
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			e = u.Unwrap()
		case interface{ Unwrap() []error }:
			if es := u.Unwrap(); len(es) > 0 {
				e = es[0]
			} else {
				e = nil
			}
		default:
			e = nil
		}
	}
	return out
}

const (
	kib = 1 << 10
	mib = 1 << 20
)

// httpCase serves h (given a channel closed when the test ends) from an
// httptest server on 127.0.0.1, or in memory when mem is set; the client
// gets opts.
func httpCase(h func(done <-chan struct{}) http.HandlerFunc, opts ...Option) func(t *testing.T, mem bool) hostileEnv {
	return func(t *testing.T, mem bool) hostileEnv {
		ts := startTestServer(t, nil, mem)
		done := testDone(t)
		ts.mu.Lock()
		ts.handler = h(done)
		ts.mu.Unlock()
		return hostileEnv{base: ts.URL, opts: append(ts.dial(), opts...), hits: ts.hits.Load}
	}
}

// rawCase answers every connection with serve on a raw listener, on
// 127.0.0.1 or in memory when mem is set.
func rawCase(serve func(conn net.Conn, done <-chan struct{}), opts ...Option) func(t *testing.T, mem bool) hostileEnv {
	return func(t *testing.T, mem bool) hostileEnv {
		start := newRawServer
		if mem {
			start = newMemRawServer
		}
		s := start(t, serve)
		return hostileEnv{base: "http://" + s.addr(), opts: append(s.dial(), opts...), hits: s.conns.Load}
	}
}

// answer writes a whole answer.
func answer(status int, ctype, body string, header ...string) func(<-chan struct{}) http.HandlerFunc {
	return func(<-chan struct{}) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			for i := 0; i+1 < len(header); i += 2 {
				w.Header().Add(header[i], header[i+1])
			}
			if ctype != "" {
				w.Header().Set("Content-Type", ctype)
			}
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
}

// Calls.
func hostileMusic(ctx context.Context, c *Client, _ string) error {
	_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"})
	return err
}

func oneImageCall(ctx context.Context, c *Client, _ string) error {
	_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p", NumberOfResults: 1})
	return err
}

func speech(ctx context.Context, c *Client, _ string) error {
	a, err := c.TextToSpeech(ctx, TextToSpeechRequest{Prompt: "p", VoiceID: ids.VoiceFemale1})
	if err != nil {
		return err
	}
	defer a.Close()
	_, err = io.Copy(io.Discard, a)
	if err == nil {
		return errors.New("speech was handed back as audio")
	}
	return err
}

func download(ctx context.Context, c *Client, base string) error {
	_, err := c.Download(ctx, URL(base+"/files/a.bin"), io.Discard)
	return err
}

// concurrently makes n calls at once and returns the first error, or an
// error saying how one differs from the first in type or cause.
func concurrently(n int, call func(ctx context.Context, c *Client, base string) error) func(context.Context, *Client, string) error {
	return func(ctx context.Context, c *Client, base string) error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = call(ctx, c, base)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if fmt.Sprintf("%T", err) != fmt.Sprintf("%T", errs[0]) {
				return fmt.Errorf("call %d ended with %v, call 0 with %w", i, err, errs[0])
			}
		}
		return errs[0]
	}
}

// bodyLen checks the length of an *APIError's Body.
func bodyLen(n int) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Len(t, apiErr.Body, n)
	}
}

// errorLen bounds the length of the error's text and its Message.
func errorLen(n int) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		assert.LessOrEqual(t, len(err.Error()), n, "err.Error() is %d bytes", len(err.Error()))
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.LessOrEqual(t, len(apiErr.Message), n)
		assert.LessOrEqual(t, len(apiErr.Body), maxErrorBody)
	}
}

func envelopeOf(data string) string { return `{"success":true,"message":"ok","data":` + data + `}` }

// Shared payloads, built once.
var (
	bombJSON  = sync.OnceValue(func() []byte { return gzipBomb(`{"success":true,"message":"ok","data":[{"base64":"`) })
	bombAudio = sync.OnceValue(func() []byte { return gzipBomb("ID3\x04\x00\x00\x00\x00\x00\x00") })
	huge      = sync.OnceValue(func() string { return strings.Repeat("m", 50*mib) })
	chunkA    = bytes.Repeat([]byte("A"), 32*kib)
)

// gzipAnswer sends body with Content-Encoding gzip when the request
// asked for it (Go's transport does by itself) and a 400 otherwise.
func gzipAnswer(body func() []byte, ctype string) func(<-chan struct{}) http.HandlerFunc {
	return func(<-chan struct{}) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				http.Error(w, "gzip was not asked for", 400)
				return
			}
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Type", ctype)
			_, _ = w.Write(body())
		}
	}
}

// contentLengthLie answers with headers declaring n bytes, sends three,
// and then waits until all of calls have their answer (and closes) or, with
// hang, until the client goes away.
func contentLengthLie(n int64, calls int, hang bool) func(<-chan struct{}) http.HandlerFunc {
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
	)
	return func(done <-chan struct{}) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			wait := all
			if arrived++; arrived == calls {
				close(all)
				arrived, all = 0, make(chan struct{})
			}
			mu.Unlock()
			head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"s", n)
			hijack(w, r, head, func(conn net.Conn) {
				if hang {
					awaitClose(conn, done)
					return
				}
				select {
				case <-wait:
				case <-done:
				case <-time.After(safety):
				}
			})
		}
	}
}
