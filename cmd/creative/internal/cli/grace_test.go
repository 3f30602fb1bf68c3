//go:build unix

package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/internal/media"
)

// graceBound is how long after a signal a command with --grace 1s must
// have ended: the grace and 2 s.
const graceBound = 3 * time.Second

// hostile is a service on 127.0.0.1 whose behaviour each test sets: calls
// of text-to-music (counted, read to their end) answer with a link to
// /files/<prompt>.wav, or stall while stall is set for their prompt; the
// file drips (a few bytes every 50 ms, never ending) while drip is set,
// is answered as html while html is set, as 404 while gone is set, and
// whole otherwise.
type hostile struct {
	*httptest.Server
	wav                []byte
	calls, downloads   atomic.Int32
	stall              atomic.Pointer[string] // the prompt whose call stalls
	drip, html, gone   atomic.Bool
	arrived, streaming chan struct{}
}

func newHostile(t *testing.T) *hostile { return newHostileServing(t, media.Music("tune", 0.2)) }

// newHostileServing is newHostile serving wav as its file, set before the
// server starts so that its handlers read it without a race.
func newHostileServing(t *testing.T, wav []byte) *hostile {
	h := &hostile{wav: wav, arrived: make(chan struct{}, 8), streaming: make(chan struct{}, 8)}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			h.calls.Add(1)
			var req struct{ Prompt string }
			_ = json.Unmarshal(body, &req)
			if s := h.stall.Load(); s != nil && *s == req.Prompt {
				h.arrived <- struct{}{}
				<-r.Context().Done()
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Request-Id", "req-"+req.Prompt)
			fmt.Fprintf(w, `{"success":true,"message":"ok","data":"http://%s/files/%s.wav"}`, r.Host, req.Prompt)
			return
		}
		h.downloads.Add(1)
		switch {
		case h.gone.Load():
			http.NotFound(w, r)
		case h.html.Load():
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<!DOCTYPE html><p>maintenance</p>")
		case h.drip.Load():
			w.Header().Set("Content-Type", "audio/wav")
			_, _ = w.Write(h.wav[:64])
			w.(http.Flusher).Flush()
			h.streaming <- struct{}{}
			for i := 64; i < len(h.wav); i++ {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
				_, _ = w.Write(h.wav[i : i+1])
				w.(http.Flusher).Flush()
			}
		default:
			w.Header().Set("Content-Type", "audio/wav")
			_, _ = w.Write(h.wav)
		}
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hostile) env() map[string]string {
	return map[string]string{"CREATIVE_BASE_URL": h.URL, "CREATIVE_ACCESS_KEY": cliKey}
}

// sigterm sends SIGTERM to cmd and returns its exit status and the time
// it took to end after the signal.
func sigterm(t *testing.T, cmd *exec.Cmd) (int, time.Duration) {
	t.Helper()
	sent := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	code := waitExit(t, cmd)
	return code, time.Since(sent)
}

func TestASingleCommandEndsWithinItsGraceAfterSIGTERM(t *testing.T) {
	bin := buildCLI(t)

	t.Run("a stalled call is abandoned and said to be maybe paid", func(t *testing.T) {
		h := newHostile(t)
		stall := "stall"
		h.stall.Store(&stall)
		out := t.TempDir()
		cmd, stderr := startCLI(t, bin, h.env(), "--grace", "1s", "audio", "text-to-music", "--prompt", "stall", "--out", out)
		waitFor(t, h.arrived, "the call to arrive")
		code, took := sigterm(t, cmd)
		t.Logf("stalled call: SIGTERM to exit %v, status %d", took, code)
		assert.Equal(t, exitInterrupt, code, stderr.String())
		assert.Less(t, took, graceBound)
		assert.Contains(t, stderr.String(), "may have done it and charged for it")
		assert.True(t, strings.HasSuffix(stderr.String(), "creative: interrupted\n"), stderr.String())
		assert.Empty(t, answerDirNames(t, out))
	})

	t.Run("a dripping download is abandoned, its link kept, and creative fetch gets it without paying", func(t *testing.T) {
		h := newHostile(t)
		h.drip.Store(true)
		out := t.TempDir()
		cmd, stderr := startCLI(t, bin, h.env(), "--grace", "1s", "audio", "text-to-music", "--prompt", "drip", "--out", out)
		waitFor(t, h.streaming, "the download to start")
		code, took := sigterm(t, cmd)
		t.Logf("dripping download: SIGTERM to exit %v, status %d", took, code)
		assert.Equal(t, exitInterrupt, code, stderr.String())
		assert.Less(t, took, graceBound)
		link := filepath.Join(out, "text-to-music.link.json")
		assert.Contains(t, stderr.String(), "request id req-drip")
		assert.Contains(t, stderr.String(), h.URL+"/files/drip.wav")
		assert.Contains(t, stderr.String(), "creative fetch "+link)
		assert.Equal(t, []string{"text-to-music.link.json"}, answerDirNames(t, out), "the link is kept, no temporary file is left")

		h.drip.Store(false)
		fetch, ferr := startCLI(t, bin, h.env(), "fetch", link)
		require.Equal(t, 0, waitExit(t, fetch), ferr.String())
		assert.Equal(t, int32(1), h.calls.Load(), "the fetch paid for nothing")
		assert.Equal(t, string(h.wav), readFile(t, filepath.Join(out, "text-to-music.wav")))
		assert.Equal(t, []string{"text-to-music.wav"}, answerDirNames(t, out), "the link file is removed once the file is saved")
	})

	t.Run("a speech stream cut off is said to be paid", func(t *testing.T) {
		streaming := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "audio/mpeg")
			w.Header().Set("X-Request-Id", "req-speech")
			_, _ = w.Write([]byte("ID3\x04\x00\x00\x00\x00\x00\x00 the first bytes of speech"))
			w.(http.Flusher).Flush()
			close(streaming)
			<-r.Context().Done()
		}))
		defer srv.Close()
		out := t.TempDir()
		cmd, stderr := startCLI(t, bin, map[string]string{"CREATIVE_BASE_URL": srv.URL, "CREATIVE_ACCESS_KEY": cliKey},
			"--grace", "1s", "audio", "text-to-speech", "--prompt", "hi", "--voice-id", "female-1", "--out", out)
		waitFor(t, streaming, "the speech to stream")
		code, took := sigterm(t, cmd)
		t.Logf("speech stream: SIGTERM to exit %v, status %d", took, code)
		assert.Equal(t, exitInterrupt, code, stderr.String())
		assert.Less(t, took, graceBound)
		assert.Contains(t, stderr.String(), "answered (request id req-speech) and paid for")
		assert.Empty(t, answerDirNames(t, out), "no temporary file is left")
	})

	t.Run("a second signal ends the command at once", func(t *testing.T) {
		h := newHostile(t)
		stall := "stall"
		h.stall.Store(&stall)
		cmd := exec.Command(bin, "--grace", "1m", "audio", "text-to-music", "--prompt", "stall", "--out", t.TempDir())
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CREATIVE_BASE_URL=" + h.URL, "CREATIVE_ACCESS_KEY=" + cliKey}
		stderr := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = io.Discard, stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		waitFor(t, h.arrived, "the call to arrive")
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "gets up to 1m0s") }, 10*time.Second, 10*time.Millisecond)
		code, took := sigterm(t, cmd)
		t.Logf("second signal: to exit %v, status %d", took, code)
		assert.Equal(t, exitAtOnce, code, stderr.String())
		assert.Less(t, took, graceBound)
	})
}

func TestAPaidLinkThatCannotBeFetchedIsKeptForCreativeFetch(t *testing.T) {
	bin := buildCLI(t)
	for _, tc := range []struct {
		name  string
		set   func(h *hostile)
		args  []string
		says  string
		unset func(h *hostile)
	}{
		{"the file host answers text/html", func(h *hostile) { h.html.Store(true) }, nil, "not audio", func(h *hostile) { h.html.Store(false) }},
		{"the file drips past --timeout", func(h *hostile) { h.drip.Store(true) }, []string{"--timeout", "2s"}, "deadline exceeded", func(h *hostile) { h.drip.Store(false) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostile(t)
			tc.set(h)
			out := t.TempDir()
			go func() { // the drip's announcements, unread here
				for range h.streaming {
				}
			}()
			args := append(append([]string{}, tc.args...), "audio", "text-to-music", "--prompt", "p", "--out", out)
			cmd, stderr := startCLI(t, bin, h.env(), args...)
			code := waitExit(t, cmd)
			assert.Equal(t, exitKept, code, stderr.String())
			link := filepath.Join(out, "text-to-music.link.json")
			assert.Contains(t, stderr.String(), tc.says)
			assert.Contains(t, stderr.String(), h.URL+"/files/p.wav")
			assert.Contains(t, stderr.String(), "request id req-p")
			assert.Contains(t, stderr.String(), "creative fetch "+link)
			var lf linkRecord
			require.NoError(t, json.Unmarshal([]byte(readFile(t, link)), &lf))
			assert.Equal(t, []string{h.URL + "/files/p.wav"}, lf.Links)
			assert.Equal(t, "req-p", lf.RequestID)

			// Expired first: said plainly, nothing paid.
			tc.unset(h)
			h.gone.Store(true)
			fetch, ferr := startCLI(t, bin, h.env(), "fetch", link)
			assert.Equal(t, exitAPI, waitExit(t, fetch))
			assert.Contains(t, ferr.String(), "the link has expired (the file host answered HTTP 404)")
			// Then served: fetched without a paid request.
			h.gone.Store(false)
			fetch, ferr = startCLI(t, bin, h.env(), "fetch", link)
			require.Equal(t, 0, waitExit(t, fetch), ferr.String())
			assert.Equal(t, int32(1), h.calls.Load(), "one call was paid, by the command; the fetches paid none")
			assert.Equal(t, string(h.wav), readFile(t, filepath.Join(out, "text-to-music.wav")))
			assert.NoFileExists(t, link)
		})
	}
}

func TestABatchEndsWithinItsGraceAndTheRerunPaysNothingTwice(t *testing.T) {
	bin := buildCLI(t)
	h := newHostile(t)
	stall := "stall"
	h.stall.Store(&stall)
	h.drip.Store(true)
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(`{"op":"audio/text-to-music","prompt":"stall","id":"stall"}`+"\n"+
		`{"op":"audio/text-to-music","prompt":"drip","id":"drip"}`+"\n"), 0o644))
	out := filepath.Join(dir, "out")
	cmd, stderr := startCLI(t, bin, h.env(), "--grace", "1s", "batch", jobs, "--out", out, "--concurrency", "2")
	waitFor(t, h.arrived, "the stalled call to arrive")
	waitFor(t, h.streaming, "the download to start")
	code, took := sigterm(t, cmd)
	t.Logf("batch: SIGTERM to exit %v, status %d", took, code)
	assert.Equal(t, exitInterrupt, code, stderr.String())
	assert.Less(t, took, graceBound)
	assert.Contains(t, stderr.String(), "1 call in flight was abandoned: maybe paid, see creative batch status; a rerun with --resend-unknown sends it again")
	assert.Contains(t, stderr.String(), "1 download left: a rerun fetches it without paying")
	states := map[string]batch.State{}
	for _, r := range readResults(t, out) {
		states[r.ID] = r.State
	}
	assert.Equal(t, map[string]batch.State{"stall": batch.Unknown, "drip": batch.Answered}, states)
	noTempFiles(t, out)
	require.Equal(t, int32(2), h.calls.Load())

	h.stall.Store(nil)
	h.drip.Store(false)
	rerun, rerr := startCLI(t, bin, h.env(), "batch", jobs, "--out", out)
	assert.Equal(t, exitAPI, waitExit(t, rerun), "the maybe-paid job is left: %s", rerr.String())
	assert.Equal(t, int32(2), h.calls.Load(), "the rerun paid for nothing")
	assert.Equal(t, string(h.wav), readFile(t, filepath.Join(out, "drip-text-to-music.wav")), "the waiting download was fetched")
	assert.Contains(t, rerr.String(), "1 unknown")
}

func TestAJobsFileThatCouldBlockIsRefusedAtOnce(t *testing.T) {
	bin := buildCLI(t)
	h := newHostile(t)

	t.Run("a FIFO", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "jobs.jsonl")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		start := time.Now()
		cmd, stderr := startCLI(t, bin, h.env(), "batch", fifo, "--out", t.TempDir())
		code := waitExit(t, cmd)
		t.Logf("FIFO jobs file: refused in %v, status %d", time.Since(start), code)
		assert.Equal(t, exitUsage, code, stderr.String())
		assert.Contains(t, stderr.String(), "is a FIFO")
		assert.Less(t, time.Since(start), 10*time.Second)
		assert.Zero(t, h.calls.Load())
	})

	t.Run("a FIFO as the price list or the link file", func(t *testing.T) {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "prices.txt")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		jobs := filepath.Join(dir, "jobs.jsonl")
		require.NoError(t, os.WriteFile(jobs, []byte(`{"op":"audio/text-to-music","prompt":"p"}`+"\n"), 0o644))
		for _, args := range [][]string{
			{"batch", jobs, "--out", t.TempDir(), "--max-spend", "1", "--prices", fifo},
			{"fetch", fifo},
		} {
			start := time.Now()
			cmd, stderr := startCLI(t, bin, h.env(), args...)
			code := waitExit(t, cmd)
			assert.Equal(t, exitUsage, code, stderr.String())
			assert.Contains(t, stderr.String(), "is a FIFO")
			assert.Less(t, time.Since(start), 10*time.Second)
		}
		assert.Zero(t, h.calls.Load())
	})

	t.Run("standard input with no writer ends at SIGTERM", func(t *testing.T) {
		pr, pw, err := os.Pipe()
		require.NoError(t, err)
		defer pw.Close() // held open: the reader waits
		cmd := exec.Command(bin, "batch", "-", "--out", t.TempDir())
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CREATIVE_BASE_URL=" + h.URL, "CREATIVE_ACCESS_KEY=" + cliKey}
		var stderr bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = pr, io.Discard, &stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		pr.Close()
		time.Sleep(500 * time.Millisecond) // a real process, reading: no earlier signal is meant
		code, took := sigterm(t, cmd)
		t.Logf("jobs from a pipe with no writer: SIGTERM to exit %v, status %d", took, code)
		assert.Equal(t, exitInterrupt, code, stderr.String())
		assert.Less(t, took, 2*time.Second)
		assert.Zero(t, h.calls.Load())
	})

	t.Run("standard input is read as a stream", func(t *testing.T) {
		out := t.TempDir()
		cmd := exec.Command(bin, "batch", "-", "--out", out)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CREATIVE_BASE_URL=" + h.URL, "CREATIVE_ACCESS_KEY=" + cliKey}
		var stderr bytes.Buffer
		cmd.Stdin = strings.NewReader(`{"op":"audio/text-to-music","prompt":"in","id":"in"}` + "\n")
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		require.NoError(t, cmd.Run(), stderr.String())
		assert.Equal(t, string(h.wav), readFile(t, filepath.Join(out, "in-text-to-music.wav")))
	})
}

// lockedBuffer is a stderr a test reads while the process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
