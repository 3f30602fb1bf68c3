package cli

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

// A file at the name an output takes that the folder's ledger does not
// know (an answer of a run whose ledger was lost, or of one killed before
// it recorded it) is kept beside it, never written over: the run is done,
// and both answers are there.
func TestABatchKeepsAFileAtItsOutputsNameThatTheLedgerDoesNotKnow(t *testing.T) {
	srv, env := fakeEnv(t)
	dir := t.TempDir()
	line := func(id string) string {
		return `{"op":"audio/text-to-speech","prompt":"hi","voiceId":"female-1","id":"` + id + `"}` + "\n"
	}
	other, jobs := filepath.Join(dir, "other.jsonl"), filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(other, []byte(line("other")), 0o644))
	require.NoError(t, os.WriteFile(jobs, []byte(line("hello")), 0o644))

	// The name the job's output takes, from a run of its own.
	first := filepath.Join(dir, "first")
	output := outputName(t, env, jobs, first, "hello-")
	answer := readFile(t, filepath.Join(first, output))

	// A folder with a ledger (of another job), and a file at that name.
	out := filepath.Join(dir, "out")
	code, _, stderr := runCLI(t, env, "batch", other, "--out", out)
	require.Equal(t, 0, code, stderr)
	require.NoError(t, os.WriteFile(filepath.Join(out, output), []byte("paid before"), 0o644))
	srv.Reset()

	code, _, stderr = runCLI(t, env, "batch", jobs, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 1, srv.Count("audio/text-to-speech"))
	assert.Equal(t, answer, readFile(t, filepath.Join(out, output)), "the new answer takes the name")
	ext := filepath.Ext(output)
	aside := strings.TrimSuffix(output, ext) + ".earlier-1" + ext
	assert.Equal(t, "paid before", readFile(t, filepath.Join(out, aside)), "the earlier file is kept")
}

// outputName runs the batch jobs into the folder out and returns the name
// of the file it wrote there that starts with prefix.
func outputName(t *testing.T, env map[string]string, jobs, out, prefix string) string {
	t.Helper()
	code, _, stderr := runCLI(t, env, "batch", jobs, "--out", out)
	require.Equal(t, 0, code, stderr)
	es, err := os.ReadDir(out)
	require.NoError(t, err)
	for _, e := range es {
		if strings.HasPrefix(e.Name(), prefix) {
			return e.Name()
		}
	}
	t.Fatalf("the run wrote no file %s... in %s", prefix, out)
	return ""
}

// An answer the check refuses (an SVG for an image call) is kept as
// <stem>.rejected.<ext>, its record names it, batch status lists it, and
// a rerun checks it again without paying.
func TestABatchKeepsARefusedAnswerAndStatusListsIt(t *testing.T) {
	srv, env := fakeEnv(t)
	svg := `<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>`
	srv.Handle(creativetest.OpTextToImage, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"success":true,"message":"ok","data":[{"base64":%q}]}`, base64.StdEncoding.EncodeToString([]byte(svg)))
	})
	jobs := writeJobs(t, 1)
	out := t.TempDir()
	code, _, stderr := runCLI(t, env, "batch", jobs, "--out", out)
	assert.Equal(t, exitAPI, code, stderr)
	assert.Contains(t, stderr, "1 answer not what their operation promises, kept as *.rejected.* files")
	kept, err := filepath.Glob(filepath.Join(out, "000001-text-to-image-*.rejected.bin"))
	require.NoError(t, err)
	require.Len(t, kept, 1)
	assert.Equal(t, svg, readFile(t, kept[0]))
	recs := readResults(t, out)
	require.Len(t, recs, 1)
	assert.Equal(t, batch.Answered, recs[0].State)
	assert.Contains(t, recs[0].Error, "kept as "+filepath.Base(kept[0]))

	code, stdout, stderr := runCLI(t, env, "batch", "status", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "answers kept as rejected")
	assert.Contains(t, stdout, filepath.Base(kept[0]))

	code, _, stderr = runCLI(t, env, "batch", jobs, "--out", out)
	assert.Equal(t, exitAPI, code, stderr)
	assert.Len(t, srv.Requests(), 1, "the rerun checked it again and paid nothing")
	assert.FileExists(t, kept[0])
	recs = readResults(t, out)
	require.Len(t, recs, 2)
	again := recs[1]
	assert.Equal(t, batch.Answered, again.State, "checked again from the folder, still refused")
	assert.False(t, again.Lost)
	assert.Contains(t, again.Error, "kept as "+filepath.Base(kept[0]))
}
