//go:build unix

package cli

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTemporaryFilesOfKilledWritersDoNotPileUp: a worker killed (SIGKILL)
// while it writes its outputs leaves their temporary files in --out; the
// next command that opens the folder removes them, and never those of a
// worker still writing, however old; a rerun writes every output whole
// and leaves no temporary file.
func TestTemporaryFilesOfKilledWritersDoNotPileUp(t *testing.T) {
	bin := buildCLI(t)
	srv, env := fakeEnv(t)
	stalled := make(chan struct{})
	defer close(stalled)
	// Each answer sends its first bytes, then nothing until the test ends:
	// its writer is in the middle of its output.
	srv.Handle("audio/text-to-speech", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/mpeg")
		_, _ = w.Write(append([]byte("ID3\x04\x00\x00\x00\x00\x00\x00"), make([]byte, 64<<10)...))
		_ = http.NewResponseController(w).Flush()
		select {
		case <-stalled:
		case <-r.Context().Done():
		}
	})
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	var lines []string
	for i := range 3 {
		lines = append(lines, fmt.Sprintf(`{"op":"audio/text-to-speech","prompt":"line %d","voiceId":"female 1"}`, i))
	}
	jobs := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	environ := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	temps := func() []string {
		m, err := filepath.Glob(filepath.Join(out, ".out-*.tmp"))
		require.NoError(t, err)
		return m
	}
	// writing starts a worker and waits until it writes n outputs at once
	// besides those named in before.
	writing := func(n int, before []string, args ...string) (*exec.Cmd, []string) {
		cmd := exec.Command(bin, append([]string{"batch", jobs, "--out", out, "--concurrency", "3"}, args...)...)
		cmd.Env = environ
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			var own []string
			for _, p := range temps() {
				if !slices.Contains(before, p) {
					own = append(own, p)
				}
			}
			if len(own) == n {
				return cmd, own
			}
		}
		t.Fatalf("the worker did not write %d outputs at once within 60 s: %q", n, temps())
		return nil, nil
	}
	age := func(paths []string) {
		old := time.Now().Add(-10 * time.Minute)
		for _, p := range paths {
			require.NoError(t, os.Chtimes(p, old, old))
		}
	}

	killed, dead := writing(3, nil)
	require.NoError(t, killed.Process.Signal(syscall.SIGKILL))
	_ = killed.Wait()
	live, writes := writing(3, dead, "--resend-unknown")
	age(append(dead, writes...)) // both unwritten for ten minutes

	code, _, stderr := runCLI(t, env, "batch", "status", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.ElementsMatch(t, writes, temps(), "the killed worker's files are removed, the live worker's kept")

	require.NoError(t, live.Process.Signal(syscall.SIGKILL))
	_ = live.Wait()
	age(writes)
	srv.Handle("audio/text-to-speech", nil)
	code, _, stderr = runCLI(t, env, "batch", jobs, "--out", out, "--resend-unknown")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "3 done")
	assert.Empty(t, temps(), "no temporary file left")
	outputs, err := filepath.Glob(filepath.Join(out, "*-text-to-speech*.mp3"))
	require.NoError(t, err)
	require.Len(t, outputs, 3, "an output a job")
	for _, p := range outputs {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Greater(t, len(b), 1000, "%s is whole: %d bytes", p, len(b))
		assert.NotEqual(t, 10+64<<10, len(b), "%s is the stalled answer's", p)
	}
}
