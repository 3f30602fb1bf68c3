package creative

// What a retry may cost: each row is a server behaviour, run with the
// default policy and with WithRetryMayPayAgain. The server reads each
// request's body to its end before it counts it as arrived whole, so the
// count is what the service could have charged for.
//
//	behaviour                                      default: whole, error, attempts      WithRetryMayPayAgain
//	reset after the whole request arrived          1, ErrOutcomeUnknown, 1              3, ErrOutcomeUnknown, 3
//	EOF without an answer                          1, ErrOutcomeUnknown, 1              3, ErrOutcomeUnknown, 3
//	per-attempt timeout while generating           1, ErrOutcomeUnknown, 1              3, ErrOutcomeUnknown, 3
//	500, 502, 504                                  1, ErrServer+ErrOutcomeUnknown, 1    3, same, 3
//	429 or 503 with Retry-After: 0, then 200       2, the result, 2                     the same
//	a reset in the middle of a streamed upload     1, the result, 2 (identical bytes)   the same
//	408, every time                                3, ErrRefused, 3                     the same
//	503 without Retry-After, every time            3, ErrRefused+ErrServer, 3           the same
//	a TLS handshake to a plain server              0, ErrNotSent, 1 (fails the same)    the same
//	a dial to a closed port                        0, ErrNotSent, 3                     the same

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

// payServer counts the requests that arrived whole, after reading each body
// to its end, and hands every request to its handler with its number.
type payServer struct {
	*testServer
	whole atomic.Int64
}

// arrived reads r's body to its end and counts it; it reports whether it
// arrived whole.
func (ps *payServer) arrived(r *http.Request) bool {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return false
	}
	ps.whole.Add(1)
	return true
}

// payRow is one server behaviour of the table.
type payRow struct {
	name string
	// serve answers the n-th request (from 1); nil for rows without a
	// server that answers.
	serve func(ps *payServer, n int64, w http.ResponseWriter, r *http.Request)
	// base returns the base URL when it is not the server's.
	base func(t *testing.T, ps *payServer) string
	opts []Option
	// call makes the call; the default is TextToMusic.
	call func(t *testing.T, ps *payServer, c *Client) error
	// want returns what the call must end with, with and without the
	// opt-in.
	want func(payAgain bool) payWant
	// clock: the outcome waits on a timer, so the row runs in a synctest
	// bubble, its server in memory.
	clock bool
}

type payWant struct {
	whole    int64   // requests that arrived whole
	ok       bool    // the call succeeds
	is       []error // errors.Is targets
	isNot    []error // errors.Is targets it must not match
	status   int     // an *APIError's status; 0 for a *NetworkError
	attempts int     // the error's Attempts, or the requests the server saw on success
	has      string  // part of the error's text
}

// kinds are the sentinels of the three kinds of failure.
var kinds = []error{ErrNotSent, ErrRefused, ErrOutcomeUnknown}

func exceptKinds(keep ...error) []error {
	var out []error
	for _, k := range kinds {
		if !slices.Contains(keep, k) {
			out = append(out, k)
		}
	}
	return out
}

// hangUp closes the connection of r after its body arrived: with a reset
// when rst, else with an EOF.
func hangUp(w http.ResponseWriter, rst bool) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	if rst {
		_ = conn.(*net.TCPConn).SetLinger(0)
	}
	_ = conn.Close()
}

// unknownWant is the outcome of a failure after the request arrived whole:
// one request and ErrOutcomeUnknown by default, three with the opt-in.
func unknownWant(status int, has string) func(bool) payWant {
	return func(payAgain bool) payWant {
		w := payWant{whole: 1, attempts: 1, status: status, is: []error{ErrOutcomeUnknown}, isNot: exceptKinds(ErrOutcomeUnknown),
			has: "the service may have done the work and charged for it, so it was not sent again, after 1 attempt"}
		if payAgain {
			w.whole, w.attempts = 3, 3
			w.has = "charged for it, up to 3 times, in 3 attempts with WithRetryMayPayAgain"
		}
		if status != 0 {
			w.is = append(w.is, ErrServer)
		}
		if has != "" && !payAgain {
			w.has = has
		}
		return w
	}
}

func payRows() []payRow {
	status := func(code int) func(*payServer, int64, http.ResponseWriter, *http.Request) {
		return func(ps *payServer, _ int64, w http.ResponseWriter, r *http.Request) {
			ps.arrived(r)
			replyJSON(code, `{"success":false,"message":"`+http.StatusText(code)+`"}`)(w, r)
		}
	}
	thenOK := func(code int) func(*payServer, int64, http.ResponseWriter, *http.Request) {
		return func(ps *payServer, n int64, w http.ResponseWriter, r *http.Request) {
			ps.arrived(r)
			if n == 1 {
				w.Header().Set("Retry-After", "0")
				replyJSON(code, `{"success":false,"message":"later"}`)(w, r)
				return
			}
			replyJSON(200, musicOK)(w, r)
		}
	}
	same := func(w payWant) func(bool) payWant { return func(bool) payWant { return w } }
	return []payRow{
		{name: "reset after the whole request arrived",
			serve: func(ps *payServer, _ int64, w http.ResponseWriter, r *http.Request) {
				ps.arrived(r)
				hangUp(w, true)
			},
			want: unknownWant(0, "")},
		{name: "EOF without an answer",
			serve: func(ps *payServer, _ int64, w http.ResponseWriter, r *http.Request) {
				ps.arrived(r)
				hangUp(w, false)
			},
			want: unknownWant(0, "")},
		{name: "per-attempt timeout while generating",
			serve: func(ps *payServer, _ int64, _ http.ResponseWriter, r *http.Request) {
				ps.arrived(r)
				stall(r)
			},
			opts:  []Option{WithRequestTimeout(200 * time.Millisecond)},
			want:  unknownWant(0, ""),
			clock: true},
		{name: "500", serve: status(500), want: unknownWant(500, "")},
		{name: "502", serve: status(502), want: unknownWant(502, "")},
		{name: "504", serve: status(504), want: unknownWant(504, "")},
		{name: "429 with Retry-After: 0, then 200", serve: thenOK(429), want: same(payWant{whole: 2, ok: true, attempts: 2})},
		{name: "503 with Retry-After: 0, then 200", serve: thenOK(503), want: same(payWant{whole: 2, ok: true, attempts: 2})},
		{name: "a reset in the middle of a streamed upload", serve: uploadResetOnce, call: enhanceUpload,
			want: same(payWant{whole: 1, ok: true, attempts: 2})},
		{name: "408, every time", serve: status(408),
			want: same(payWant{whole: 3, status: 408, attempts: 3, is: []error{ErrRefused}, isNot: exceptKinds(ErrRefused)})},
		{name: "503 without Retry-After, every time", serve: status(503),
			want: same(payWant{whole: 3, status: 503, attempts: 3, is: []error{ErrRefused, ErrServer}, isNot: exceptKinds(ErrRefused)})},
		{name: "a TLS handshake to a plain server",
			serve: func(ps *payServer, _ int64, w http.ResponseWriter, r *http.Request) { ps.arrived(r) },
			base:  func(_ *testing.T, ps *payServer) string { return strings.Replace(ps.URL, "http://", "https://", 1) },
			want: same(payWant{attempts: 1, is: []error{ErrNotSent}, isNot: exceptKinds(ErrNotSent),
				has: "first record does not look like a TLS handshake"})},
		{name: "a dial to a closed port",
			base: func(t *testing.T, _ *payServer) string { return "http://" + refusedAddr(t) },
			want: same(payWant{attempts: 3, is: []error{ErrNotSent, syscall.ECONNREFUSED}, isNot: exceptKinds(ErrNotSent)})},
	}
}

// uploadContent is the file the upload row sends: more than the socket
// buffers hold, so a reset reaches the client while it writes.
var uploadContent = wavOf(32 << 20)

// uploadResetOnce resets the first attempt after 256 KiB of its body, and
// checks on the second that the file arrived byte for byte.
func uploadResetOnce(ps *payServer, n int64, w http.ResponseWriter, r *http.Request) {
	if n == 1 {
		_, _ = io.CopyN(io.Discard, r.Body, 256<<10)
		hangUp(w, true)
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		replyJSON(400, `{"success":false,"message":"not multipart"}`)(w, r)
		return
	}
	var file []byte
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			replyJSON(400, `{"success":false,"message":"cut"}`)(w, r)
			return
		}
		b, err := io.ReadAll(part)
		if err != nil {
			replyJSON(400, `{"success":false,"message":"cut"}`)(w, r)
			return
		}
		if part.FormName() == "audio" {
			file = b
		}
	}
	ps.arrived(r)
	if !bytes.Equal(file, uploadContent) {
		replyJSON(400, `{"success":false,"message":"the file differs from what was sent"}`)(w, r)
		return
	}
	replyJSON(200, musicOK)(w, r)
}

func enhanceUpload(t *testing.T, _ *payServer, c *Client) error {
	path := filepath.Join(t.TempDir(), "talk.wav")
	require.NoError(t, os.WriteFile(path, uploadContent, 0o600))
	_, err := c.EnhanceAudio(context.Background(), EnhanceAudioRequest{Audio: FileFromPath(path), TypeID: ids.EnhancePodcast})
	return err
}

func TestWhatARetryMayCost(t *testing.T) {
	for _, row := range payRows() {
		for _, payAgain := range []bool{false, true} {
			name := row.name
			if payAgain {
				name += ", WithRetryMayPayAgain"
			}
			t.Run(name, func(t *testing.T) {
				bubbleIf(t, row.clock, func(t *testing.T) { payCase(t, row, payAgain) })
			})
		}
	}
}

func payCase(t *testing.T, row payRow, payAgain bool) {
	ps := &payServer{}
	ps.testServer = startTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if row.serve != nil {
			row.serve(ps, ps.hits.Load(), w, r)
		}
	}, row.clock)
	base := ps.URL
	if row.base != nil {
		base = row.base(t, ps)
	}
	opts := append(ps.dial(), row.opts...)
	if payAgain {
		opts = append(opts, WithRetryMayPayAgain())
	}
	c := newTestClient(t, base, opts...)
	var err error
	if row.call != nil {
		err = row.call(t, ps, c)
	} else {
		err = music(context.Background(), c)
	}
	want := row.want(payAgain)
	t.Logf("| %s | %v | whole %d | attempts %d | %v", row.name, payAgain, ps.whole.Load(), attemptsOf(err, ps), err)

	assert.Equal(t, want.whole, ps.whole.Load(), "requests that arrived whole")
	if want.ok {
		require.NoError(t, err)
		assert.Equal(t, int64(want.attempts), ps.hits.Load(), "requests the server saw")
		return
	}
	require.Error(t, err)
	if want.status != 0 {
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, want.status, apiErr.StatusCode)
	} else {
		var netErr *NetworkError
		require.ErrorAs(t, err, &netErr)
	}
	assert.Equal(t, want.attempts, attemptsOf(err, ps), "attempts")
	for _, target := range want.is {
		assert.ErrorIs(t, err, target)
	}
	for _, target := range want.isNot {
		assert.NotErrorIs(t, err, target)
	}
	if want.has != "" {
		assert.Contains(t, err.Error(), want.has)
	}
	assert.NotContains(t, err.Error(), testKey)
}

// attemptsOf is the Attempts of err, or on success the requests ps saw.
func attemptsOf(err error, ps *payServer) int {
	var (
		apiErr *APIError
		netErr *NetworkError
	)
	switch {
	case errors.As(err, &apiErr):
		return apiErr.Attempts
	case errors.As(err, &netErr):
		return netErr.Attempts
	}
	return int(ps.hits.Load())
}

// The attempts that failed before the request was written whole are retried
// and, in the same call, the one that may have been paid for is not: the
// error says after how many attempts.
func TestAnUnknownOutcomeAfterRefusalsSaysAfterHowManyAttempts(t *testing.T) {
	ps := &payServer{}
	ps.testServer = newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		ps.arrived(r)
		if ps.hits.Load() < 3 {
			replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
			return
		}
		replyJSON(502, `{"success":false,"message":"bad gateway"}`)(w, r)
	})
	c := newTestClient(t, ps.URL)
	err := music(context.Background(), c)
	assert.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.ErrorContains(t, err, "HTTP 502 after 3 attempts: bad gateway (outcome unknown: the service may have done the work and charged for it, so it was not sent again, after 3 attempts)")
	assert.Equal(t, int64(3), ps.whole.Load())
}

// A slow upload that the per-attempt timeout cuts before it was written
// whole was not sent: it is retried, and the retry arrives whole. In a
// synctest bubble, its server in memory: the connection has no buffer, so
// the first attempt's writes block at once, and the clock moves to the
// timeout only once every goroutine waits, never while the retry's 32 MiB
// are on their way, however slow the machine.
func TestWithRequestTimeoutRetriesAnUploadNotWrittenWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ps := &payServer{}
		release := make(chan struct{})
		ps.testServer = newMemServer(t, func(w http.ResponseWriter, r *http.Request) {
			if ps.hits.Load() == 1 {
				// Read nothing: the client's writes block until the
				// per-attempt timeout fires.
				select {
				case <-release:
				case <-time.After(10 * time.Second):
				}
				return
			}
			uploadResetOnce(ps, 2, w, r)
		})
		c := ps.client(t, WithRequestTimeout(5*time.Second))
		start := time.Now()
		err := enhanceUpload(t, ps, c)
		took := time.Since(start)
		close(release)
		require.NoError(t, err)
		assert.Equal(t, int64(1), ps.whole.Load(), "requests that arrived whole")
		assert.Equal(t, int64(2), ps.hits.Load())
		assert.GreaterOrEqual(t, took, 5*time.Second, "the first attempt ran to its timeout")
		assert.LessOrEqual(t, took, 5*time.Second+time.Millisecond, "and was retried after a backoff of at most 1 ms")
	})
}

// With the opt-in, an attempt whose outcome was unknown may have been paid
// whatever follows it: a retry that is then refused, or not sent, leaves
// the call's outcome unknown, never refused, so that nothing (a batch
// rerun, say) sends it again as if nothing had been done.
func TestAnUnknownOutcomeIsNotForgottenByARefusalAfterIt(t *testing.T) {
	ps := &payServer{}
	ps.testServer = newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		ps.arrived(r)
		if ps.hits.Load() == 1 {
			replyJSON(502, `{"success":false,"message":"bad gateway"}`)(w, r)
			return
		}
		replyJSON(503, `{"success":false,"message":"busy"}`)(w, r)
	})
	c := newTestClient(t, ps.URL, WithRetryMayPayAgain(), WithMaxRetries(1))
	err := music(context.Background(), c)
	assert.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.NotErrorIs(t, err, ErrRefused)
	assert.ErrorIs(t, err, ErrServer)
	assert.ErrorContains(t, err, "HTTP 503 after 2 attempts: busy (outcome unknown: the service may have done the work and charged for it, up to 1 time, in 2 attempts with WithRetryMayPayAgain)")
	assert.Equal(t, int64(2), ps.whole.Load())

	t.Run("then not sent", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		var hits atomic.Int64
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				if hits.Add(1) == 1 {
					// The whole request arrives, then the connection ends
					// with no answer: unknown.
					_, _ = http.ReadRequest(bufio.NewReader(conn))
				}
				_ = conn.Close()
			}
		}()
		t.Cleanup(func() { _ = ln.Close() })
		c := newTestClient(t, "http://"+ln.Addr().String(), WithRetryMayPayAgain(), WithMaxRetries(1))
		err = music(context.Background(), c)
		assert.ErrorIs(t, err, ErrOutcomeUnknown)
		assert.NotErrorIs(t, err, ErrNotSent)
	})
}
