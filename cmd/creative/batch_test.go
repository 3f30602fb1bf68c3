package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
func readResults(t *testing.T, dir string) []record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, resultsFile))
	require.NoError(t, err)
	var out []record
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r record
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

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), tempPrefix), "temporary file %s left", e.Name())
	}
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
	require.NoError(t, os.WriteFile(path, []byte(jobs), 0o644))
	out := filepath.Join(t.TempDir(), "out")

	code, stdout, stderr := runCLI(t, env, "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr+readFile(t, filepath.Join(out, resultsFile)))
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "creative: batch: 6 ok, 0 failed in ")
	recs := readResults(t, out)
	require.Len(t, recs, 6)
	byLine := map[int]record{}
	for _, r := range recs {
		assert.True(t, r.OK, "%+v", r)
		assert.Equal(t, 1, r.Attempts)
		assert.Len(t, r.Hash, 64)
		byLine[r.Line] = r
	}
	assert.Equal(t, record{Line: 1, ID: "fox", Op: "image/text-to-image", OK: true, Files: []string{"fox-1.png", "fox-2.png"}, Attempts: 1}, withoutTimes(byLine[1]))
	assert.Equal(t, []string{"2.mp3"}, byLine[2].Files)
	assert.Equal(t, []string{"4.png"}, byLine[4].Files)
	assert.Equal(t, []string{"5-1.wav", "5-2.wav"}, byLine[5].Files)
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
	require.Eventually(t, func() bool { return len(srv.Requests()) == 6 }, 5*time.Second, time.Millisecond)
}

func withoutTimes(r record) record { r.Seconds, r.Hash = 0, ""; return r }

func TestBatchChecksEveryLineBeforeSendingAnything(t *testing.T) {
	srv, env := fakeEnv(t)
	dir := t.TempDir()
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
	}
	path := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644))
	for _, dry := range []bool{false, true} {
		args := []string{"batch", path, "--out", t.TempDir()}
		if dry {
			args = append(args, "--dry-run")
		}
		code, stdout, stderr := runCLI(t, env, args...)
		assert.Equal(t, 2, code)
		assert.Empty(t, stdout)
		for _, want := range []string{
			":2: unknown op \"image/text-to-imag\"; did you mean \"image/text-to-image\"?",
			":3: image/text-to-image: numberOfResults must be between 1 and 10, got 11",
			":4: image/text-to-image takes no field \"colour\"",
			":5: image/re-imagine: image: cannot be read",
			":6: audio/text-to-speech: voiceId: ids: unknown voice \"robot\"",
			":7: image/generate-qr: url must be an absolute http or https URL",
			":8: image/generate-qr: prompt is required",
			":9: image/text-to-image: numberOfResults: must be a number",
			":10: \"id\" must be a string of letters",
			":12: id \"a\" is also the id of line 11",
			":13: not a JSON object",
			"creative: batch: 11 bad lines in " + path + "; nothing was sent",
		} {
			assert.Contains(t, stderr, want)
		}
		assert.NotContains(t, stderr, ":1:")
		assert.NotContains(t, stderr, ":11:")
		assert.Empty(t, srv.Requests(), "nothing was sent")
	}
}

func TestBatchDryRunCountsTheCalls(t *testing.T) {
	srv, env := fakeEnv(t)
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat(`{"op":"image/generate-logo","prompt":"p"}`+"\n", 3)+
		`{"op":"video/infinite-zoom","prompt":"p"}`+"\n"), 0o644))
	code, stdout, stderr := runCLI(t, env, "batch", path, "--dry-run")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `image/generate-logo +3\n`, stdout)
	assert.Regexp(t, `video/infinite-zoom +1\n`, stdout)
	assert.Contains(t, stdout, "4 calls would be made (4 jobs checked, 0 already recorded ok); nothing was sent")
	code, stdout, _ = runCLI(t, env, "batch", path, "--dry-run", "--shard", "1/2")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "2 calls would be made in shard 1/2")
	assert.Empty(t, srv.Requests())
}

func TestBatchRerunSendsExactlyTheFailedJobs(t *testing.T) {
	srv, env := fakeEnv(t)
	path := writeJobs(t, 24)
	out := t.TempDir()
	srv.Fail("image/text-to-image", creativetest.Fault{Status: 400, Message: "prompt: refused", Times: 5})
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out, "--concurrency", "4")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "creative: batch: 19 ok, 5 failed in ")
	assert.Contains(t, stderr, "creative: batch: 5 of 24 jobs failed; rerun to retry them")
	var failed []string
	for _, r := range readResults(t, out) {
		if !r.OK {
			assert.Regexp(t, `^image/text-to-image: HTTP 400: prompt: refused \(request id req-\d+\)$`, r.Error)
			assert.Equal(t, 1, r.Attempts, "a 400 is not retried")
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
	assert.Contains(t, stderr, "creative: batch: 5 ok, 0 failed, 19 skipped (recorded ok before)")

	code, _, stderr = runCLI(t, env, "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, calls.take(), "a paid call is not repeated")
	assert.Contains(t, stderr, "nothing to do: 24 jobs already recorded ok")

	// An edited line is a new job.
	data, _ := os.ReadFile(path)
	require.NoError(t, os.WriteFile(path, bytes.Replace(data, []byte(`"job 7"`), []byte(`"job 7, bluer"`), 1), 0o644))
	code, _, stderr = runCLI(t, env, "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, []string{"job 7, bluer"}, calls.take())
	entries, _ := os.ReadDir(out)
	assert.Len(t, entries, 24+1+1, "24 images, the edited job's second one and results.jsonl")
}

func TestBatchRetriesShowInAttempts(t *testing.T) {
	srv, env := fakeEnv(t)
	path := writeJobs(t, 1)
	out := t.TempDir()
	srv.Fail("image/text-to-image", creativetest.Fault{Status: 503, Times: 2})
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr)
	recs := readResults(t, out)
	require.Len(t, recs, 1)
	assert.Equal(t, 3, recs[0].Attempts)
	assert.True(t, recs[0].OK)
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
}

// pngAnswer is a text-to-image answer of one tiny PNG.
const pngAnswer = `{"success":true,"message":"ok","data":[{"base64":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}]}`

func TestBatchCtrlCLetsCallsInFlightFinishAndTheRerunRepeatsNone(t *testing.T) {
	srv, env := fakeEnv(t)
	path := writeJobs(t, 24)
	out := t.TempDir()
	signals := make(chan os.Signal, 2)
	calls := watchPrompts(srv)
	calls.hook = func(n int, _ *http.Request) {
		if n == 6 {
			signals <- os.Interrupt // Ctrl-C while this call is in flight
		}
	}
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, signals: signals}
	code := a.run([]string{"batch", path, "--out", out, "--concurrency", "4"})
	assert.Equal(t, 130, code, stderr.String())
	assert.Contains(t, stderr.String(), "creative: batch: stopping: letting")
	assert.Contains(t, stderr.String(), "not started")
	assert.True(t, strings.HasSuffix(stderr.String(), "creative: interrupted\n"))
	first := calls.take()
	recs := readResults(t, out)
	assert.Len(t, recs, len(first), "every call made was recorded")
	for _, r := range recs {
		assert.True(t, r.OK, "calls in flight finished: %+v", r)
	}
	assert.Less(t, len(first), 24, "the batch stopped starting jobs")
	noTempFiles(t, out)

	calls.hook = nil
	code, _, errs := runCLI(t, env, "batch", path, "--out", out, "--concurrency", "4")
	require.Equal(t, 0, code, errs)
	second := calls.take()
	assert.Len(t, second, 24-len(first), "the rerun sends only the jobs not done")
	for _, p := range second {
		assert.NotContains(t, first, p, "no call repeated")
	}
	assert.Len(t, readResults(t, out), 24)
	t.Logf("Ctrl-C at the 6th call: %d calls made, the rerun made %d", len(first), len(second))
}

func TestBatchSecondCtrlCCancelsTheCallsInFlight(t *testing.T) {
	srv, env := fakeEnv(t)
	path := writeJobs(t, 8)
	out := t.TempDir()
	signals := make(chan os.Signal, 2)
	calls := watchPrompts(srv)
	calls.hook = func(n int, r *http.Request) {
		if n == 2 {
			signals <- os.Interrupt
			signals <- os.Interrupt
		}
		<-r.Context().Done() // never answers: only cancelling ends it
	}
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, signals: signals}
	code := a.run([]string{"batch", path, "--out", out, "--concurrency", "2"})
	assert.Equal(t, 130, code, stderr.String())
	assert.Contains(t, stderr.String(), "cancelling the calls in flight")
	recs := readResults(t, out)
	require.Len(t, recs, 2)
	for _, r := range recs {
		assert.False(t, r.OK)
		assert.Contains(t, r.Error, "context canceled")
	}
	noTempFiles(t, out)
}

func TestBatchProgressOnATerminal(t *testing.T) {
	_, env := fakeEnv(t)
	path := writeJobs(t, 6)
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, progress: true}
	code := a.run([]string{"batch", path, "--out", t.TempDir(), "--concurrency", "2"})
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stderr.String(), "creative: batch: 6 ok, 0 failed in ")
	assert.True(t, strings.HasSuffix(stderr.String(), "results.jsonl\n"))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, _ := os.ReadFile(path)
	return string(b)
}

func TestBatchRunsJobsConcurrently(t *testing.T) {
	const serviceTime = 100 * time.Millisecond
	srv, env := fakeEnv(t)
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
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out, "--concurrency", "4")
	took := time.Since(start)
	require.Equal(t, 0, code, stderr)
	assert.Len(t, calls.take(), 24)
	assert.Len(t, readResults(t, out), 24)
	assert.Equal(t, int32(4), most.Load(), "four calls at a time, never more")
	t.Logf("24 jobs at concurrency 4, %v per call: %v, 24 calls", serviceTime, took.Round(time.Millisecond))
}

func TestBatchDownloadsAgainWithoutPayingAgain(t *testing.T) {
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
		recs := readResults(t, out)
		require.Len(t, recs, run)
		last := recs[run-1]
		assert.False(t, last.OK)
		assert.Equal(t, []string{srv.URL + "/files/gone.wav"}, last.URLs)
		assert.Contains(t, last.Error, "the call succeeded but its files were not all downloaded")
		assert.Contains(t, last.Error, "HTTP 404")
	}
	assert.Equal(t, int32(1), calls.Load(), "the paid call was made once")
	code, stdout, _ := runCLI(t, env, "batch", path, "--out", out, "--dry-run")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "0 calls would be made (1 jobs checked, 0 already recorded ok, 1 paid for but not downloaded)")
	noTempFiles(t, out)
}

func TestBatchChecksAThousandLinesQuickly(t *testing.T) {
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
	start := time.Now()
	code, stdout, stderr := runCLI(t, env, "batch", path, "--dry-run")
	took := time.Since(start)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "1000 calls would be made")
	assert.Empty(t, srv.Requests(), "nothing was sent")
	// Each line's check stops at the first attempt, with no retry and no
	// backoff: a retried check would take seconds a line.
	assert.Less(t, took, 5*time.Second)
	t.Logf("1000 lines checked in %v", took.Round(time.Millisecond))
}

// stamps answers the calls of text-to-image with one small PNG, or as
// fail says for the call numbered n (from 1), and keeps the time each call
// arrived.
type stamps struct {
	mu    sync.Mutex
	times []time.Time
}

func stampCalls(srv *creativetest.Server, fail func(n int, w http.ResponseWriter) bool) *stamps {
	s := &stamps{}
	srv.Handle("image/text-to-image", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.times = append(s.times, time.Now())
		n := len(s.times)
		s.mu.Unlock()
		if fail != nil && fail(n, w) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, pngAnswer)
	})
	return s
}

func (s *stamps) all() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.times)
}

func TestBatchRateSpacesEveryAttemptRetriesIncluded(t *testing.T) {
	const rate = 10
	srv, env := fakeEnv(t)
	calls := stampCalls(srv, func(n int, w http.ResponseWriter) bool {
		if n <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable) // retried after a short backoff
			return true
		}
		return false
	})
	path := writeJobs(t, 5)
	out := t.TempDir()
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out, "--concurrency", "4", "--rate", fmt.Sprint(rate))
	require.Equal(t, 0, code, stderr)
	times := calls.all()
	require.Len(t, times, 7, "five jobs, two of them retried")
	// One request at a time, 1/rate apart: the limiter's tokens, with
	// room for the time a request takes to arrive on a busy machine.
	for i := 1; i < len(times); i++ {
		assert.Greater(t, times[i].Sub(times[i-1]), time.Second/rate/2, "requests %d and %d", i, i+1)
	}
	assert.Greater(t, times[len(times)-1].Sub(times[0]), 6*time.Second/rate-50*time.Millisecond)
	attempts := 0
	for _, r := range readResults(t, out) {
		attempts += r.Attempts
	}
	assert.Equal(t, 7, attempts)
}

func TestBatchCtrlCStopsTheJobsWaitingForTheRate(t *testing.T) {
	srv, env := fakeEnv(t)
	signals := make(chan os.Signal, 2)
	calls := stampCalls(srv, func(n int, _ http.ResponseWriter) bool {
		if n == 1 {
			signals <- os.Interrupt            // three workers now wait for a token
			time.Sleep(200 * time.Millisecond) // and this call is in flight
		}
		return false
	})
	path := writeJobs(t, 12)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, signals: signals}
	start := time.Now()
	code := a.run([]string{"batch", path, "--out", out, "--concurrency", "4", "--rate", "0.5"})
	took := time.Since(start)
	assert.Equal(t, 130, code, stderr.String())
	assert.Len(t, calls.all(), 1, "no job waiting for the rate was sent after Ctrl-C")
	assert.Contains(t, stderr.String(), "creative: batch: stopping: letting 1 calls in flight finish")
	assert.Contains(t, stderr.String(), "creative: batch: 1 ok, 0 failed, 11 not started")
	assert.Less(t, took, time.Second, "the waits for tokens ended at Ctrl-C: the next token was 2s away")
	recs := readResults(t, out)
	assert.Len(t, recs, 1, "the stopped jobs are not recorded: a rerun runs them")
	noTempFiles(t, out)
}

func TestBatchA429PausesEveryWorker(t *testing.T) {
	srv, env := fakeEnv(t)
	var pausedAt atomic.Int64 // when the 429 was answered
	calls := stampCalls(srv, func(n int, w http.ResponseWriter) bool {
		if n == 3 {
			pausedAt.Store(time.Now().UnixNano())
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		}
		return false
	})
	path := writeJobs(t, 24)
	out := t.TempDir()
	start := time.Now()
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out, "--concurrency", "4")
	took := time.Since(start)
	require.Equal(t, 0, code, stderr)
	times := calls.all()
	require.Len(t, times, 25, "24 jobs, one of them retried")
	paused := time.Unix(0, pausedAt.Load())
	// Requests sent before the client read the 429 may still arrive just
	// after it; past that, the client lets at most one through until the
	// second it asked for is over.
	during := 0
	for _, at := range times {
		if d := at.Sub(paused); d > 100*time.Millisecond && d < time.Second-50*time.Millisecond {
			during++
		}
	}
	assert.LessOrEqual(t, during, 1, "requests in the paused second, across workers")
	assert.Greater(t, took, time.Second-50*time.Millisecond)
	retried := 0
	for _, r := range readResults(t, out) {
		assert.True(t, r.OK)
		if r.Attempts == 2 {
			retried++
		}
	}
	assert.Equal(t, 1, retried)
	t.Logf("24 jobs at concurrency 4 with a 429 asking for 1s: %v; %d requests in the paused second", took.Round(time.Millisecond), during)
}
