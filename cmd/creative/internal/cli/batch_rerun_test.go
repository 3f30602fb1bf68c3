package cli

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

func TestBatchRerunSendsExactlyTheFailedJobs(t *testing.T) {
	srv, env := fakeEnv(t)
	path := writeJobs(t, 24)
	out := t.TempDir()
	srv.Fail("image/text-to-image", creativetest.Fault{Status: 400, Message: "prompt: refused", Times: 5})
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out, "--concurrency", "4")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "creative: batch: 19 done, 5 failed (the service said no: see results.jsonl; a rerun sends them again")
	assert.Contains(t, stderr, "creative: batch: 5 of 24 jobs not done")
	var failed []string
	for _, r := range readResults(t, out) {
		if r.State != batch.Done {
			assert.Equal(t, batch.Failed, r.State)
			assert.Regexp(t, `^image/text-to-image: HTTP 400: prompt: refused \(request id req-\d+\)$`, r.Error)
			assert.Regexp(t, `^req-\d+$`, r.RequestID, "the request id is recorded")
			assert.Equal(t, 1, r.Requests, "a 400 is not retried")
			assert.Empty(t, r.Files)
			failed = append(failed, fmt.Sprintf("job %d", r.Line))
		}
	}
	sort.Strings(failed)
	require.Len(t, failed, 5)

	srv.Reset()
	calls := watchPrompts(srv)
	code, _, stderr = runCLI(t, env, "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, failed, calls.take(), "exactly the failed jobs ran again")
	assert.Contains(t, stderr, "creative: batch: 24 done (19 before this run) in ")

	code, _, stderr = runCLI(t, env, "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, calls.take(), "a paid call is not repeated")
	assert.Contains(t, stderr, "creative: batch: 24 done (24 before this run)")

	// An inserted line and reordered lines pay for nothing again; an
	// edited line is a new job.
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	lines[6] = strings.Replace(lines[6], `"job 7"`, `"job 7, bluer"`, 1)
	lines[0], lines[23] = lines[23], lines[0]
	lines = append([]string{""}, lines...)
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644))
	code, _, stderr = runCLI(t, env, "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, []string{"job 7, bluer"}, calls.take())
}

func TestBatchDownloadsAgainWithoutPayingAgainAndRepaysOnRequest(t *testing.T) {
	srv, env := fakeEnv(t)
	var calls atomic.Int32
	srv.Handle("audio/text-to-music", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"success":true,"message":"ok","data":"http://%s/files/gone.wav"}`, r.Host)
	})
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"op":"audio/text-to-music","prompt":"p"}`+"\n"), 0o644))
	out := t.TempDir()
	for run := 1; run <= 2; run++ {
		code, _, stderr := runCLI(t, env, "batch", path, "--out", out)
		assert.Equal(t, 1, code, stderr)
		assert.Contains(t, stderr, "0 done, 1 answered whose links expired (--repay-expired to pay for them again)")
	}
	recs := readResults(t, out)
	require.Len(t, recs, 1, "the second run left the job alone")
	assert.Equal(t, batch.Answered, recs[0].State)
	assert.True(t, recs[0].Lost)
	assert.Equal(t, []string{srv.URL + "/files/gone.wav"}, recs[0].URLs)
	assert.Contains(t, recs[0].Error, "HTTP 404")
	assert.Contains(t, recs[0].Error, "(--repay-expired pays for the job again)", "the log names the flag that helps")
	assert.NotContains(t, recs[0].Error, "Options.", "in the command line's words")
	assert.Equal(t, int32(1), calls.Load(), "the paid call was made once")

	code, stdout, _ := runCLI(t, env, "batch", path, "--out", out, "--dry-run")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "0 calls would be made (1 job checked, 1 answered with expired links, left alone (--repay-expired pays again))")

	srv.Reset() // the fake's own text-to-music, whose files are served
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out, "--repay-expired")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 1, srv.Count("audio/text-to-music"), "--repay-expired paid once more")

	// The file deleted: a rerun downloads it again from the recorded link,
	// paying nothing.
	recs = readResults(t, out)
	last := recs[len(recs)-1]
	require.Equal(t, batch.Done, last.State)
	require.NoError(t, os.Remove(filepath.Join(out, last.Files[0])))
	code, _, stderr = runCLI(t, env, "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.FileExists(t, filepath.Join(out, last.Files[0]))
	assert.Equal(t, 1, srv.Count("audio/text-to-music"), "downloading again paid for nothing")
	noTempFiles(t, out)
}

// --max-calls counts every run on the ledger: a rerun with the same cap
// sends nothing, and says that the cap is spent and what to do, rather
// than that a rerun sends the jobs again.
func TestBatchARerunWithASpentCapSaysSo(t *testing.T) {
	srv, env := fakeEnv(t)
	path, out := writeJobs(t, 6), t.TempDir()
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out, "--max-calls", "2", "--concurrency", "1")
	require.Equal(t, 1, code, stderr)
	sent := len(srv.Requests())
	require.Positive(t, sent)

	code, _, stderr = runCLI(t, env, "batch", path, "--out", out, "--max-calls", "2", "--concurrency", "1")
	assert.Equal(t, 1, code, stderr)
	assert.Equal(t, sent, len(srv.Requests()), "the rerun sent nothing")
	assert.Contains(t, stderr, "creative: batch: the cap of 2 calls is spent (it counts every run on this ledger: raise --max-calls or use a new ledger)")

	code, stdout, _ := runCLI(t, env, "batch", "--help")
	require.Equal(t, 0, code)
	assert.Contains(t, strings.Join(strings.Fields(stdout), " "), "counted over every run and worker on this ledger, earlier runs included")
}
