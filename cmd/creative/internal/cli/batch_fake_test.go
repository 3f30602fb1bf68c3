package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	summaryDone = regexp.MustCompile(`creative: batch: (\d+) done`)
	statusDone  = regexp.MustCompile(`(?m)^done\s+(\d+)$`)
)

// doneAgree runs batch status on out and checks that it counts as many
// jobs done as the summary in stderr, and returns that count.
func doneAgree(t *testing.T, env map[string]string, out, stderr string) int {
	t.Helper()
	m := summaryDone.FindStringSubmatch(stderr)
	require.NotNil(t, m, stderr)
	code, stdout, serr := runCLI(t, env, "batch", "status", "--out", out)
	require.Equal(t, 0, code, serr)
	s := statusDone.FindStringSubmatch(stdout)
	require.NotNil(t, s, stdout)
	assert.Equal(t, s[1], m[1], "the summary and batch status count the same jobs done:\n%s\n%s", stderr, stdout)
	n, _ := strconv.Atoi(m[1])
	return n
}

// After a run on a fake service that has ended, a rerun on the built-in
// fake says plainly that the links were that fake's and died with it
// (not that a rerun downloads them), pays the fake again for the image
// whose bytes came in the answer, and the next rerun for the music: free,
// on a fake. The summary and batch status count the same jobs done.
func TestBatchOnAFakeThatIsGoneSaysSoAndPaysTheFakeAgain(t *testing.T) {
	srv, env := fakeEnv(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"op":"image/text-to-image","id":"fox","prompt":"a fox"}`+"\n"+
		`{"op":"audio/text-to-music","id":"jazz","prompt":"jazz"}`+"\n"), 0o644))
	out := filepath.Join(dir, "out")
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 2, doneAgree(t, env, out, stderr))
	recs := readResults(t, out)
	require.Len(t, recs, 2)
	var files []string
	for _, r := range recs {
		require.NotEmpty(t, r.Files, "%+v", r)
		files = append(files, r.Files...)
		require.NoError(t, os.Remove(filepath.Join(out, r.Files[0])))
	}
	srv.Close() // the fake ends, and the music's links with it

	code, _, stderr = runCLI(t, env, "--fake", "batch", path, "--out", out)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "1 answered by a fake service that is gone: their links were that fake's and died with it (a rerun with --fake pays the fake again, which is free)")
	assert.NotContains(t, stderr, "waiting for a download")
	assert.Equal(t, 1, doneAgree(t, env, out, stderr), "the image paid for again on the fake")

	code, _, stderr = runCLI(t, env, "--fake", "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 2, doneAgree(t, env, out, stderr))
	for _, f := range files {
		assert.FileExists(t, filepath.Join(out, f))
	}
}

// A deleted file whose bytes came in the answer is not fetched again
// from anywhere: off the fake, the summary says so and that
// --repay-expired pays for it again, and still counts the job done as
// batch status does.
func TestBatchSaysAFileWhoseBytesCameInTheAnswerIsGone(t *testing.T) {
	srv, env := fakeEnv(t)
	path, out := writeJobs(t, 3), t.TempDir()
	code, _, stderr := runCLI(t, env, "batch", path, "--out", out)
	require.Equal(t, 0, code, stderr)
	recs := readResults(t, out)
	require.NotEmpty(t, recs[0].Files)
	require.Empty(t, recs[0].URLs, "the image's bytes came in the answer")
	require.NoError(t, os.Remove(filepath.Join(out, recs[0].Files[0])))
	calls := len(srv.Requests())

	code, _, stderr = runCLI(t, env, "batch", path, "--out", out)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "3 done (3 before this run), 1 of them whose files are gone: their bytes came in the answer, which is kept nowhere else (--repay-expired pays for them again)")
	assert.Equal(t, 3, doneAgree(t, env, out, stderr))
	assert.Equal(t, calls, len(srv.Requests()), "nothing paid")

	code, _, stderr = runCLI(t, env, "batch", path, "--out", out, "--repay-expired")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, calls+1, len(srv.Requests()), "paid once more, on the say-so")
	assert.FileExists(t, filepath.Join(out, recs[0].Files[0]))
}
