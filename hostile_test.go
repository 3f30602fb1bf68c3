package creative

// Hostile answers: what a user gets from a service (or a proxy in front of
// it) that is broken or malicious. Each case is a server behaviour, the
// call made, the typed error it ends with, and bounds on the heap the call
// allocates and on the time it takes. The allocation is the process's
// (runtime/metrics), so the bounds are generous; a case that misses a bound
// is measured again, up to three times, and judged on its best run. A case
// whose call waits on a timer (a deadline, a drip, a Retry-After, the rate
// limiter) runs in a synctest bubble, its server in memory, and takes an
// exact time on the bubble's clock.

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

// hostileEnv is a started hostile server: the base URL to give the client,
// the options the client needs, and how many requests (or connections) the
// server has seen.
type hostileEnv struct {
	base string
	opts []Option
	hits func() int64
}

// outcome is what a case's call must end with.
type outcome struct {
	ok       bool     // the call succeeds
	status   int      // an *APIError with this status; 0 is a *NetworkError
	plain    bool     // an error that is neither (Image.Decode)
	is       []error  // errors.Is targets
	has      []string // parts of err.Error()
	attempts int      // the error's Attempts, when not 0
	hits     int64    // requests the server saw, when not 0
	noHits   bool     // the server saw no request
	extra    func(t *testing.T, err error)
}

type hostileCase struct {
	name    string
	serve   func(t *testing.T, mem bool) hostileEnv // mem: the server is in memory
	call    func(ctx context.Context, c *Client, base string) error
	want    outcome
	alloc   uint64        // bound on the heap the call allocates
	within  time.Duration // bound on the time the call takes
	atLeast time.Duration // the call waits out a deadline at least this long
	// clock: the call waits on timers, so the case runs in a synctest
	// bubble, its server in memory, and takes exactly took on the
	// bubble's clock (within and atLeast are not used).
	clock bool
	took  time.Duration
}

func decodeFirst(ctx context.Context, c *Client, _ string) error {
	ims, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p", NumberOfResults: 1})
	if err != nil {
		return err
	}
	_, err = ims[0].Decode()
	return err
}

// badURLCases answer URL results that are not absolute http(s) URLs.
func badURLCases() []hostileCase {
	var out []hostileCase
	for _, u := range []string{"javascript:alert(1)", "file:///etc/passwd", "data:audio/wav;base64,UklGRg==",
		"/relative/a.wav", "a.wav", "//files.example/a.wav", "http:///a.wav", "ftp://files.example/a.wav", " https://files.example/a.wav"} {
		out = append(out, hostileCase{
			name:  fmt.Sprintf("a URL result %q", u),
			serve: httpCase(answer(200, "application/json", envelopeOf(jsonString(u)))),
			call:  hostileMusic,
			want: outcome{status: 200, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1,
				has: []string{"not an absolute http(s) URL"}},
			alloc: 4 * mib, within: time.Second,
		})
	}
	out = append(out, hostileCase{
		name:  "SplitAudio answered with a javascript: URL among http ones",
		serve: httpCase(answer(200, "application/json", envelopeOf(`["https://files.example/1.wav","javascript:alert(1)"]`))),
		call: func(ctx context.Context, c *Client, _ string) error {
			_, err := c.SplitAudio(ctx, SplitAudioRequest{Audio: FileFromBytes("a.wav", wavBytes)})
			return err
		},
		want:  outcome{status: 200, is: []error{ErrUnexpectedResponse}, hits: 1, has: []string{`data[1] is "javascript:alert(1)", not an absolute http(s) URL`}},
		alloc: 4 * mib, within: time.Second,
	})
	return out
}

func hostileCases() []hostileCase {
	capped := func(n int64) Option { return WithMaxResponseBytes(n) }
	return append([]hostileCase{
		// Memory.
		{
			name:  "a transparent gzip bomb: a GiB of JSON in about a MiB, capped at 1 MiB",
			serve: httpCase(gzipAnswer(bombJSON, "application/json"), capped(mib)),
			call:  oneImageCall,
			want: outcome{status: 200, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1,
				has: []string{"holds more than the 1048576 bytes the client reads (raise it with WithMaxResponseBytes)"}},
			alloc: 16 * mib, within: 3 * time.Second,
		},
		{
			name:  "a transparent gzip bomb as speech: the stream fails at the 1 MiB cap",
			serve: httpCase(gzipAnswer(bombAudio, "audio/mpeg"), capped(mib)),
			call:  speech,
			want: outcome{status: 200, is: []error{ErrUnexpectedResponse}, hits: 1,
				has: []string{"holds more than the 1048576 bytes"}},
			alloc: 16 * mib, within: 3 * time.Second,
		},
		{
			name:  "a transparent gzip bomb as a Download capped at 1 MiB",
			serve: httpCase(gzipAnswer(bombAudio, "application/octet-stream"), capped(mib)),
			call:  download,
			want: outcome{status: 200, is: []error{ErrUnexpectedResponse}, hits: 1,
				has: []string{"holds more than the 1048576 bytes"}},
			alloc: 16 * mib, within: 3 * time.Second,
		},
		{
			name:  "16 concurrent answers declare Content-Length 268435456, send 3 bytes and close",
			serve: httpCase(contentLengthLie(256*mib, 16, false)),
			call:  concurrently(16, hostileMusic),
			want:  outcome{is: []error{io.ErrUnexpectedEOF, ErrOutcomeUnknown}, attempts: 1, hits: 16, has: []string{"was not sent again"}},
			alloc: 32 * mib, within: 3 * time.Second,
		},
		{
			name:  "16 concurrent answers declare 32 MiB each (512 MiB in all), send 3 bytes and hang",
			serve: httpCase(contentLengthLie(32*mib, 16, true), WithTimeout(500*time.Millisecond)),
			call:  concurrently(16, hostileMusic),
			want:  outcome{is: []error{context.DeadlineExceeded}, attempts: 1, hits: 16},
			alloc: 16 * mib, clock: true, took: 500 * time.Millisecond,
		},
		{
			name: "an endless 200 of JSON, capped at 4 MiB",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/json")
					endless(w, `{"success":true,"message":"ok","data":[{"base64":"`, chunkA)
				}
			}, capped(4*mib)),
			call: oneImageCall,
			want: outcome{status: 200, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1,
				has: []string{"holds more than the 4194304 bytes the client reads"}},
			alloc: 24 * mib, within: 3 * time.Second,
		},
		{
			name: "an endless Download capped at 4 MiB",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) { endless(w, "", chunkA) }
			}, capped(4*mib)),
			call:  download,
			want:  outcome{status: 200, is: []error{ErrUnexpectedResponse}, hits: 1, has: []string{"holds more than the 4194304 bytes"}},
			alloc: 8 * mib, within: 3 * time.Second,
		},

		// Time.
		{
			name: "a 200 that drips a byte a second, WithTimeout 300ms",
			serve: httpCase(func(done <-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/json")
					drip(w, r, envelopeOf(`"https://files.example/a.wav"`), done)
				}
			}, WithTimeout(300*time.Millisecond)),
			call:  hostileMusic,
			want:  outcome{is: []error{context.DeadlineExceeded}, attempts: 1, hits: 1, has: []string{"reading the answer"}},
			alloc: 4 * mib, clock: true, took: 300 * time.Millisecond,
		},
		{
			name: "a 200 that drips a byte a second, under a context deadline of 300ms",
			serve: httpCase(func(done <-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/json")
					drip(w, r, envelopeOf(`"https://files.example/a.wav"`), done)
				}
			}),
			call: func(ctx context.Context, c *Client, base string) error {
				ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				return hostileMusic(ctx, c, base)
			},
			want:  outcome{is: []error{context.DeadlineExceeded}, attempts: 1, hits: 1},
			alloc: 4 * mib, clock: true, took: 300 * time.Millisecond,
		},
		{
			name: "speech that drips a byte a second after its first, WithTimeout 300ms",
			serve: httpCase(func(done <-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "audio/mpeg")
					drip(w, r, "ID3-audio-bytes", done)
				}
			}, WithTimeout(300*time.Millisecond)),
			call:  speech,
			want:  outcome{is: []error{context.DeadlineExceeded}, hits: 1},
			alloc: 4 * mib, clock: true, took: 300 * time.Millisecond,
		},
		{
			name: "a status line and headers that drip a byte a second, WithTimeout 300ms",
			serve: rawCase(func(conn net.Conn, done <-chan struct{}) {
				if readRequest(bufio.NewReader(conn)) != nil {
					return
				}
				for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n") {
					if _, err := conn.Write([]byte{b}); err != nil {
						return
					}
					select {
					case <-done:
						return
					case <-time.After(time.Second):
					}
				}
			}, WithTimeout(300*time.Millisecond)),
			call:  hostileMusic,
			want:  outcome{is: []error{context.DeadlineExceeded}, attempts: 1, hits: 1},
			alloc: 4 * mib, clock: true, took: 300 * time.Millisecond,
		},
		{
			name: "101 Switching Protocols with Upgrade, and the connection left open",
			serve: httpCase(func(done <-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					hijack(w, r, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello",
						func(conn net.Conn) { awaitClose(conn, done) })
				}
			}, WithTimeout(5*time.Second)),
			call: hostileMusic,
			want: outcome{status: 101, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1,
				has: []string{"HTTP 101", "instead of a result"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name: "101 Switching Protocols without Upgrade, and the connection left open",
			serve: httpCase(func(done <-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					hijack(w, r, "HTTP/1.1 101 Switching Protocols\r\n\r\n", func(conn net.Conn) { awaitClose(conn, done) })
				}
			}, WithTimeout(5*time.Second)),
			call:  hostileMusic,
			want:  outcome{status: 101, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1, has: []string{"HTTP 101"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name: "a 102 Processing and then nothing, WithTimeout 300ms",
			serve: httpCase(func(done <-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					hijack(w, r, "HTTP/1.1 102 Processing\r\n\r\n", func(conn net.Conn) { awaitClose(conn, done) })
				}
			}, WithTimeout(300*time.Millisecond)),
			call:  hostileMusic,
			want:  outcome{is: []error{context.DeadlineExceeded}, attempts: 1, hits: 1},
			alloc: 4 * mib, clock: true, took: 300 * time.Millisecond,
		},
		{
			name: "103 Early Hints before a success are read past, as HTTP says",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					body := envelopeOf(`"https://files.example/a.wav"`)
					hijack(w, r, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n"+
						fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body), nil)
				}
			}),
			call:  hostileMusic,
			want:  outcome{ok: true, hits: 1},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name: "a flood of 1xx answers, WithTimeout 2s",
			serve: httpCase(func(done <-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					hijack(w, r, "", func(conn net.Conn) {
						flood := []byte(strings.Repeat("HTTP/1.1 102 Processing\r\n\r\n", 1000))
						for {
							select {
							case <-done:
								return
							default:
							}
							if _, err := conn.Write(flood); err != nil {
								return
							}
						}
					})
				}
			}, WithTimeout(2*time.Second)),
			call: hostileMusic,
			// The headers of an answer, 1xx included, are bounded to 1 MiB;
			// past it the attempt fails like a connection broken after the
			// request arrived: its outcome is unknown, so it is not retried.
			want: outcome{hits: 1, attempts: 1, is: []error{ErrOutcomeUnknown},
				has: []string{"server response headers exceeded 1048576 bytes"}},
			alloc: 64 * mib, within: 2500 * time.Millisecond,
		},
		{
			name: "an answer of HTTP 099",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					hijack(w, r, "HTTP/1.1 099 Odd\r\nContent-Length: 0\r\n\r\n", nil)
				}
			}),
			call:  hostileMusic,
			want:  outcome{status: 99, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1, has: []string{"HTTP 99"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name:  "an answer of HTTP 600, which no operation promises",
			serve: httpCase(answer(600, "application/json", `{"success":true,"message":"ok","data":"https://files.example/a.wav"}`)),
			call:  hostileMusic,
			want:  outcome{status: 600, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1, has: []string{"HTTP 600"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name: "a 400 whose body never ends",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(400)
					endless(w, `{"success":false,"message":"`, chunkA)
				}
			}),
			call:  hostileMusic,
			want:  outcome{status: 400, is: []error{ErrInvalidRequest}, attempts: 1, hits: 1, extra: bodyLen(maxErrorBody)},
			alloc: 4 * mib, within: 2 * time.Second,
		},
		{
			name: "a 500 whose body never ends, retried twice (WithRetryMayPayAgain)",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "text/plain")
					w.WriteHeader(500)
					endless(w, "", chunkA)
				}
			}, WithRetryMayPayAgain()),
			call:  hostileMusic,
			want:  outcome{status: 500, is: []error{ErrServer, ErrOutcomeUnknown}, attempts: 3, hits: 3, extra: bodyLen(maxErrorBody)},
			alloc: 8 * mib, within: 2 * time.Second,
		},
		{
			name: "a 500 whose body drips a byte a second, WithTimeout 600ms (WithRetryMayPayAgain)",
			serve: httpCase(func(done <-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(500)
					drip(w, r, `{"success":false,"message":"slow"}`, done)
				}
			}, WithTimeout(600*time.Millisecond), WithRetryMayPayAgain()),
			call:  hostileMusic,
			want:  outcome{status: 500, is: []error{ErrServer, ErrOutcomeUnknown}, attempts: 3, hits: 3},
			alloc: 4 * mib, clock: true, took: 600 * time.Millisecond,
		},
		{
			name: "a 400 whose body drips a byte a second, under a context deadline of 300ms",
			serve: httpCase(func(done <-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(400)
					drip(w, r, `{"success":false,"message":"slow"}`, done)
				}
			}),
			call: func(ctx context.Context, c *Client, base string) error {
				ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				return hostileMusic(ctx, c, base)
			},
			want:  outcome{status: 400, is: []error{ErrInvalidRequest}, attempts: 1, hits: 1},
			alloc: 4 * mib, clock: true, took: 300 * time.Millisecond,
		},

		// Messages.
		{
			name: "a 50 MiB message in a 400 envelope",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				return answer(400, "application/json", `{"success":false,"message":"`+huge()+`"}`)(nil)
			}),
			call:  hostileMusic,
			want:  outcome{status: 400, is: []error{ErrInvalidRequest}, attempts: 1, hits: 1, extra: errorLen(2 * kib)},
			alloc: 8 * mib, within: 2 * time.Second,
		},
		{
			name: "a 50 MiB message in a 200 with success false",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				return answer(200, "application/json", `{"success":false,"message":"`+huge()+`"}`)(nil)
			}),
			call: hostileMusic,
			want: outcome{status: 200, attempts: 1, hits: 1, has: []string{"bytes in all)"}, extra: errorLen(2 * kib)},
			// The body as it grows (128 MiB), its message unquoted (50) and
			// as a string (50). Reading 50 MiB of JSON takes seconds under
			// the race detector.
			alloc: 5 * 50 * mib, within: 10 * time.Second,
		},

		// Results.
		{
			name:  "NumberOfResults 1 answered with 5 images",
			serve: httpCase(answer(200, "application/json", envelopeOf(`[`+strings.Repeat(`{"base64":"`+pngB64+`"},`, 4)+`{"base64":"`+pngB64+`"}]`))),
			call:  oneImageCall,
			want: outcome{status: 200, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1,
				has: []string{"data holds more than the 1 image(s) asked for"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name:  "GenerateQR (one image) answered with 5",
			serve: httpCase(answer(200, "application/json", envelopeOf(`[`+strings.Repeat(`"`+pngB64+`",`, 4)+`"`+pngB64+`"]`))),
			call: func(ctx context.Context, c *Client, _ string) error {
				_, err := c.GenerateQR(ctx, GenerateQRRequest{URL: "https://e.example", Prompt: "p"})
				return err
			},
			want:  outcome{status: 200, is: []error{ErrUnexpectedResponse}, hits: 1, has: []string{"more than the 1 image(s)"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name:  "an image whose PNG header declares 100000x100000 pixels: Decode refuses it",
			serve: httpCase(answer(200, "application/json", envelopeOf(`{"base64":"`+base64.StdEncoding.EncodeToString(pngDeclaring(100000, 100000))+`"}`))),
			call:  decodeFirst,
			want:  outcome{plain: true, hits: 1, has: []string{"declares 100000x100000 pixels, more than MaxDecodePixels"}},
			alloc: 4 * mib, within: time.Second,
		},

		{
			name:  "an image whose JPEG header declares 65500x65500 pixels: Decode refuses it",
			serve: httpCase(answer(200, "application/json", envelopeOf(`"`+base64.StdEncoding.EncodeToString(jpegDeclaring(65500, 65500))+`"`))),
			call:  decodeFirst,
			want:  outcome{plain: true, hits: 1, has: []string{"declares 65500x65500 pixels, more than MaxDecodePixels"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name:  "an image whose GIF header declares 65535x65535 pixels: Decode refuses it",
			serve: httpCase(answer(200, "application/json", envelopeOf(`"`+base64.StdEncoding.EncodeToString(gifDeclaring(65535, 65535))+`"`))),
			call:  decodeFirst,
			want:  outcome{plain: true, hits: 1, has: []string{"declares 65535x65535 pixels, more than MaxDecodePixels"}},
			alloc: 4 * mib, within: time.Second,
		},

		// Speech.
		{
			name:  "speech: a success envelope sent as audio/mpeg",
			serve: httpCase(answer(200, "audio/mpeg", envelopeOf(`"https://files.example/a.mp3"`))),
			call:  speech,
			want:  outcome{status: 200, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1, has: []string{"a JSON envelope where audio was promised"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name:  "speech: a failed envelope after blank lines, sent as audio/mpeg",
			serve: httpCase(answer(200, "audio/mpeg", "\r\n\n  \t"+`{"success":false,"message":"voice not available"}`)),
			call:  speech,
			want:  outcome{status: 200, attempts: 1, hits: 1, has: []string{"HTTP 200: voice not available"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name:  "speech: a gzip-encoded envelope sent as audio/mpeg",
			serve: httpCase(gzipAnswer(func() []byte { return gzipMember([]byte(envelopeOf(`"x"`))) }, "audio/mpeg")),
			call:  speech,
			want:  outcome{status: 200, is: []error{ErrUnexpectedResponse}, hits: 1, has: []string{"a JSON envelope where audio was promised"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name:  "speech: an envelope after a byte order mark, sent as audio/mpeg",
			serve: httpCase(answer(200, "audio/mpeg", "\ufeff"+envelopeOf(`"x"`))),
			call:  speech,
			want:  outcome{status: 200, is: []error{ErrUnexpectedResponse}, hits: 1, has: []string{"where audio was promised"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name:  "speech: an HTML page sent as audio/mpeg",
			serve: httpCase(answer(200, "audio/mpeg", "<!DOCTYPE html><html>maintenance</html>")),
			call:  speech,
			want:  outcome{status: 200, is: []error{ErrUnexpectedResponse}, hits: 1, has: []string{"maintenance", "where audio was promised"}},
			alloc: 4 * mib, within: time.Second,
		},

		// Redirects.
		{
			name: "a 302 on the POST is not followed",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/elsewhere" {
						replyJSON(200, envelopeOf(`"https://files.example/a.wav"`))(w, r)
						return
					}
					http.Redirect(w, r, "/elsewhere", http.StatusFound)
				}
			}),
			call: hostileMusic,
			want: outcome{status: 302, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1,
				has: []string{"redirected (HTTP 302) to http://127.0.0.1:", "/elsewhere: not followed, since it would turn the POST into a GET"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name: "a redirect from https to http is not followed",
			serve: func(t *testing.T, _ bool) hostileEnv {
				plain := newTestServer(t, replyJSON(200, envelopeOf(`"https://files.example/a.wav"`)))
				ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusTemporaryRedirect)
				}))
				t.Cleanup(ts.Close)
				return hostileEnv{base: ts.URL, opts: []Option{WithHTTPClient(ts.Client())}, hits: plain.hits.Load}
			},
			call: hostileMusic,
			want: outcome{status: 307, is: []error{ErrUnexpectedResponse}, attempts: 1,
				has: []string{"redirected (HTTP 307) to http://127.0.0.1:", "since it would leave https"}, noHits: true},
			alloc: 8 * mib, within: 2 * time.Second,
		},
		{
			name: "a redirect loop is refused after 10 requests, with no retry",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
				}
			}),
			call:  hostileMusic,
			want:  outcome{status: 307, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 10, has: []string{"after 10 redirects"}},
			alloc: 4 * mib, within: 2 * time.Second,
		},
		{
			name: "a Download's redirect loop is refused after 10 requests, with no retry",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, r.URL.Path, http.StatusFound)
				}
			}),
			call:  download,
			want:  outcome{status: 302, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 10, has: []string{"after 10 redirects"}},
			alloc: 4 * mib, within: 2 * time.Second,
		},
		{
			name: "a redirect to an unparsable Location is not retried",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Location", "http://%zz/moved")
					w.WriteHeader(http.StatusTemporaryRedirect)
				}
			}),
			call:  hostileMusic,
			want:  outcome{status: 307, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1, has: []string{"http://%zz/moved"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name: "a 302 to a Location of 512 KiB",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				return answer(http.StatusFound, "", "", "Location", "/"+strings.Repeat("a", 512*kib))(nil)
			}),
			call: hostileMusic,
			want: outcome{status: 302, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1,
				has: []string{"bytes in all)"}, extra: errorLen(2 * kib)},
			alloc: 32 * mib, within: time.Second,
		},
		{
			name:  "a redirect to javascript: is not followed",
			serve: httpCase(answer(http.StatusTemporaryRedirect, "", "", "Location", "javascript:alert(1)")),
			call:  hostileMusic,
			want:  outcome{status: 307, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1, has: []string{"not an http(s) URL"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name:  "a 302 without a Location",
			serve: httpCase(answer(http.StatusFound, "text/html", "<html>moved</html>")),
			call:  hostileMusic,
			want:  outcome{status: 302, is: []error{ErrUnexpectedResponse}, attempts: 1, hits: 1, has: []string{"an answer of HTTP 302 instead of a result"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name: "a TLS handshake with a plain-HTTP server is not retried",
			serve: func(t *testing.T, _ bool) hostileEnv {
				// A plain HTTP server reads the ClientHello as a malformed
				// request line and answers 400; net/http's own server waits
				// for a line end the ClientHello may not hold.
				s := newRawServer(t, func(conn net.Conn, done <-chan struct{}) {
					_, _ = conn.Read(make([]byte, 4096))
					_, _ = io.WriteString(conn, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n400 Bad Request")
				})
				hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
				return hostileEnv{base: "https://" + s.addr(), opts: []Option{WithHTTPClient(hc)}, hits: s.conns.Load}
			},
			call: hostileMusic,
			want: outcome{attempts: 1, hits: 1, extra: func(t *testing.T, err error) {
				var rec tls.RecordHeaderError
				assert.ErrorAs(t, err, &rec)
			}},
			alloc: 4 * mib, within: time.Second,
		},

		{
			name: "a refused connection under WithTimeout is the refusal, not a cancellation",
			serve: func(t *testing.T, _ bool) hostileEnv {
				return hostileEnv{base: "http://" + refusedAddr(t), opts: []Option{WithTimeout(5 * time.Second)}, hits: func() int64 { return 0 }}
			},
			call: hostileMusic,
			want: outcome{is: []error{syscall.ECONNREFUSED}, attempts: 3, extra: func(t *testing.T, err error) {
				assert.NotErrorIs(t, err, context.Canceled)
				assert.NotContains(t, err.Error(), "context canceled")
			}},
			alloc: 4 * mib, within: time.Second,
		},

		// Retry-After.
		{
			name:  "a 429 asking to wait 99999999999999999999 seconds",
			serve: httpCase(answer(429, "application/json", `{"success":false,"message":"slow down"}`, "Retry-After", "99999999999999999999")),
			call:  hostileMusic,
			want: outcome{status: 429, is: []error{ErrRateLimited}, attempts: 1, hits: 1, has: []string{"more than the 1m0s the client waits"},
				extra: func(t *testing.T, err error) {
					var apiErr *APIError
					require.ErrorAs(t, err, &apiErr)
					assert.Equal(t, time.Duration(math.MaxInt64), apiErr.RetryAfter)
				}},
			alloc: 4 * mib, clock: true, took: 0,
		},
		{
			name:  "a 503 asking to wait 30s, past the call's 2s timeout, is returned at once",
			serve: httpCase(answer(503, "application/json", `{"success":false,"message":"busy"}`, "Retry-After", "30"), WithTimeout(2*time.Second)),
			call:  hostileMusic,
			want: outcome{status: 503, is: []error{ErrServer}, attempts: 1, hits: 1, has: []string{"past the call's deadline"},
				extra: func(t *testing.T, err error) {
					var apiErr *APIError
					require.ErrorAs(t, err, &apiErr)
					assert.Equal(t, 30*time.Second, apiErr.RetryAfter)
				}},
			alloc: 4 * mib, clock: true, took: 0,
		},
		{
			name:  "a 503 asking every time to wait 0 seconds",
			serve: httpCase(answer(503, "application/json", `{"success":false,"message":"busy"}`, "Retry-After", "0"), WithTimeout(5*time.Second)),
			call:  hostileMusic,
			want:  outcome{status: 503, is: []error{ErrServer}, attempts: 3, hits: 3, has: []string{"after 3 attempts: busy"}},
			alloc: 4 * mib, within: time.Second,
		},
		{
			name: "a 429 asking to wait 0 seconds, then a caller that gives up waiting for the rate limit",
			serve: httpCase(func(<-chan struct{}) http.HandlerFunc {
				var n int
				var mu sync.Mutex
				return func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					n++
					first := n%2 == 1
					mu.Unlock()
					if first {
						answer(429, "application/json", `{"success":false,"message":"slow down"}`, "Retry-After", "0")(nil)(w, r)
						return
					}
					replyJSON(200, envelopeOf(`"https://files.example/a.wav"`))(w, r)
				}
			}, WithRateLimiter(rate.NewLimiter(5, 1)), WithMaxRetries(0)),
			call: func(ctx context.Context, c *Client, base string) error {
				if err := hostileMusic(ctx, c, base); !errors.Is(err, ErrRateLimited) {
					return fmt.Errorf("the first call: want the 429, got %v", err)
				}
				short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
				defer cancel()
				if err := hostileMusic(short, c, base); err == nil {
					return errors.New("the impatient call: want an error, got none")
				}
				long, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				return hostileMusic(long, c, base)
			},
			want:  outcome{ok: true, hits: 2},
			alloc: 4 * mib, clock: true, took: 200 * time.Millisecond, // the next token of 5 a second
		},
	}, badURLCases()...)
}

func TestHostileServers(t *testing.T) {
	for _, hc := range hostileCases() {
		t.Run(hc.name, func(t *testing.T) {
			bubbleIf(t, hc.clock, func(t *testing.T) { runHostile(t, hc) })
		})
	}
}

func runHostile(t *testing.T, hc hostileCase) {
	env := hc.serve(t, hc.clock)
	bestAlloc, bestTook := uint64(math.MaxUint64), time.Duration(math.MaxInt64)
	for run := 0; run < 3; run++ {
		c := newTestClient(t, env.base, env.opts...)
		ctx, cancel := context.WithTimeout(context.Background(), safety)
		hits := env.hits()
		a0, start := heapAllocs(), time.Now()
		var err error
		require.NotPanics(t, func() { err = hc.call(ctx, c, env.base) })
		took, alloc := time.Since(start), heapAllocs()-a0
		cancel()
		c.CloseIdleConnections()
		if run == 0 {
			hc.want.check(t, err, env.hits()-hits)
		}
		if hc.clock {
			assert.Equal(t, hc.took, took, "time the call took on the bubble's clock, run %d", run+1)
		}
		bestAlloc, bestTook = min(bestAlloc, alloc), min(bestTook, took)
		if bestAlloc <= hc.alloc && (hc.clock || bestTook <= hc.within && took >= hc.atLeast) {
			break
		}
	}
	t.Logf("allocated %.1f MiB, took %v", float64(bestAlloc)/mib, bestTook.Round(time.Millisecond))
	assert.LessOrEqual(t, bestAlloc, hc.alloc, "heap allocated by the call")
	if !hc.clock {
		assert.LessOrEqual(t, bestTook, hc.within, "time the call took")
		assert.GreaterOrEqual(t, bestTook, hc.atLeast, "time the call took")
	}
}

func (o outcome) check(t *testing.T, err error, hits int64) {
	t.Helper()
	if o.hits != 0 || o.noHits {
		assert.Equal(t, o.hits, hits, "requests (or connections) the server saw")
	}
	if o.ok {
		assert.NoError(t, err)
		return
	}
	require.Error(t, err)
	t.Logf("error: %.300s", err.Error())
	attempts := 0
	var (
		apiErr *APIError
		netErr *NetworkError
	)
	switch {
	case o.plain:
	case o.status != 0:
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, o.status, apiErr.StatusCode)
		attempts = apiErr.Attempts
	default:
		require.ErrorAs(t, err, &netErr)
		attempts = netErr.Attempts
	}
	if o.attempts != 0 {
		assert.Equal(t, o.attempts, attempts, "attempts")
	}
	for _, target := range o.is {
		assert.ErrorIs(t, err, target)
	}
	for _, s := range o.has {
		assert.Contains(t, err.Error(), s)
	}
	if o.extra != nil {
		o.extra(t, err)
	}
}

// net/http quotes a malformed status line, header line or Content-Length
// whole in its error, up to the headers' 1 MiB: the call's error, its log
// line and its trace tell it redacted and bounded, and the error keeps
// its kind.
func TestMalformedAnswerErrorsAreBounded(t *testing.T) {
	long := testKey + strings.Repeat("x", 500<<10)
	for _, tc := range []struct {
		name, raw string
		is        error
	}{
		{"a status line's reason", "HTTP/1.1 200 " + long + "\r\n\r\n", ErrUnexpectedResponse},
		{"no status line", long + "\r\n\r\n", ErrOutcomeUnknown},
		{"a header line", "HTTP/1.1 200 OK\r\n" + long + "\r\n\r\n", ErrOutcomeUnknown},
		{"a Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 1" + strings.Repeat("9", 500<<10) + testKey + "\r\n\r\n", ErrOutcomeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRawServer(t, func(conn net.Conn, done <-chan struct{}) {
				if readRequest(bufio.NewReader(conn)) == nil {
					_, _ = io.WriteString(conn, tc.raw)
				}
			})
			var told []string
			logs := &logCapture{}
			c := newTestClient(t, "http://"+srv.addr(), WithLogger(slog.New(logs)), WithCallTrace(&CallTrace{
				AttemptDone: func(_ context.Context, a AttemptInfo) {
					if a.Err != nil {
						told = append(told, a.Err.Error())
					}
				},
			}))
			_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
			require.ErrorIs(t, err, tc.is)
			require.LessOrEqual(t, len(err.Error()), 2<<10, "%.300s", err)
			require.Empty(t, leak(err.Error(), testKey))
			for _, text := range append(told, logs.lines...) {
				require.LessOrEqual(t, len(text), 2<<10, "%.300s", text)
				require.Empty(t, leak(text, testKey))
			}
		})
	}
}
