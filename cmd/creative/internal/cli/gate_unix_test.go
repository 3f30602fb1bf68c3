//go:build unix

package cli

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creativegen/creative-go/cmd/creative/internal/batchcmd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A plant is what a neighbour who can write into a shared output folder
// puts at a name a run writes; outside is a file outside the folder that
// nothing may write.
type plant struct {
	name string
	make func(path, outside string) error
}

var plants = []plant{
	{"symlink outside", func(path, outside string) error { return os.Symlink(outside, path) }},
	{"dangling symlink outside", func(path, outside string) error { return os.Symlink(outside+".new", path) }},
	{"symlink to /dev/null", func(path, _ string) error { return os.Symlink("/dev/null", path) }},
	{"FIFO", func(path, _ string) error { return syscall.Mkfifo(path, 0o644) }},
	{"folder", func(path, _ string) error { return os.Mkdir(path, 0o755) }},
	{"socket", func(path, _ string) error {
		l, err := net.Listen("unix", path)
		if err == nil {
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			l.Close()
		}
		return err
	}},
	// /dev/null's numbers, 1 and 3: a device node needs root.
	{"device", func(path, _ string) error { return syscall.Mknod(path, syscall.S_IFCHR|0o666, 1<<8|3) }},
}

// plantIn makes a folder out beside a file outside holding "keep", and
// plants p at name in out; it skips the test where p cannot be made.
func plantIn(t *testing.T, p plant, name string) (out, outside string) {
	t.Helper()
	top := t.TempDir()
	out = filepath.Join(top, "out")
	require.NoError(t, os.Mkdir(out, 0o755))
	outside = filepath.Join(top, "outside")
	require.NoError(t, os.WriteFile(outside, []byte("keep"), 0o644))
	if err := p.make(filepath.Join(out, name), outside); err != nil {
		t.Skip(p.name, "cannot be made here:", err)
	}
	return out, outside
}

// nothingOutside checks that the file outside the folder holds what it
// held, that no file was made beside it, and that the planted name holds
// what was planted.
func nothingOutside(t *testing.T, out, outside, name string, planted os.FileInfo) {
	t.Helper()
	b, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(b), "the file outside the folder")
	_, err = os.Lstat(outside + ".new")
	assert.ErrorIs(t, err, os.ErrNotExist, "a file was made outside the folder")
	now, err := os.Lstat(filepath.Join(out, name))
	require.NoError(t, err, "what was planted is gone")
	assert.Equal(t, planted.Mode(), now.Mode(), "what was planted is left as it was")
}

// bounded runs the command and fails the test if it has not ended in a
// minute: a FIFO opened for writing blocks for ever.
func bounded(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := runCLI(t, env, args...)
		done <- result{code, stdout, stderr}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(time.Minute):
		t.Fatalf("creative %s did not end in a minute", strings.Join(args, " "))
		return 0, "", ""
	}
}

// Whatever is planted at a name a batch writes (the ledger database and
// its side files, results.jsonl, the results page) is refused before
// anything is sent, with exit status 2 and an error naming the path, and
// nothing is written outside the folder.
func TestBatchRefusesWhatIsPlantedAtTheNamesItWrites(t *testing.T) {
	names := []string{"ledger.db", "ledger.db-wal", "ledger.db-shm", "ledger.db-journal", batchcmd.ResultsFile, "index.html"}
	for _, name := range names {
		for _, p := range plants {
			t.Run(name+"/"+p.name, func(t *testing.T) {
				srv, env := fakeEnv(t)
				jobs := writeJobs(t, 2)
				out, outside := plantIn(t, p, name)
				planted, err := os.Lstat(filepath.Join(out, name))
				require.NoError(t, err)
				code, _, stderr := bounded(t, env, "batch", jobs, "--out", out)
				assert.Equal(t, exitUsage, code, stderr)
				assert.Contains(t, stderr, filepath.Join(out, name))
				assert.Empty(t, srv.Requests(), "nothing is sent")
				nothingOutside(t, out, outside, name, planted)
			})
		}
	}
}

// Whatever is planted at the name an output of a batch takes is left as it
// is, and nothing is written through it.
func TestBatchWritesNoOutputThroughWhatIsPlanted(t *testing.T) {
	_, env := fakeEnv(t)
	jobs := filepath.Join(t.TempDir(), "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(`{"op":"audio/text-to-speech","prompt":"hi","voiceId":"female-1","id":"hello"}`+"\n"), 0o644))
	output := outputName(t, env, jobs, t.TempDir(), "hello-")
	for _, p := range plants {
		t.Run(p.name, func(t *testing.T) {
			srv, env := fakeEnv(t)
			out, outside := plantIn(t, p, output)
			planted, err := os.Lstat(filepath.Join(out, output))
			require.NoError(t, err)
			code, _, stderr := bounded(t, env, "batch", jobs, "--out", out)
			assert.NotEqual(t, 0, code, "a job whose file could not be put in place is not done")
			assert.Contains(t, stderr, filepath.Join(out, output))
			assert.Equal(t, 1, srv.Count("audio/text-to-speech"))
			nothingOutside(t, out, outside, output, planted)
		})
	}
}

// Whatever is planted at the name an operation's result would take is left
// as it is: the result takes the next free name, and nothing is written
// through what was planted.
func TestAnOperationWritesNothingThroughWhatIsPlanted(t *testing.T) {
	_, env := fakeEnv(t)
	first := t.TempDir()
	code, stdout, stderr := runCLI(t, env, "audio", "text-to-speech", "--prompt", "hi", "--voice-id", "female-1", "--out", first)
	require.Equal(t, 0, code, stderr)
	name := filepath.Base(strings.TrimSpace(stdout))
	stem, ext, _ := strings.Cut(name, ".")
	for _, p := range plants {
		t.Run(p.name, func(t *testing.T) {
			srv, env := fakeEnv(t)
			out, outside := plantIn(t, p, name)
			planted, err := os.Lstat(filepath.Join(out, name))
			require.NoError(t, err)
			code, stdout, stderr := bounded(t, env, "audio", "text-to-speech", "--prompt", "hi", "--voice-id", "female-1", "--out", out)
			require.Equal(t, 0, code, stderr)
			assert.Equal(t, filepath.Join(out, stem+"-1."+ext), strings.TrimSpace(stdout))
			st, err := os.Lstat(filepath.Join(out, stem+"-1."+ext))
			require.NoError(t, err)
			assert.True(t, st.Mode().IsRegular())
			assert.Equal(t, 1, srv.Count("audio/text-to-speech"))
			nothingOutside(t, out, outside, name, planted)
		})
	}
}

// A FIFO at results.jsonl stops no run: the built command, given enough
// jobs that their records fill a pipe's buffer many times over, refuses
// the folder at once with exit status 2 and sends nothing, where it used to
// block on its first full buffer with the log's lock held, past SIGTERM.
func TestTheBuiltCommandRefusesAFIFOAtTheResultsLog(t *testing.T) {
	bin := buildCLI(t)
	srv, env := fakeEnv(t)
	jobs := writeJobs(t, 1000)
	out := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(out, batchcmd.ResultsFile), 0o644))
	cmd, stderr := startCLI(t, bin, env, "batch", jobs, "--out", out, "--concurrency", "8")
	assert.Equal(t, exitUsage, waitExit(t, cmd), stderr.String())
	assert.Contains(t, stderr.String(), filepath.Join(out, batchcmd.ResultsFile)+" is a FIFO")
	assert.Empty(t, srv.Requests(), "nothing sent")
}
