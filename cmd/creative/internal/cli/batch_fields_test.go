package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/internal/ops"
)

func TestBatchHelpPutsUsageAndFlagsFirst(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "batch", "--help")
	require.Equal(t, 0, code, stderr)
	assert.True(t, strings.HasPrefix(stdout, "Run a file of jobs, one JSON object per line, paying for each once\n\nUsage:\n  creative batch JOBS.jsonl [flags]\n  creative batch [command]\n"), stdout)
	flags := strings.Index(stdout, "\nFlags:\n")
	prose := strings.Index(stdout, "\nThe jobs file\n")
	require.Positive(t, flags)
	require.Positive(t, prose)
	assert.Less(t, flags, prose, "the flags come before the prose")
	assert.Less(t, strings.Index(stdout, "\nGlobal Flags:\n"), prose)
	assert.Contains(t, stdout, "  fields      List each operation's fields for a jobs file, with an example line\n")
	assert.Contains(t, stdout, "creative batch fields lists\n  every operation's fields")
}

func TestBatchFieldsListsEveryOperationWithALineThatBatchAccepts(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "batch", "fields")
	require.Equal(t, 0, code, stderr)
	blocks := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n\n")
	require.Len(t, blocks, len(ops.All))
	var examples []string
	for i, op := range ops.All {
		lines := strings.Split(blocks[i], "\n")
		require.Len(t, lines, len(op.Fields)+2, blocks[i])
		assert.Equal(t, op.Name+": "+op.Summary, lines[0])
		for j, f := range op.Fields {
			assert.Regexp(t, `^  `+f.Name+` +(text|number|url|id|path|array) +(required|optional|default \d+) `, lines[j+1])
		}
		example, ok := strings.CutPrefix(lines[len(lines)-1], "  e.g. ")
		require.True(t, ok, lines[len(lines)-1])
		assert.True(t, strings.HasPrefix(example, `{"op":"`+op.Name+`",`), example)
		examples = append(examples, example)
	}
	assert.Contains(t, blocks[0], `  e.g. {"op":"text/writer-tool","inputs":[{"jobRole":"Backend engineer","jobSkills":"Go, SQL"}],"language":"English","useCase":"CoverLetter","tone":"formal"}`)
	assert.Regexp(t, `\n  numberOfResults +number +default 1 +number of images, 1 to 10\n`, blocks[2])
	assert.Regexp(t, `\n  styleId +id +optional +style \(an id or its label: creative ids style\)\n`, blocks[2])

	// Every example line, in a jobs file beside the files it names, passes
	// batch's own check.
	dir := t.TempDir()
	png, err := os.ReadFile(pngFile(t, 16, 16))
	require.NoError(t, err)
	wav, err := os.ReadFile(writeWAV(t))
	require.NoError(t, err)
	for name, data := range map[string][]byte{"cat.png": png, "talk.wav": wav, "song.wav": wav} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	jobs := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(strings.Join(examples, "\n")+"\n"), 0o644))
	code, stdout, stderr = runCLI(t, nil, "batch", jobs, "--dry-run")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, fmt.Sprintf("%d calls would be made (%d jobs checked", len(ops.All), len(ops.All)))
}

func TestBatchFieldsOfOneOperation(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "batch", "fields", "audio/text-to-speech")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "audio/text-to-speech: speak a text in one of 20 voices\n"+
		"  prompt   text  required  text to speak\n"+
		"  voiceId  id    required  voice (an id or its label: creative ids voice)\n"+
		`  e.g. {"op":"audio/text-to-speech","prompt":"Hello there","voiceId":"female-1"}`+"\n", stdout)

	code, stdout, stderr = runCLI(t, nil, "batch", "fields", "text-to-imag")
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "creative: batch fields: no operation \"text-to-imag\"; did you mean \"image/text-to-image\"?\n", stderr)
}

// An operation no name is near: the library says what an operation is,
// and the command line where to find them.
func TestBatchPointsAnUnknownOperationAtTheHelp(t *testing.T) {
	srv, env := fakeEnv(t)
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"op":"qqqqqqqq/zzzzzzzzzz","prompt":"p"}`+"\n"), 0o644))
	code, _, stderr := runCLI(t, env, "batch", path, "--out", t.TempDir())
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, `op: unknown operation "qqqqqqqq/zzzzzzzzzz" (creative --help lists the operations)`)
	assert.Empty(t, srv.Requests())
}
