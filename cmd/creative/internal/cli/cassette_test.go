package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/creativetest/cassette"
)

// A script and a batch recorded once replay with no call, no key and no
// base URL. A script of several commands records in record-missing mode:
// record would start the cassette anew at each command.
func TestCommandsAndBatchRecordOnceAndReplayWithNoCall(t *testing.T) {
	srv, env := fakeEnv(t)
	dir := t.TempDir()
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf(`{"op":"image/generate-qr","url":"https://e.example/%d","prompt":"p"}`, i))
	}
	jobs := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(strings.Join(lines, "\n")), 0o644))
	cas := filepath.Join(dir, "cassette")
	script := func(t *testing.T, env map[string]string, out string) {
		t.Helper()
		code, _, stderr := runCLI(t, env, "audio", "text-to-music", "--prompt", "jazz", "--out", out)
		require.Equal(t, 0, code, stderr)
		code, _, stderr = runCLI(t, env, "batch", jobs, "--out", filepath.Join(out, "batch"))
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stderr, "creative: batch: 20 done in ")
	}
	env[cassette.EnvCassette], env[cassette.EnvMode] = cas, "record-missing"
	recorded := filepath.Join(dir, "recorded")
	script(t, env, recorded)
	paid := srv.Count("image/generate-qr") + srv.Count("audio/text-to-music")
	require.Equal(t, 21, paid)
	srv.Reset()

	replayed := filepath.Join(dir, "replayed")
	script(t, map[string]string{cassette.EnvCassette: cas}, replayed)
	assert.Empty(t, srv.Requests(), "the replay sent requests")
	media := func(root string) map[string]string {
		out := map[string]string{}
		require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && (filepath.Ext(p) == ".png" || filepath.Ext(p) == ".wav") {
				rel, _ := filepath.Rel(root, p)
				out[rel] = readFile(t, p)
			}
			return err
		}))
		return out
	}
	want, got := media(recorded), media(replayed)
	assert.Len(t, want, 21)
	assert.Equal(t, want, got)
}
