package creative

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A hostile case is a server behaviour, the call made against it, and what
// a user must get: the typed error, and bounds on the memory the call
// allocates and the time it takes.
type hostileCase struct {
	name    string
	handler http.HandlerFunc
	opts    []Option
	call    func(ctx context.Context, c *Client) error
	check   func(t *testing.T, err error)
	maxHeap uint64        // bytes allocated by the call, at most
	maxTime time.Duration // the call returns within this
	timeout time.Duration // the call's context deadline, when set
}

// drip writes b one byte every d until the request ends.
func drip(w http.ResponseWriter, r *http.Request, b []byte, d time.Duration) {
	f := w.(http.Flusher)
	for i := 0; i < len(b); i++ {
		if _, err := w.Write(b[i : i+1]); err != nil {
			return
		}
		f.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(d):
		}
	}
}

// endless writes chunk until the request ends, at most limit bytes.
func endless(w http.ResponseWriter, r *http.Request, chunk []byte, limit int) {
	for n := 0; n < limit && r.Context().Err() == nil; n += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// hugePNG is a valid PNG header declaring w x h pixels, followed by nothing.
func hugePNG(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk := append([]byte("IHDR"), ihdr...)
	_ = binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	b.Write(chunk)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	b.Write(bytes.Repeat([]byte{0}, 400))
	return b.Bytes()
}

// askMusic is a text-to-music call that returns only its error.
func askMusic(ctx context.Context, c *Client) error { return music(ctx, c) }

func isUnexpected(want string) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		var ae *APIError
		require.ErrorAs(t, err, &ae)
		assert.ErrorIs(t, err, ErrUnexpectedResponse)
		assert.Contains(t, err.Error(), want)
	}
}

// bigMessage is a success-false envelope with a 50 MiB message, built once
// so that the server allocates little while a call is measured.
var bigMessage = []byte(`{"success":false,"message":"` + strings.Repeat("no ", 50<<20/3) + `"}`)

func hostileCases() []hostileCase {
	gzipBomb := func() []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		_, _ = zw.Write([]byte(`{"success":true,"data":"`))
		zero := make([]byte, 1<<20)
		for range 256 { // 256 MiB of spaces... of zeros inside a string
			_, _ = zw.Write(zero)
		}
		_ = zw.Close()
		return b.Bytes()
	}()
	return []hostileCase{
		{
			name: "a gzip bomb past the cap",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Encoding", "gzip")
				_, _ = w.Write(gzipBomb)
			},
			opts:    []Option{WithMaxResponseBytes(1 << 20)},
			call:    askMusic,
			check:   isUnexpected("more than the 1048576 bytes the client reads (raise it with WithMaxResponseBytes)"),
			maxHeap: 16 << 20,
			maxTime: 5 * time.Second,
		},
		{
			name: "an endless 200",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"success":true,"data":"`)
				endless(w, r, bytes.Repeat([]byte("A"), 64<<10), 1<<30)
			},
			opts:    []Option{WithMaxResponseBytes(4 << 20)},
			call:    askMusic,
			check:   isUnexpected("holds more than the 4194304 bytes"),
			maxHeap: 32 << 20,
			maxTime: 5 * time.Second,
		},
		{
			name: "a 200 that drips one byte every 100 ms, under a 300 ms deadline",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				drip(w, r, []byte(`{"success":true,"data":"https://f.example/a.wav"}`), 100*time.Millisecond)
			},
			call: askMusic,
			check: func(t *testing.T, err error) {
				var ne *NetworkError
				require.ErrorAs(t, err, &ne)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			},
			timeout: 300 * time.Millisecond,
			maxHeap: 4 << 20,
			maxTime: 2 * time.Second,
		},
		{
			name: "101 Switching Protocols",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				fmHijack(w, func(c net.Conn) {
					_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
					time.Sleep(3 * time.Second) // the other protocol says nothing
				})
			},
			call:    askMusic,
			check:   isUnexpected("an answer of HTTP 101 instead of a result"),
			timeout: 2 * time.Second,
			maxHeap: 4 << 20,
			maxTime: time.Second,
		},
		{
			name: "an error body that never ends",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.WriteHeader(http.StatusBadRequest)
				endless(w, r, bytes.Repeat([]byte("x"), 32<<10), 1<<30)
			},
			call: askMusic,
			check: func(t *testing.T, err error) {
				var ae *APIError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, 400, ae.StatusCode)
				assert.LessOrEqual(t, len(ae.Body), maxErrorBody)
				assert.Less(t, len(err.Error()), 2<<10)
			},
			maxHeap: 8 << 20,
			maxTime: 5 * time.Second,
		},
		{
			name: "a 50 MiB message in a 200 with success false",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(bigMessage)
			},
			call: askMusic,
			check: func(t *testing.T, err error) {
				var ae *APIError
				require.ErrorAs(t, err, &ae)
				assert.NotErrorIs(t, err, ErrUnexpectedResponse, "the service's own failure")
				assert.Less(t, len(err.Error()), 2<<10, "the message is bounded")
				assert.Contains(t, ae.Message, "bytes in all)")
			},
			maxHeap: 256 << 20, // the body, grown by doubling as it comes (no Content-Length); no copy of the message
			maxTime: 10 * time.Second,
		},
		{
			name:    "five images for NumberOfResults 1",
			handler: replyJSON(200, `{"success":true,"data":[`+strings.TrimSuffix(strings.Repeat(`{"base64":"`+base64.StdEncoding.EncodeToString(pngHeader(2, 2))+`"},`, 5), ",")+`]}`),
			call: func(ctx context.Context, c *Client) error {
				_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p", NumberOfResults: 1})
				return err
			},
			check:   isUnexpected("data holds more than the 1 image(s) asked for"),
			maxHeap: 1 << 20,
			maxTime: time.Second,
		},
		{
			name:    "a javascript: URL as a result",
			handler: replyJSON(200, `{"success":true,"data":"javascript:alert(1)"}`),
			call:    askMusic,
			check:   isUnexpected("not an absolute http(s) URL"),
			maxHeap: 1 << 20,
			maxTime: time.Second,
		},
		{
			name: "a JSON envelope typed as audio for speech",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "audio/mpeg")
				_, _ = io.WriteString(w, ` {"success":true,"message":"ok","data":"https://f.example/a.mp3"}`)
			},
			call: func(ctx context.Context, c *Client) error {
				a, err := c.TextToSpeech(ctx, TextToSpeechRequest{Prompt: "p", VoiceID: "52f254abbd463029dd655422"})
				if a != nil {
					a.Close()
					return errors.New("an envelope came back as audio")
				}
				return err
			},
			check:   isUnexpected("a JSON envelope where audio was promised"),
			maxHeap: 1 << 20,
			maxTime: time.Second,
		},
		{
			name: "a 302 on the POST",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				http.Redirect(w, r, "/elsewhere", http.StatusFound)
			},
			call:    askMusic,
			check:   isUnexpected("redirected (HTTP 302) to http://127.0.0.1"),
			maxHeap: 1 << 20,
			maxTime: time.Second,
		},
		{
			name: "a Retry-After beyond the integer range",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "99999999999999999999")
				replyJSON(429, `{"success":false,"message":"slow down"}`)(w, r)
			},
			call: askMusic,
			check: func(t *testing.T, err error) {
				var ae *APIError
				require.ErrorAs(t, err, &ae)
				assert.ErrorIs(t, err, ErrRateLimited)
				assert.Equal(t, 1, ae.Attempts, "too long to wait: not retried")
				assert.Greater(t, ae.RetryAfter, 100*365*24*time.Hour, "what the service asked, not absent or clamped")
			},
			maxHeap: 1 << 20,
			maxTime: time.Second,
		},
	}
}

func TestHostileAnswersGetTypedErrorsWithinBoundsOfMemoryAndTime(t *testing.T) {
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, tc.handler)
			var (
				err       error
				took      time.Duration
				allocated uint64
			)
			// Best of two: a bound on time or memory must not flake on a
			// busy machine.
			for range 2 {
				c := newTestClient(t, ts.URL, tc.opts...) // a fresh Client: no pause carried over
				ctx, cancel := context.WithCancel(context.Background())
				if tc.timeout > 0 {
					ctx, cancel = context.WithTimeout(context.Background(), tc.timeout)
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				err = tc.call(ctx, c)
				d := time.Since(start)
				runtime.ReadMemStats(&after)
				cancel()
				if a := after.TotalAlloc - before.TotalAlloc; allocated == 0 || a < allocated {
					allocated = a
				}
				if took == 0 || d < took {
					took = d
				}
			}
			require.Error(t, err)
			t.Logf("%v; allocated %.1f MiB, returned in %v", err, float64(allocated)/(1<<20), took.Round(time.Millisecond))
			tc.check(t, err)
			assert.LessOrEqual(t, allocated, tc.maxHeap, "allocated %d bytes", allocated)
			assert.LessOrEqual(t, took, tc.maxTime+tc.timeout)
			assert.NotContains(t, fmt.Sprintf("%v %+v %#v", err, err, err), testKey)
		})
	}
}

// Sixteen answers that each declare 256 MiB and send three bytes must not
// make the client allocate gigabytes: memory follows the bytes that came.
func TestLyingContentLengthsDoNotAllocateWhatTheyClaim(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fmHijack(w, func(c net.Conn) {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 268435456\r\n\r\n{\"s")
		})
	})
	c := newTestClient(t, ts.URL, WithMaxRetries(0))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range 16 {
		wg.Go(func() {
			if askMusic(context.Background(), c) != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	assert.Equal(t, int64(16), failed.Load())
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("16 answers declaring 256 MiB each: allocated %.1f MiB", float64(allocated)/(1<<20))
	assert.Less(t, allocated, uint64(upfrontBudget+64<<20), "allocated %d MiB for 48 bytes", allocated>>20)
}

func TestImageDecodeChecksThePixelBudgetFirst(t *testing.T) {
	im := Image{Data: hugePNG(100000, 100000)}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := im.Decode()
	runtime.ReadMemStats(&after)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "100000x100000 pixels, more than MaxDecodePixels")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20))
}

// A server that echoes the key everywhere it can: no error, field, header
// kept, formatted value or log line holds it, for the Client's key and a
// call's own.
func TestAnEchoedKeyIsRedactedEverywhere(t *testing.T) {
	const callKey = "call-key-7f3a9d"
	var hits atomic.Int64
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		k := r.Header.Get(headerAccessKey)
		if r.Method == http.MethodGet { // a download, which carries no key: echo the URL's
			k = r.URL.Query().Get("k")
			w.Header().Set("X-Echo", k)
			http.Error(w, "no file at "+r.URL.String(), http.StatusNotFound)
			return
		}
		w.Header().Set("X-Echo", "your key is "+k)
		w.Header().Set("X-Request-Id", "req-"+k)
		switch hits.Add(1) % 4 {
		case 1: // a redirect loop through a URL holding the key
			http.Redirect(w, r, r.URL.Path+"?key="+k+"&n="+fmt.Sprint(hits.Load()), http.StatusTemporaryRedirect)
		case 2:
			w.Header().Set("Content-Type", "text/html; charset="+k)
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html>"+strings.Repeat("x", maxErrorBody-5)+k+"</html>") // the key straddles the 64 KiB cut
		case 3:
			replyJSON(400, `{"success":false,"message":"`+strings.Repeat("y", maxMessage-4)+k+` is not allowed"}`)(w, r)
		default:
			replyJSON(200, `{"success":true,"data":"http://`+r.Host+`/`+k+`/a.wav?k=`+k+`"}`)(w, r)
		}
	})
	var logs bytes.Buffer
	c := newTestClient(t, ts.URL, WithMaxRetries(0), WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	for _, opts := range [][]Option{nil, {WithAccessKey(callKey)}} {
		for range 4 {
			u, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"}, opts...)
			if err == nil {
				_, err = c.Download(context.Background(), u, io.Discard, opts...)
			}
			if err == nil {
				continue
			}
			text := fmt.Sprintf("%v|%+v|%#v", err, err, err)
			var ae *APIError
			if errors.As(err, &ae) {
				text += ae.Message + string(ae.Body) + ae.RequestID + fmt.Sprint(ae.Header)
			}
			for _, k := range []string{testKey, callKey} {
				assert.NotContains(t, text, k)
			}
		}
	}
	for _, k := range []string{testKey, callKey} {
		assert.NotContains(t, logs.String(), k)
	}
	assert.Contains(t, logs.String(), "request_id=req-[redacted]")
	assert.Contains(t, logs.String(), "operation=download attempt=1", "the downloads reached the server")
}
