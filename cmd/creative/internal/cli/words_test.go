package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A folder --out that cannot be used is reported in the words of the
// person who named it: what the path is, or why the folder cannot be
// made, without the system call or a package of the program.
func TestAnOutThatIsNoFolderIsSaidPlainly(t *testing.T) {
	srv, env := fakeEnv(t)
	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	qr := []string{"image", "generate-qr", "--url", "https://e.example", "--prompt", "p", "--out"}
	tests := []struct {
		name, out, want string
	}{
		{"a file", file, "creative: --out: " + file + " is not a folder\n"},
		{"a folder under a file", filepath.Join(file, "x"), "creative: --out: cannot create folder " + filepath.Join(file, "x") + ": " + file + " is not a folder\n"},
	}
	if runtime.GOOS == "linux" {
		tests = append(tests, struct{ name, out, want string }{"a folder where none can be made", "/proc/nope", "creative: --out: cannot create folder /proc/nope: no such file or directory\n"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, env, append(qr, tt.out)...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Equal(t, tt.want, stderr)
		})
	}
	assert.Zero(t, srv.Count("image/generate-qr"), "nothing was sent")
}

// A number given as 0 is refused before anything is sent: a request leaves
// a 0 out, so it would go as the default, not as what was asked.
func TestAnExplicitZeroIsRefusedNotSentAsTheDefault(t *testing.T) {
	srv, env := fakeEnv(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"image", "text-to-image", "--prompt", "p", "--number-of-results", "0"}, "--number-of-results must be above 0, got 0: leave it out for the default (1)"},
		{[]string{"image", "generate-logo", "--prompt", "p", "--number-of-results", "0"}, "--number-of-results must be above 0, got 0: leave it out for the default (1)"},
		{[]string{"audio", "text-to-music", "--prompt", "p", "--duration", "0"}, "--duration must be above 0, got 0: leave it out for the default (8)"},
		{[]string{"video", "infinite-zoom", "--prompt", "p", "--number-of-iteration", "0"}, "--number-of-iteration must be above 0, got 0: leave it out for the default (2)"},
		{[]string{"image", "up-scale", "--url", "https://e.example/a.png", "--scale", "0"}, "--scale must be above 0, got 0: leave it out for the service's default"},
		{[]string{"text", "writer-tool", "--job-role", "r", "--job-skills", "s", "--language", "en", "--tone", "t", "--number", "0"}, "--number must be above 0, got 0: leave it out for the default (1)"},
	}
	for _, tt := range tests {
		t.Run(tt.args[1], func(t *testing.T) {
			code, stdout, stderr := runCLI(t, env, tt.args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Equal(t, "creative: "+tt.want+"\n", stderr)
		})
	}
	assert.Empty(t, srv.Requests(), "nothing was sent")
}

// With neither a base URL nor a key, both are asked for at once.
func TestNeitherBaseURLNorKeyIsOneError(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "image", "generate-qr", "--url", "https://e.example", "--prompt", "p", "--out", t.TempDir())
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "creative: no base URL and no access key: set CREATIVE_BASE_URL (or give --base-url) and CREATIVE_ACCESS_KEY, or try --fake\n", stderr)
}

// --fake says it is in use when a request goes to it, and not before: a
// usage error is the only line.
func TestTheFakesBannerComesWithTheFirstRequestOnly(t *testing.T) {
	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	qr := []string{"--fake", "image", "generate-qr", "--url", "https://e.example", "--prompt", "p", "--out"}
	code, _, stderr := runCLI(t, nil, append(qr, file)...)
	assert.Equal(t, 2, code)
	assert.Equal(t, "creative: --out: "+file+" is not a folder\n", stderr)

	code, _, stderr = runCLI(t, nil, append(qr, t.TempDir())...)
	assert.Equal(t, 0, code, stderr)
	assert.Regexp(t, `^creative: using the built-in fake service at http://127\.0\.0\.1:\d+\n$`, stderr)
}

// The writer's text is printed and saved under --out as a .txt file,
// named as other outputs are and never over a file, its path printed after
// the text; --out - prints it only, and --json writes no file.
func TestTheWritersTextIsSavedAsATextFileToo(t *testing.T) {
	srv, env := fakeEnv(t)
	out := t.TempDir()
	writer := []string{"text", "writer-tool", "--job-role", "r", "--job-skills", "s", "--language", "en", "--tone", "t", "--out"}
	code, stdout, stderr := runCLI(t, env, append(writer, out)...)
	require.Equal(t, 0, code, stderr)
	text, path, ok := strings.Cut(stdout, "\n"+filepath.Join(out, "writer-tool.txt"))
	require.True(t, ok, "the path follows the text: %q", stdout)
	assert.Equal(t, "\n", path, "the path ends the output")
	assert.Contains(t, text, "Dear Hiring")
	saved, err := os.ReadFile(filepath.Join(out, "writer-tool.txt"))
	require.NoError(t, err)
	assert.Equal(t, text+"\n", string(saved), "the file holds the text printed")

	code, stdout, stderr = runCLI(t, env, append(writer, out)...)
	require.Equal(t, 0, code, stderr)
	assert.True(t, strings.HasSuffix(stdout, "\n"+filepath.Join(out, "writer-tool-1.txt")+"\n"), "a taken name is never overwritten: %q", stdout)

	for _, extra := range [][]string{{"-"}, {out, "--json"}} {
		code, stdout, stderr = runCLI(t, env, append(writer, extra...)...)
		require.Equal(t, 0, code, stderr)
		assert.NotContains(t, stdout, ".txt", "%v", extra)
	}
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "two files, no temporary one left")
	assert.Equal(t, 4, srv.Count("text/writer-tool"))
}
