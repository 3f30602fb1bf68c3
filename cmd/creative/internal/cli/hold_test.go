//go:build unix

package cli

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/creativegen/creative-go/internal/media"
)

// What holds a command past its grace is not always the network: these
// end the process within the grace and 2 s all the same.
func TestACommandEndsWithinItsGraceWhateverHoldsIt(t *testing.T) {
	bin := buildCLI(t)

	t.Run("a batch whose ledger another process keeps locked", func(t *testing.T) {
		h := newHostile(t)
		stall := "stall"
		h.stall.Store(&stall)
		dir := t.TempDir()
		jobs := filepath.Join(dir, "jobs.jsonl")
		require.NoError(t, os.WriteFile(jobs, []byte(`{"op":"audio/text-to-music","prompt":"stall","id":"stall"}`+"\n"), 0o644))
		out := filepath.Join(dir, "out")
		cmd, stderr := startCLI(t, bin, h.env(), "--grace", "1s", "batch", jobs, "--out", out)
		waitFor(t, h.arrived, "the call to arrive")

		// Another process (sqlite3, a backup) holds the ledger's write lock.
		db, err := sql.Open("sqlite", "file:"+filepath.Join(out, "ledger.db")+"?_pragma=busy_timeout(10000)")
		require.NoError(t, err)
		defer db.Close()
		conn, err := db.Conn(context.Background())
		require.NoError(t, err)
		defer conn.Close()
		_, err = conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE")
		require.NoError(t, err)

		code, took := sigterm(t, cmd)
		t.Logf("locked ledger: SIGTERM to exit %v, status %d", took, code)
		assert.Equal(t, exitInterrupt, code, stderr.String())
		assert.Less(t, took, graceBound)
		assert.Contains(t, stderr.String(), "ended now; a call in flight may have been paid")

		_, err = conn.ExecContext(context.Background(), "ROLLBACK")
		require.NoError(t, err)
		h.stall.Store(nil)
		rerun, rerr := startCLI(t, bin, h.env(), "batch", jobs, "--out", out)
		assert.Equal(t, exitAPI, waitExit(t, rerun), rerr.String())
		assert.Equal(t, int32(1), h.calls.Load(), "the call cut off stays maybe paid: the rerun sends nothing")
	})

	t.Run("a single command whose standard output nobody reads", func(t *testing.T) {
		h := newHostileServing(t, media.Music("long", 10)) // far more than a pipe holds
		pr, pw, err := os.Pipe()
		require.NoError(t, err)
		defer pr.Close() // open and never read: writes wait
		cmd := exec.Command(bin, "--grace", "1s", "audio", "text-to-music", "--prompt", "long", "--out", "-")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CREATIVE_BASE_URL=" + h.URL, "CREATIVE_ACCESS_KEY=" + cliKey}
		stderr := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = pw, stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		pw.Close()
		require.Eventually(t, func() bool { return h.downloads.Load() == 1 }, 20*time.Second, 10*time.Millisecond)
		time.Sleep(500 * time.Millisecond) // a real process, writing: its pipe fills
		code, took := sigterm(t, cmd)
		t.Logf("stdout not read: SIGTERM to exit %v, status %d", took, code)
		assert.Equal(t, exitInterrupt, code, stderr.String())
		assert.Less(t, took, graceBound)
		assert.Equal(t, int32(1), h.calls.Load())
	})
}

// A call the service refused with Retry-After (429, 503) was not done: while
// it waits to be sent again, nothing is in flight, and a signal ends the
// command at once, without saying that it may have been paid.
func TestASignalDuringAWaitBeforeARetryEndsAtOnce(t *testing.T) {
	bin := buildCLI(t)
	var calls atomic.Int32
	arrived := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls.Add(1)
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
		arrived <- struct{}{}
	}))
	defer srv.Close()
	cmd, stderr := startCLI(t, bin, map[string]string{"CREATIVE_BASE_URL": srv.URL, "CREATIVE_ACCESS_KEY": cliKey},
		"--grace", "10s", "audio", "text-to-music", "--prompt", "p", "--out", t.TempDir())
	waitFor(t, arrived, "the call to be refused")
	time.Sleep(500 * time.Millisecond) // a real process: it reads the answer and begins to wait
	code, took := sigterm(t, cmd)
	t.Logf("waiting to retry: SIGTERM to exit %v, status %d", took, code)
	assert.Equal(t, exitInterrupt, code, stderr.String())
	assert.Less(t, took, 5*time.Second, "the grace is for what is in flight")
	assert.NotContains(t, stderr.String(), "charged for it", "a refused call was not paid")
	assert.Equal(t, int32(1), calls.Load())
}

// Jobs from standard input are kept in a temporary file for the check and
// the run: one that no signal leaves behind, and that a stream with no
// line ends cannot grow until the disk is full.
func TestJobsFromStandardInputLeaveNoFileAndAreBounded(t *testing.T) {
	bin := buildCLI(t)
	h := newHostile(t)
	start := func(t *testing.T, tmp string) (*exec.Cmd, *lockedBuffer, *os.File) {
		pr, pw, err := os.Pipe()
		require.NoError(t, err)
		cmd := exec.Command(bin, "batch", "-", "--out", t.TempDir())
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + tmp, "CREATIVE_BASE_URL=" + h.URL, "CREATIVE_ACCESS_KEY=" + cliKey}
		stderr := &lockedBuffer{}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = pr, io.Discard, stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		pr.Close()
		return cmd, stderr, pw
	}
	tmpNames := func(t *testing.T, dir string) []string {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}

	t.Run("a signal while it reads leaves no temporary file", func(t *testing.T) {
		tmp := t.TempDir()
		cmd, stderr, pw := start(t, tmp)
		defer pw.Close()
		_, err := io.WriteString(pw, `{"op":"audio/text-to-music","prompt":"p"}`+"\n")
		require.NoError(t, err)
		time.Sleep(500 * time.Millisecond) // a real process, reading
		code, _ := sigterm(t, cmd)
		assert.Equal(t, exitInterrupt, code, stderr.String())
		assert.Empty(t, tmpNames(t, tmp))
		assert.Zero(t, h.calls.Load())
	})

	t.Run("a stream with no line ends is refused at its first 4 MiB", func(t *testing.T) {
		tmp := t.TempDir()
		cmd, stderr, pw := start(t, tmp)
		go func() { // endless, as cat /dev/zero: ends when the command stops reading
			defer pw.Close()
			zeros := make([]byte, 64<<10)
			for {
				if _, err := pw.Write(zeros); err != nil {
					return
				}
			}
		}()
		assert.Equal(t, exitUsage, waitExit(t, cmd), stderr.String())
		assert.Contains(t, stderr.String(), "line 1: longer than 4 MiB")
		assert.Empty(t, tmpNames(t, tmp))
		assert.Zero(t, h.calls.Load())
	})
}

// A fetch that a signal cuts off says what stays and how to go on, as a
// command does.
func TestAnInterruptedFetchSaysHowToGoOn(t *testing.T) {
	bin := buildCLI(t)
	h := newHostile(t)
	out := t.TempDir()
	h.gone.Store(true)
	cmd, stderr := startCLI(t, bin, h.env(), "audio", "text-to-music", "--prompt", "later", "--out", out)
	require.Equal(t, exitKept, waitExit(t, cmd), stderr.String())
	link := filepath.Join(out, "text-to-music.link.json")
	require.FileExists(t, link)

	h.gone.Store(false)
	h.drip.Store(true)
	for _, args := range [][]string{{"fetch", link}, {"fetch", h.URL + "/files/later.wav", "--op", "audio/text-to-music", "--out", out}} {
		fetch, ferr := startCLI(t, bin, h.env(), append([]string{"--grace", "1s"}, args...)...)
		waitFor(t, h.streaming, "the download to start")
		code, took := sigterm(t, fetch)
		t.Logf("%s: SIGTERM to exit %v, status %d", args, took, code)
		assert.Equal(t, exitInterrupt, code, ferr.String())
		assert.Less(t, took, graceBound)
		assert.Contains(t, ferr.String(), "creative fetch "+args[1], "how to go on: %s", ferr.String())
		assert.Contains(t, ferr.String(), "paying nothing")
	}
	assert.FileExists(t, link, "the link file stays")
	assert.Equal(t, int32(1), h.calls.Load())
}

// A service on a private network gives links on it, which the command
// downloads since its service is there too. creative fetch, later, in a
// shell where the base URL is not set, fetches them all the same: the link
// file names the service its links came from.
func TestFetchGetsThePrivateLinksOfAPrivateServiceWithoutItsBaseURL(t *testing.T) {
	bin := buildCLI(t)
	h := newHostile(t) // on 127.0.0.1, as a service on 10.0.0.5 would be
	out := t.TempDir()
	h.gone.Store(true)
	cmd, stderr := startCLI(t, bin, h.env(), "audio", "text-to-music", "--prompt", "later", "--out", out)
	require.Equal(t, exitKept, waitExit(t, cmd), stderr.String())
	link := filepath.Join(out, "text-to-music.link.json")
	assert.NotContains(t, readFile(t, link), cliKey)

	h.gone.Store(false)
	fetch, ferr := startCLI(t, bin, nil, "fetch", link)
	require.Equal(t, 0, waitExit(t, fetch), ferr.String())
	assert.Equal(t, string(h.wav), readFile(t, filepath.Join(out, "text-to-music.wav")))
	assert.Equal(t, int32(1), h.calls.Load(), "the fetch paid for nothing")
}

// A rerun that only downloads what earlier runs were answered has no call
// in flight: a signal says it lets the downloads finish, not "0 calls".
func TestASignalDuringARerunsDownloadsNamesThem(t *testing.T) {
	bin := buildCLI(t)
	h := newHostile(t)
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(`{"op":"audio/text-to-music","prompt":"a","id":"a"}`+"\n"), 0o644))
	out := filepath.Join(dir, "out")
	h.drip.Store(true) // past --timeout: the job stays answered, its download to come
	first, ferr := startCLI(t, bin, h.env(), "--timeout", "1s", "batch", jobs, "--out", out)
	waitFor(t, h.streaming, "the first download to start")
	require.Equal(t, exitAPI, waitExit(t, first), ferr.String())

	rerun, stderr := startCLI(t, bin, h.env(), "--grace", "1s", "batch", jobs, "--out", out)
	waitFor(t, h.streaming, "the download to start")
	code, took := sigterm(t, rerun)
	assert.Equal(t, exitInterrupt, code, stderr.String())
	assert.Less(t, took, graceBound)
	assert.Contains(t, stderr.String(), "letting the downloads of answered jobs finish for up to 1s")
	assert.Contains(t, stderr.String(), "1 download left: a rerun fetches it without paying")
	assert.Equal(t, int32(1), h.calls.Load())
}

// A link file holds what the answer's links are, however long: creative
// fetch reads every link file a command wrote (here one link of 2 MiB,
// which an answer may hold), not only those under a fixed size.
func TestFetchReadsTheLinkFileOfLongLinks(t *testing.T) {
	bin := buildCLI(t)
	wav := media.Music("tune", 0.2)
	var calls atomic.Int32
	var ready atomic.Bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			_, _ = io.Copy(io.Discard, r.Body)
			calls.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"success":true,"message":"ok","data":"http://%s/files/%s.wav?a=1&b=2"}`, r.Host, strings.Repeat("x", 2<<20))
			return
		}
		if !ready.Load() {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<p>maintenance</p>")
			return
		}
		w.Header().Set("Content-Type", "audio/wav")
		_, _ = w.Write(wav)
	}))
	srv.Config.MaxHeaderBytes = 8 << 20
	srv.Start()
	defer srv.Close()
	env := map[string]string{"CREATIVE_BASE_URL": srv.URL, "CREATIVE_ACCESS_KEY": cliKey}
	out := t.TempDir()
	cmd, stderr := startCLI(t, bin, env, "audio", "text-to-music", "--prompt", "p", "--out", out)
	require.Equal(t, exitKept, waitExit(t, cmd), stderr.String())
	link := filepath.Join(out, "text-to-music.link.json")
	require.FileExists(t, link)

	ready.Store(true)
	fetch, ferr := startCLI(t, bin, env, "fetch", link)
	require.Equal(t, 0, waitExit(t, fetch), ferr.String())
	assert.Equal(t, string(wav), readFile(t, filepath.Join(out, "text-to-music.wav")))
	assert.Equal(t, int32(1), calls.Load(), "the fetch paid for nothing")
}
