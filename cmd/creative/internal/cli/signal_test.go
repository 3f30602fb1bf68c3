package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

// The command's programs: creative, and creative-cloud, which creative
// hands a command that names a bucket URL over to.
const (
	mainPackage  = "github.com/creativegen/creative-go/cmd/creative"
	cloudPackage = mainPackage + "/creative-cloud"
)

// built is the folder buildCLI builds both programs into, once for the
// package's tests; TestMain removes it.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// buildCLI builds creative and creative-cloud into one folder, as go
// install ./cmd/creative/... does, and returns creative's path: a command
// that names a bucket URL goes through the hand-off to creative-cloud.
func buildCLI(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "creative-bin-"); built.err != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", built.dir+string(filepath.Separator), mainPackage, cloudPackage).CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, built.err)
	return filepath.Join(built.dir, "creative")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// startCLI runs the built command with env in the background.
func startCLI(t *testing.T, bin string, env map[string]string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, &stderr
}

// waitExit waits for cmd to end, at most a generous bound, and returns its
// exit status.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not exit after the signal")
		return -1
	}
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestBatchKilledBetweenAnswerAndDownloadIsDownloadedByTheRerunWithoutPaying(t *testing.T) {
	bin := buildCLI(t)
	var calls, downloads atomic.Int32
	var hang atomic.Bool
	hang.Store(true)
	started := make(chan struct{}, 1)
	wav := append([]byte("RIFF\x00\x00\x00\x00WAVE"), make([]byte, 64<<10)...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/audio/v1/text-to-music" {
			calls.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"success":true,"message":"ok","data":"http://%s/files/tune.wav"}`, r.Host)
			return
		}
		downloads.Add(1)
		if !hang.Load() {
			_, _ = w.Write(wav)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(wav)))
		_, _ = w.Write(wav[:32<<10])
		w.(http.Flusher).Flush()
		select {
		case started <- struct{}{}:
		default:
		}
		<-r.Context().Done() // the rest never comes
	}))
	defer srv.Close()
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(`{"op":"audio/text-to-music","prompt":"p"}`+"\n"), 0o644))
	out := filepath.Join(dir, "out")
	env := map[string]string{"CREATIVE_BASE_URL": srv.URL, "CREATIVE_ACCESS_KEY": cliKey}
	cmd, _ := startCLI(t, bin, env, "batch", jobs, "--out", out)
	waitFor(t, started, "the download to start")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Equal(t, int32(1), calls.Load())

	hang.Store(false)
	rerun, stderr := startCLI(t, bin, env, "batch", jobs, "--out", out)
	require.Equal(t, 0, waitExit(t, rerun), stderr.String())
	assert.Equal(t, int32(1), calls.Load(), "the rerun paid for nothing")
	assert.Equal(t, int32(2), downloads.Load(), "the rerun downloaded the recorded link")
	files, err := filepath.Glob(filepath.Join(out, "000001-text-to-music-*.wav"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	got, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.Equal(t, wav, got)
	noTempFiles(t, out)
}

func TestBatchSurvivesAClosedPipeOnStderr(t *testing.T) {
	bin := buildCLI(t)
	srv := creativetest.NewServer()
	defer srv.Close()
	closed := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(closed) }) }
	defer release()
	var arrived atomic.Int32
	srv.Handle("image/text-to-image", func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		<-closed // every call is in flight when the reader goes away
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, pngAnswer)
	})
	jobs := writeJobs(t, 4)
	out := t.TempDir()
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command(bin, "-v", "batch", jobs, "--out", out)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CREATIVE_BASE_URL=" + srv.URL, "CREATIVE_ACCESS_KEY=" + srv.AccessKey}
	cmd.Stdout, cmd.Stderr = pw, pw // creative -v batch ... 2>&1 | head -0
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	pw.Close()
	require.Eventually(t, func() bool { return arrived.Load() == 4 }, 10*time.Second, 5*time.Millisecond)
	pr.Close() // the reader goes away: every later write meets a closed pipe
	release()
	code := waitExit(t, cmd)
	assert.Equal(t, 0, code, "not killed by SIGPIPE: %v", cmd.ProcessState)
	recs := readResults(t, out)
	require.Len(t, recs, 4)
	for _, r := range recs {
		assert.Equal(t, batch.Done, r.State)
	}
}
