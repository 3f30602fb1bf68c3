package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/cmd/creative/internal/batchcmd"
	"github.com/creativegen/creative-go/creativetest"
)

// writeJobs writes n text-to-image jobs ("prompt": "job <line>") and
// returns the file's path.
func writeJobs(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"op":"image/text-to-image","prompt":"job %d"}`+"\n", i)
	}
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// readResults reads results.jsonl under dir.
func readResults(t *testing.T, dir string) []batch.Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, batchcmd.ResultsFile))
	require.NoError(t, err)
	var out []batch.Record
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r batch.Record
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		out = append(out, r)
	}
	return out
}

// arrivals answers the calls of text-to-image with one small PNG and
// keeps their prompts as they arrive. (The fake's own record of a request
// is written after its answer, so right after a run it may miss the last
// call.)
type arrivals struct {
	mu      sync.Mutex
	prompts []string
	// hook runs with the count of calls so far, before the answer.
	hook func(n int, r *http.Request)
}

func watchPrompts(srv *creativetest.Server) *arrivals {
	a := &arrivals{}
	srv.Handle("image/text-to-image", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Prompt string `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		a.mu.Lock()
		a.prompts = append(a.prompts, body.Prompt)
		n, hook := len(a.prompts), a.hook
		a.mu.Unlock()
		if hook != nil {
			hook(n, r)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, pngAnswer)
	})
	return a
}

// take returns the prompts seen so far, sorted, and forgets them.
func (a *arrivals) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.prompts
	a.prompts = nil
	sort.Strings(out)
	return out
}

// noTempFiles checks that no temporary file is left under dir once the
// run ended.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			assert.False(t, strings.HasPrefix(e.Name(), tempPrefix), "temporary file %s left", p)
			assert.NotContains(t, p, string(filepath.Separator)+".tmp"+string(filepath.Separator), "temporary file %s left", p)
		}
		return err
	}))
}

func TestBatchRunsEveryKindOfJobAndRecordsIt(t *testing.T) {
	srv, env := fakeEnv(t)
	dir := t.TempDir()
	img := pngFile(t, 16, 16)
	require.NoError(t, os.Rename(img, filepath.Join(dir, "cat.png")))
	require.NoError(t, os.Rename(writeWAV(t), filepath.Join(dir, "talk.wav")))
	jobs := strings.Join([]string{
		`{"op":"image/text-to-image","id":"fox","prompt":"a fox","numberOfResults":2,"styleId":"anime"}`,
		`{"op":"audio/text-to-speech","prompt":"Welcome","voiceId":"female 1"}`,
		``,
		`{"op":"image/re-imagine","image":"cat.png"}`,
		`{"op":"audio/split-audio","audio":"talk.wav"}`,
		`{"op":"text/writer-tool","inputs":[{"jobRole":"r","jobSkills":"s"}],"language":"en","tone":"formal","useCase":"CoverLetter"}`,
		`{"op":"image/generate-qr","url":"https://e.example","prompt":"p"}`,
	}, "\n")
	path := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("\xef\xbb\xbf"+jobs), 0o644))
	out := filepath.Join(t.TempDir(), "out")

	code, stdout, stderr := runCLI(t, env, "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr+readFile(t, filepath.Join(out, batchcmd.ResultsFile)))
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "creative: batch: 6 done in ")
	recs := readResults(t, out)
	require.Len(t, recs, 6)
	byLine := map[int]batch.Record{}
	for _, r := range recs {
		assert.Equal(t, batch.Done, r.State, "%+v", r)
		assert.Equal(t, 1, r.Requests-len(r.URLs), "one call, plus one request per download")
		byLine[r.Line] = r
	}
	assert.Equal(t, []string{"fox-text-to-image-1.png", "fox-text-to-image-2.png"}, byLine[1].Files)
	assert.Regexp(t, `^000002-text-to-speech-[0-9a-f]{6}\.mp3$`, byLine[2].Files[0])
	assert.Regexp(t, `^000004-re-imagine-[0-9a-f]{6}\.png$`, byLine[4].Files[0])
	assert.Regexp(t, `^000005-split-audio-[0-9a-f]{6}-1\.wav$`, byLine[5].Files[0])
	assert.Len(t, byLine[5].URLs, 2)
	assert.NotEmpty(t, byLine[6].Text)
	assert.Empty(t, byLine[6].Files)
	for _, r := range recs {
		for _, f := range r.Files {
			st, err := os.Stat(filepath.Join(out, f))
			require.NoError(t, err)
			assert.Equal(t, 0o644&^umask(), st.Mode().Perm())
		}
	}
	noTempFiles(t, out)
	assert.Len(t, srv.Requests(), 6)
}

func TestBatchChecksEveryLineBeforeSendingOrCreatingAnything(t *testing.T) {
	srv, env := fakeEnv(t)
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.png")
	require.NoError(t, os.Rename(pngFile(t, 8, 8), secret))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "link.png")))
	rel, err := filepath.Rel(dir, secret)
	require.NoError(t, err)
	lines := []string{
		`{"op":"image/text-to-image","prompt":"fine"}`,
		`{"op":"image/text-to-imag","prompt":"x"}`,
		`{"op":"image/text-to-image","prompt":"x","numberOfResults":11}`,
		`{"op":"image/text-to-image","prompt":"x","colour":"red"}`,
		`{"op":"image/re-imagine","image":"nope.png"}`,
		`{"op":"audio/text-to-speech","prompt":"x","voiceId":"robot"}`,
		`{"op":"image/generate-qr","url":"ftp://x","prompt":"p"}`,
		`{"op":"image/generate-qr","url":"https://x.example"}`,
		`{"op":"image/text-to-image","prompt":"x","numberOfResults":"2"}`,
		`{"op":"image/text-to-image","prompt":"x","id":"../up"}`,
		`{"op":"image/text-to-image","prompt":"y","id":"a"}`,
		`{"op":"image/text-to-image","prompt":"z","id":"a"}`,
		`not json`,
		"{\"op\":\"image/text-to-image\",\"prompt\":\"caf\xe9\"}",
		`{"op":"image/text-to-image","op":"image/generate-logo","prompt":"p"}`,
		`{"op":"audio/text-to-music","prompt":"p","duration":0}`,
		`{"op":"video/infinite-zoom","prompt":"p","numberOfIteration":null}`,
		`{"op":"image/re-imagine","image":"` + rel + `"}`,
		`{"op":"image/re-imagine","image":"` + secret + `"}`,
		`{"op":"image/re-imagine","image":"link.png"}`,
		`{"op":"image/text-to-image","prompt":"x",}`,
	}
	path := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644))
	for _, dry := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "out")
		args := []string{"batch", path, "--out", out}
		if dry {
			args = append(args, "--dry-run")
		}
		code, stdout, stderr := runCLI(t, env, args...)
		assert.Equal(t, 2, code)
		assert.Empty(t, stdout)
		for _, want := range []string{
			":2: op: unknown operation \"image/text-to-imag\"; did you mean \"image/text-to-image\"?",
			":3: numberOfResults: must be between 1 and 10, got 11",
			":4: colour: image/text-to-image takes no such field; did you mean \"colorId\"? (it takes: ",
			":5: image: cannot be read",
			":6: voiceId: ids: unknown voice \"robot\"",
			":7: url: must be an absolute http or https URL",
			":8: prompt: is required",
			":9: numberOfResults: must be a number",
			":10: id: must be letters",
			":12: id: \"a\" is also the id of line 11",
			":13: not a JSON object: a job is one object per line, such as {",
			":14: prompt: holds invalid UTF-8",
			":15: op: given twice",
			":16: duration: is 0: leave it out for the service's default (8)",
			":17: numberOfIteration: is null: leave it out for the service's default (2)",
			":18: image: " + rel + " is outside the jobs file's folder",
			":19: image: " + secret + " is outside the jobs file's folder",
			":20: image: cannot be read: link.png",
			":21: column 41: a trailing comma before \"}\" (JSON allows none): ...t-to-image\",\"prompt\":\"x\",}\n",
			"creative: batch: 19 bad lines in " + path + "; nothing was sent",
		} {
			assert.Contains(t, stderr, want)
		}
		assert.NotContains(t, stderr, ":1:")
		assert.NotContains(t, stderr, ":11:")
		assert.Empty(t, srv.Requests(), "nothing was sent")
		assert.NoDirExists(t, out, "nothing was created under --out")
	}
	// With --allow-outside, the paths that leave the folder are read.
	for i, l := range lines {
		if !strings.Contains(l, "secret") && !strings.Contains(l, "link.png") {
			lines[i] = ""
		}
	}
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644))
	code, stdout, stderr := runCLI(t, env, "batch", path, "--dry-run", "--allow-outside")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "3 calls would be made")
}

func TestBatchAUsageErrorCreatesNothing(t *testing.T) {
	srv := creativetest.NewServer()
	defer srv.Close()
	path := writeJobs(t, 2)
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCLI(t, map[string]string{"CREATIVE_BASE_URL": srv.URL}, "batch", path, "--out", out)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "no access key")
	assert.NoDirExists(t, out)
	assert.Empty(t, srv.Requests())
}

func TestBatchDryRunCountsTheCalls(t *testing.T) {
	srv, env := fakeEnv(t)
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat(`{"op":"image/generate-logo","prompt":"p"}`+"\n", 3)+
		`{"op":"video/infinite-zoom","prompt":"p"}`+"\n"), 0o644))
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runCLI(t, env, "batch", path, "--dry-run", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `image/generate-logo +3\n`, stdout)
	assert.Regexp(t, `video/infinite-zoom +1\n`, stdout)
	assert.Contains(t, stdout, "4 calls would be made (4 jobs checked); nothing was sent")
	assert.NoDirExists(t, out)
	code, stdout, _ = runCLI(t, env, "batch", path, "--dry-run", "--shard", "1/2")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "2 calls would be made in shard 1/2")
	assert.Empty(t, srv.Requests())

	// After a run, the dry run says what is done.
	code, _, stderr = runCLI(t, env, "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr)
	code, stdout, _ = runCLI(t, env, "batch", path, "--dry-run", "--out", out)
	require.Equal(t, 0, code)
	assert.Equal(t, "0 calls would be made (4 jobs checked, 4 done already); nothing was sent\n", stdout)
	code, stdout, _ = runCLI(t, env, "batch", path[:len(path)-len("jobs.jsonl")]+"one.jsonl", "--dry-run")
	assert.Equal(t, 2, code, stdout)
}

func TestBatchRetriesShowInRequests(t *testing.T) {
	srv, env := fakeEnv(t)
	path := writeJobs(t, 1)
	out := t.TempDir()
	srv.Fail("image/text-to-image", creativetest.Fault{Status: 503, Times: 2})
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr)
	recs := readResults(t, out)
	require.Len(t, recs, 1)
	assert.Equal(t, 3, recs[0].Requests)
	assert.Equal(t, batch.Done, recs[0].State)
}

func TestBatchShardsCoverTheFileOnce(t *testing.T) {
	srv, env := fakeEnv(t)
	calls := watchPrompts(srv)
	path := writeJobs(t, 10)
	var all []int
	for i := range 3 {
		out := t.TempDir()
		code, _, stderr := runCLI(t, env, "batch", path, "--out", out, "--shard", fmt.Sprintf("%d/3", i))
		require.Equal(t, 0, code, stderr)
		for _, r := range readResults(t, out) {
			assert.Equal(t, i, r.Line%3)
			all = append(all, r.Line)
		}
	}
	slices.Sort(all)
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, all)
	assert.Len(t, calls.take(), 10)

	// Identical lines are told apart over the whole file, not per shard:
	// two shards on one --out make every one of them.
	same := filepath.Join(t.TempDir(), "same.jsonl")
	require.NoError(t, os.WriteFile(same, []byte(strings.Repeat(`{"op":"image/text-to-image","prompt":"same"}`+"\n", 4)), 0o644))
	out := t.TempDir()
	for i := range 2 {
		code, _, stderr := runCLI(t, env, "batch", same, "--out", out, "--shard", fmt.Sprintf("%d/2", i))
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stderr, "creative: batch: 2 done in ")
	}
	assert.Len(t, calls.take(), 4)
}

func TestBatchStatusCountsTheLedgerAndListsTheUnknown(t *testing.T) {
	srv, env := fakeEnv(t)
	path := writeJobs(t, 6)
	out := t.TempDir()
	srv.Fail("image/text-to-image", creativetest.Fault{Status: 400, Times: 1})
	srv.Fail("image/text-to-image", creativetest.Fault{Status: 500, Times: 1})
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out, "--concurrency", "1", "--retries", "0")
	require.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "4 done, 1 failed (the service said no: see results.jsonl; a rerun sends them again, and an unchanged line fails the same way unless its cause changed), 1 unknown (may have been paid: --resend-unknown to send again)")

	code, stdout, stderr := runCLI(t, env, "batch", "status", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "6 jobs in the ledger\ndone      4\nfailed    1\nunknown   1\n")
	assert.Regexp(t, `\n1 job may have been paid \(unknown, or claimed and never ended\):\n[0-9a-f]{32}\tline 2\timage/text-to-image\tunknown\t`, stdout)

	code, stdout, stderr = runCLI(t, env, "batch", "status", "--out", out, "--json")
	require.Equal(t, 0, code, stderr)
	var st struct {
		Jobs   int            `json:"jobs"`
		States map[string]int `json:"states"`
		Review []struct {
			Job, Op, State string
			Line           int
		} `json:"review"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &st), stdout)
	assert.Equal(t, 6, st.Jobs)
	assert.Equal(t, map[string]int{"done": 4, "failed": 1, "unknown": 1}, st.States)
	require.Len(t, st.Review, 1)
	assert.Equal(t, 2, st.Review[0].Line)
	assert.Equal(t, "unknown", st.Review[0].State)
	assert.Regexp(t, `^[0-9a-f]{32}$`, st.Review[0].Job)

	// A rerun sends the failed job, not the unknown one; the flag sends it.
	calls := watchPrompts(srv)
	code, _, stderr = runCLI(t, env, "batch", path, "--out", out)
	assert.Equal(t, 1, code, stderr)
	assert.Equal(t, []string{"job 1"}, calls.take())
	code, _, stderr = runCLI(t, env, "batch", path, "--out", out, "--resend-unknown")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, []string{"job 2"}, calls.take())

	code, _, stderr = runCLI(t, env, "batch", "status", "--out", t.TempDir())
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "holds no ledger")
}

func TestBatchProgressOnATerminal(t *testing.T) {
	_, env := fakeEnv(t)
	path := writeJobs(t, 6)
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, progress: true}
	code := a.run([]string{"batch", path, "--out", t.TempDir(), "--concurrency", "2"})
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stderr.String(), "creative: batch: 6 done in ")
	assert.True(t, strings.HasSuffix(stderr.String(), "results.jsonl\n"))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, _ := os.ReadFile(path)
	return string(b)
}

// --concurrency 4 keeps four calls in flight, never more: 24 calls of
// 100 ms take 600 ms on the bubble's clock.
func TestBatchRunsJobsConcurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const serviceTime = 100 * time.Millisecond
		srv, a, stderr := inMemory(t, nil)
		calls := watchPrompts(srv)
		var inFlight, most atomic.Int32
		calls.hook = func(int, *http.Request) {
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(serviceTime) // the service at work
			inFlight.Add(-1)
		}
		path := writeJobs(t, 24)
		out := t.TempDir()
		start := time.Now()
		code := a.run([]string{"batch", path, "--out", out, "--concurrency", "4"})
		require.Equal(t, 0, code, stderr.String())
		assert.Len(t, calls.take(), 24)
		assert.Len(t, readResults(t, out), 24)
		assert.Equal(t, int32(4), most.Load(), "four calls at a time, never more")
		assert.Equal(t, 6*serviceTime, time.Since(start), "24 calls, four at a time")
	})
}

// A dry run checks a thousand lines of four kinds, files included, and
// sends nothing (its speed is BenchmarkBatch's, in bench/).
func TestBatchChecksAThousandLinesAndSendsNothing(t *testing.T) {
	srv, env := fakeEnv(t)
	dir := t.TempDir()
	require.NoError(t, os.Rename(pngFile(t, 16, 16), filepath.Join(dir, "cat.png")))
	require.NoError(t, os.Rename(writeWAV(t), filepath.Join(dir, "talk.wav")))
	kinds := []string{
		`{"op":"image/text-to-image","prompt":"job %d","styleId":"anime"}`,
		`{"op":"image/re-imagine","image":"cat.png","id":"r%d"}`,
		`{"op":"audio/split-audio","audio":"talk.wav","id":"s%d"}`,
		`{"op":"audio/text-to-speech","prompt":"line %d","voiceId":"female 1"}`,
	}
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, kinds[i%len(kinds)]+"\n", i)
	}
	path := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	code, stdout, stderr := runCLI(t, env, "batch", path, "--dry-run")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "1000 calls would be made")
	assert.Empty(t, srv.Requests(), "nothing was sent")
}

// A ledger that cannot be opened stops the run before any job, with exit
// status 2 since nothing was sent: the run that fails while it goes is in
// package sqliteledger's tests.
func TestBatchStopsAtOnceWhenTheLedgerCannotBeWritten(t *testing.T) {
	srv, env := fakeEnv(t)
	path := writeJobs(t, 8)
	out := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(out, "ledger.db", "in the way"), 0o755))
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out, "--concurrency", "2")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "ledger.db")
	assert.Empty(t, srv.Requests(), "no job is sent without its claim")
	_, err := os.Stat(filepath.Join(out, "results.jsonl"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "nothing is created")
}

// A key the service refuses stops the batch at its first answer: one
// request, not one a line; the summary says why, and the exit status is 1.
func TestBatchARefusedKeyStopsTheRun(t *testing.T) {
	srv := creativetest.NewServer()
	defer srv.Close()
	path := writeJobs(t, 30)
	out := filepath.Join(t.TempDir(), "out")
	env := map[string]string{"CREATIVE_BASE_URL": srv.URL, "CREATIVE_ACCESS_KEY": "not-the-key"}
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out, "--concurrency", "1")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "stopped: the service refused the access key (HTTP Unauthorized)")
	assert.Len(t, srv.Requests(), 1, "one request, not thirty: %s", stderr)
	assert.NotContains(t, stderr, "not-the-key")
}
