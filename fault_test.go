package creative

// The fault matrix: every endpoint (and Download) against each fault, with
// the outcome this SDK promises. It is the truth the README's Reliability
// section quotes.
//
//	fault                                   outcome                                    attempts
//	connection refused                      *NetworkError wrapping ECONNREFUSED        3 (retried: not sent)
//	reset after the request arrived         *NetworkError, ErrOutcomeUnknown           1 (the work may be done)
//	closed after the headers of a 200       *NetworkError, ErrOutcomeUnknown           1 (the work may be done)
//	a body shorter than its Content-Length  *NetworkError, ErrOutcomeUnknown           1 (the work may be done)
//	500                                     *APIError, ErrServer, ErrOutcomeUnknown    1 (the work may be done)
//	502 with an HTML body                   *APIError, ErrServer, says "text/html"     1 (the work may be done)
//	503 with Retry-After: 1, then success   the result, after waiting the second       2
//	429 with Retry-After as a date, then ok the result, after waiting until then       2
//	the 400 envelope                        *APIError, ErrInvalidRequest, the message  1
//	200 with success:false                  *APIError with the message                 1
//	200 that is not JSON                    *APIError, ErrUnexpectedResponse           1
//	200 JSON without data                   *APIError, ErrUnexpectedResponse           1
//	a stall beyond the call's timeout       *NetworkError wrapping DeadlineExceeded,   1
//	                                        ErrOutcomeUnknown
//	a 307 to another host                   not followed (a Download: the file from    1
//	                                        there, without the key)
//
// Download takes any 2xx body as the file: a 200 that is not JSON, or
// without data, or with success:false, is a success for it. A Download costs
// nothing to repeat: its reset and its 5xx are retried, and its errors
// never match ErrOutcomeUnknown. Speech streams:
// a body cut short fails while it is read.
//
// The faults that wait (the two Retry-After and the stall) run in a
// synctest bubble, their servers in memory, and take exactly the time they
// should on the bubble's clock; the others need what only a real socket
// does (a refused port, a reset) and run on 127.0.0.1.

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/creativegen/creative-go/ids"
)

// fmEndpoint is one endpoint of the matrix: how to call it, and what a
// success looks like on the wire.
type fmEndpoint struct {
	name  string
	call  func(ctx context.Context, c *Client, base string) error
	ctype string // the success answer's content type
	body  string // the success answer
	raw   bool   // the answer is not an envelope (speech, download)
}

func fmEndpoints() []fmEndpoint {
	urlOK := `{"success":true,"message":"ok","data":"http://127.0.0.1/f.wav"}`
	imgOK := `{"success":true,"message":"ok","data":{"base64":"` + pngB64 + `"}}`
	png := FileFromBytes("a.png", pngBytes)
	wav := FileFromBytes("a.wav", wavBytes)
	ret := func(_ any, err error) error { return err }
	return []fmEndpoint{
		{"writer-tool", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.CoverLetter(ctx, CoverLetterRequest{JobRole: "r", JobSkills: "s", Language: "en", Tone: "t"}))
		}, "application/json", `{"success":true,"message":"ok","data":{"language":"en","useCase":"CoverLetter","word_count":1,"text":{"choices":[{"text":"Hi","index":0,"word_count":1}]}}}`, false},
		{"text-to-music", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"}))
		}, "application/json", urlOK, false},
		{"text-to-speech", func(ctx context.Context, c *Client, _ string) error {
			a, err := c.TextToSpeech(ctx, TextToSpeechRequest{Prompt: "p", VoiceID: ids.VoiceFemale1})
			if err != nil {
				return err
			}
			defer a.Close()
			_, err = io.Copy(io.Discard, a)
			return err
		}, "audio/mpeg", "ID3-audio-bytes", true},
		{"enhance", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.EnhanceAudio(ctx, EnhanceAudioRequest{Audio: wav, TypeID: ids.EnhancePodcast}))
		}, "application/json", urlOK, false},
		{"split-audio", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.SplitAudio(ctx, SplitAudioRequest{Audio: wav}))
		}, "application/json", `{"success":true,"message":"ok","data":["http://127.0.0.1/1.wav","http://127.0.0.1/2.wav"]}`, false},
		{"text-to-image", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.TextToImage(ctx, TextToImageRequest{Prompt: "p", NumberOfResults: 1}))
		}, "application/json", `{"success":true,"message":"ok","data":[{"base64":"` + pngB64 + `"}]}`, false},
		{"generate-logo", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.GenerateLogo(ctx, GenerateLogoRequest{Prompt: "p"}))
		}, "application/json", imgOK, false},
		{"generate-qr", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.GenerateQR(ctx, GenerateQRRequest{URL: "https://e.example", Prompt: "p"}))
		}, "application/json", imgOK, false},
		{"up-scale", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.UpScale(ctx, UpScaleRequest{URL: "https://e.example/a.png"}))
		}, "application/json", imgOK, false},
		{"re-imagine", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.ReImagine(ctx, ReImagineRequest{Image: png}))
		}, "application/json", imgOK, false},
		{"remove-background", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.RemoveBackground(ctx, RemoveBackgroundRequest{URL: "https://e.example/a.png"}))
		}, "application/json", imgOK, false},
		{"color-image", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.ColorImage(ctx, ColorImageRequest{URL: "https://e.example/a.png"}))
		}, "application/json", imgOK, false},
		{"image-enhance", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.EnhanceImage(ctx, EnhanceImageRequest{URL: "https://e.example/a.png"}))
		}, "application/json", imgOK, false},
		{"change-background", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.ChangeBackground(ctx, ChangeBackgroundRequest{Image: png, Prompt: "p"}))
		}, "application/json", imgOK, false},
		{"infinite-zoom", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.InfiniteZoom(ctx, InfiniteZoomRequest{Prompt: "p"}))
		}, "application/json", urlOK, false},
		{"video-remove-background", func(ctx context.Context, c *Client, _ string) error {
			return ret(c.RemoveVideoBackground(ctx, RemoveVideoBackgroundRequest{URL: "https://e.example/a.mp4"}))
		}, "application/json", urlOK, false},
		{"download", func(ctx context.Context, c *Client, base string) error {
			return ret(c.Download(ctx, URL(base+"/files/a.wav"), io.Discard))
		}, "audio/wav", "RIFF-file-bytes", true},
	}
}

// fmOutcome is what a cell must end with.
type fmOutcome struct {
	ok            bool          // the call succeeds
	attempts      int           // requests the first server saw
	status        int           // *APIError's status, 0 for a *NetworkError
	sentinel      error         // errors.Is target, if any
	unknown       bool          // the error matches ErrOutcomeUnknown
	cause         error         // errors.Is target for a *NetworkError, if any
	message       string        // part of the error text
	took          time.Duration // the call's time on the bubble's clock, for a fault that waits
	keyAbroad     bool          // the request reached the other host
	nothingAbroad bool          // no request reached the other host
}

// fmFault is one fault: how the first server answers attempt n (from 1),
// or nil to answer with success.
type fmFault struct {
	name   string
	handle func(w http.ResponseWriter, r *http.Request, n int64, other string) bool
	expect func(e fmEndpoint) fmOutcome
	refuse bool // the base URL points at a closed port
	stall  bool // the client gets a short timeout
	clock  bool // the outcome waits on a timer: the cell runs in a synctest bubble
}

func fmHijack(w http.ResponseWriter, then func(net.Conn)) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	then(conn)
	_ = conn.Close()
}

func fmFaults() []fmFault {
	always := func(status int, ctype, body string, extra ...string) func(http.ResponseWriter, *http.Request, int64, string) bool {
		return func(w http.ResponseWriter, r *http.Request, _ int64, _ string) bool {
			for i := 0; i+1 < len(extra); i += 2 {
				w.Header().Set(extra[i], extra[i+1])
			}
			w.Header().Set("Content-Type", ctype)
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
			return true
		}
	}
	raw2xxOK := func(e fmEndpoint, o fmOutcome) fmOutcome {
		if e.name == "download" {
			return fmOutcome{ok: true, attempts: 1}
		}
		return o
	}
	// mayBeDone is the outcome of a failure after the request arrived: not
	// sent again, except a Download, which costs nothing to repeat.
	mayBeDone := func(e fmEndpoint, o fmOutcome) fmOutcome {
		if e.name == "download" {
			o.attempts, o.message = 3, "3 attempts"
			return o
		}
		o.unknown = true
		return o
	}
	return []fmFault{
		{name: "connection refused", refuse: true,
			expect: func(fmEndpoint) fmOutcome {
				return fmOutcome{attempts: 3, cause: syscall.ECONNREFUSED, message: "3 attempts"}
			}},
		{name: "reset after the request arrived",
			handle: func(w http.ResponseWriter, r *http.Request, _ int64, _ string) bool {
				_, _ = io.Copy(io.Discard, r.Body)
				fmHijack(w, func(c net.Conn) { _ = c.(*net.TCPConn).SetLinger(0) })
				return true
			},
			expect: func(e fmEndpoint) fmOutcome {
				return mayBeDone(e, fmOutcome{attempts: 1, cause: syscall.ECONNRESET, message: "the service may have done the work"})
			}},
		{name: "closed after the headers",
			handle: func(w http.ResponseWriter, r *http.Request, _ int64, _ string) bool {
				_, _ = io.Copy(io.Discard, r.Body)
				fmHijack(w, func(c net.Conn) {
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n")
				})
				return true
			},
			expect: func(e fmEndpoint) fmOutcome {
				return fmOutcome{attempts: 1, cause: io.ErrUnexpectedEOF, unknown: e.name != "download"}
			}},
		{name: "a body shorter than its Content-Length",
			handle: func(w http.ResponseWriter, r *http.Request, _ int64, _ string) bool {
				_, _ = io.Copy(io.Discard, r.Body)
				fmHijack(w, func(c net.Conn) {
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"success\":true,\"data\":")
				})
				return true
			},
			expect: func(e fmEndpoint) fmOutcome {
				return fmOutcome{attempts: 1, cause: io.ErrUnexpectedEOF, unknown: e.name != "download"}
			}},
		{name: "500", handle: always(500, "application/json", `{"success":false,"message":"internal"}`),
			expect: func(e fmEndpoint) fmOutcome {
				if e.name == "download" {
					return fmOutcome{attempts: 3, status: 500, sentinel: ErrServer, message: "HTTP 500 after 3 attempts: internal"}
				}
				return mayBeDone(e, fmOutcome{attempts: 1, status: 500, sentinel: ErrServer, message: "HTTP 500: internal (outcome unknown"})
			}},
		{name: "502 with an HTML body", handle: always(502, "text/html", "<html><body>Bad Gateway</body></html>"),
			expect: func(e fmEndpoint) fmOutcome {
				return mayBeDone(e, fmOutcome{attempts: 1, status: 502, sentinel: ErrServer, message: "body is not the JSON envelope (text/html)"})
			}},
		{name: "503 with Retry-After 1, then success", clock: true,
			handle: func(w http.ResponseWriter, r *http.Request, n int64, _ string) bool {
				if n > 1 {
					return false
				}
				return always(503, "application/json", `{"success":false,"message":"busy"}`, "Retry-After", "1")(w, r, n, "")
			},
			expect: func(fmEndpoint) fmOutcome { return fmOutcome{ok: true, attempts: 2, took: time.Second} }},
		{name: "429 with Retry-After as a date, then success", clock: true,
			handle: func(w http.ResponseWriter, r *http.Request, n int64, _ string) bool {
				if n > 1 {
					return false
				}
				// The bubble's clock starts on a whole second, which the
				// date's format keeps: it is a second away to the
				// nanosecond.
				at := time.Now().Add(time.Second).UTC().Format(http.TimeFormat)
				return always(429, "application/json", `{"success":false,"message":"slow down"}`, "Retry-After", at)(w, r, n, "")
			},
			expect: func(fmEndpoint) fmOutcome { return fmOutcome{ok: true, attempts: 2, took: time.Second} }},
		{name: "the 400 envelope", handle: always(400, "application/json", `{"success":false,"message":"prompt: too long"}`),
			expect: func(fmEndpoint) fmOutcome {
				return fmOutcome{attempts: 1, status: 400, sentinel: ErrInvalidRequest, message: "HTTP 400: prompt: too long"}
			}},
		{name: "200 with success false", handle: always(200, "application/json", `{"success":false,"message":"quota used up"}`),
			expect: func(fmEndpoint) fmOutcome {
				// A download too: the service's error envelope is never the file.
				return fmOutcome{attempts: 1, status: 200, message: "quota used up"}
			}},
		{name: "200 that is not JSON", handle: always(200, "text/html", "<html>maintenance</html>"),
			expect: func(e fmEndpoint) fmOutcome {
				return raw2xxOK(e, fmOutcome{attempts: 1, status: 200, sentinel: ErrUnexpectedResponse, message: "maintenance"})
			}},
		{name: "200 JSON without data", handle: always(200, "application/json", `{"success":true,"message":"ok"}`),
			expect: func(e fmEndpoint) fmOutcome {
				return raw2xxOK(e, fmOutcome{attempts: 1, status: 200, sentinel: ErrUnexpectedResponse, message: "carries no data"})
			}},
		{name: "a stall beyond the timeout", stall: true, clock: true,
			handle: func(w http.ResponseWriter, r *http.Request, _ int64, _ string) bool {
				// Read the request first: the server notices the client
				// leaving (and ends the context) only after that.
				_, _ = io.Copy(io.Discard, r.Body)
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
				return true
			},
			expect: func(e fmEndpoint) fmOutcome {
				return fmOutcome{attempts: 1, cause: context.DeadlineExceeded, unknown: e.name != "download", took: 300 * time.Millisecond}
			}},
		{name: "a 307 to another host",
			handle: func(w http.ResponseWriter, r *http.Request, _ int64, other string) bool {
				http.Redirect(w, r, other+r.URL.Path, http.StatusTemporaryRedirect)
				return true
			},
			expect: func(e fmEndpoint) fmOutcome {
				if e.name == "download" { // a file host's redirect is followed
					return fmOutcome{ok: true, attempts: 1, keyAbroad: true}
				}
				return fmOutcome{attempts: 1, status: http.StatusTemporaryRedirect, sentinel: ErrUnexpectedResponse, message: "stays with the base URL's origin", nothingAbroad: true}
			}},
	}
}

// fmBodies counts response bodies opened and closed.
type fmBodies struct {
	rt             http.RoundTripper
	opened, closed atomic.Int64
}

func (b *fmBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(r)
	if resp != nil {
		b.opened.Add(1)
		resp.Body = &fmBody{ReadCloser: resp.Body, b: b}
	}
	return resp, err
}

type fmBody struct {
	io.ReadCloser
	b    *fmBodies
	once sync.Once
}

func (f *fmBody) Close() error {
	f.once.Do(func() { f.b.closed.Add(1) })
	return f.ReadCloser.Close()
}

func TestFaultMatrix(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cells := 0
	t.Run("cells", func(t *testing.T) {
		// Cells run 32 at a time from goroutines (t.Run is safe for that),
		// so the Retry-After waits overlap whatever -parallel is.
		var wg sync.WaitGroup
		slots := make(chan struct{}, 32)
		for _, f := range fmFaults() {
			for _, e := range fmEndpoints() {
				cells++
				wg.Add(1)
				slots <- struct{}{}
				go func() {
					defer func() { <-slots; wg.Done() }()
					t.Run(f.name+"/"+e.name, func(t *testing.T) {
						bubbleIf(t, f.clock, func(t *testing.T) { fmCell(t, f, e) })
					})
				}()
			}
		}
		wg.Wait()
	})
	assert.Equal(t, 14*17, cells)
}

func fmCell(t *testing.T, f fmFault, e fmEndpoint) {
	success := func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", e.ctype)
		_, _ = io.WriteString(w, e.body)
	}
	var abroadKeys []string
	var abroadMu sync.Mutex
	other := startTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		abroadMu.Lock()
		abroadKeys = append(abroadKeys, r.Header.Get("x-access-key"))
		abroadMu.Unlock()
		success(w, r)
	}, f.clock)
	_, port, _ := net.SplitHostPort(other.Listener.Addr().String())
	otherURL := "http://localhost:" + port

	home := startTestServer(t, nil, f.clock)
	home.handler = func(w http.ResponseWriter, r *http.Request) {
		if f.handle != nil && f.handle(w, r, home.hits.Load(), otherURL) {
			return
		}
		success(w, r)
	}
	base := home.URL
	if f.refuse {
		base = "http://" + refusedAddr(t)
	}
	// The server's own client reaches it on 127.0.0.1 or in memory; on
	// 127.0.0.1 it reaches the other host too.
	hc := home.Client()
	bodies := &fmBodies{rt: hc.Transport}
	opts := []Option{WithHTTPClient(&http.Client{Transport: bodies})}
	if f.stall {
		opts = append(opts, WithTimeout(300*time.Millisecond))
	}
	c := newTestClient(t, base, opts...)
	want := f.expect(e)

	start := time.Now()
	var err error
	require.NotPanics(t, func() { err = e.call(context.Background(), c, base) })
	elapsed := time.Since(start)
	hc.CloseIdleConnections()

	if want.ok {
		require.NoError(t, err)
	} else {
		require.Error(t, err)
		assert.NotContains(t, err.Error(), testKey)
		if want.status != 0 {
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, want.status, apiErr.StatusCode)
			if e.name != "download" || want.status >= 300 {
				assert.Equal(t, want.attempts, apiErr.Attempts)
			}
		} else if e.name != "text-to-speech" || !errors.Is(want.cause, io.ErrUnexpectedEOF) {
			var netErr *NetworkError
			require.ErrorAs(t, err, &netErr, "%v", err)
			assert.Equal(t, want.attempts, netErr.Attempts)
		}
		if want.sentinel != nil {
			assert.ErrorIs(t, err, want.sentinel)
		}
		switch {
		case want.unknown:
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			assert.NotErrorIs(t, err, ErrNotSent)
		default:
			assert.NotErrorIs(t, err, ErrOutcomeUnknown)
		}
		if want.cause != nil {
			assert.ErrorIs(t, err, want.cause)
		}
		if want.message != "" {
			assert.Contains(t, err.Error(), want.message)
		}
	}
	if !f.refuse {
		assert.Equal(t, int64(want.attempts), home.hits.Load(), "requests sent")
	}
	if f.clock {
		assert.Equal(t, want.took, elapsed, "the time the call took on the bubble's clock")
	}
	if want.keyAbroad {
		assert.Equal(t, []string{""}, abroadKeys, "the key never reaches another host")
	}
	if want.nothingAbroad {
		assert.Empty(t, abroadKeys, "a call is not redirected to another host")
	}
	assert.Equal(t, bodies.opened.Load(), bodies.closed.Load(), "every response body is closed")
}

// A one-shot upload is not retried after its bytes went out, in the matrix's
// terms: a 503 answer after the body was read.
func TestFaultMatrixOneShotUpload(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
	})
	c := newTestClient(t, ts.URL)
	_, err := c.EnhanceAudio(context.Background(), EnhanceAudioRequest{Audio: FileFromReader("a.wav", oneShot{strings.NewReader(string(wavBytes))}), TypeID: ids.EnhancePodcast})
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 1, apiErr.Attempts)
	assert.Contains(t, err.Error(), "not retried: the upload came from a one-shot reader")
	assert.Equal(t, int64(1), ts.hits.Load())
}
