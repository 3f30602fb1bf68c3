package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/creativetest"
)

func TestOutDashWritesTheOneResultToStdout(t *testing.T) {
	srv, env := fakeEnv(t)
	tests := []struct {
		name  string
		args  []string
		magic func([]byte) bool
	}{
		{"speech, as it streams", []string{"audio", "text-to-speech", "--prompt", "Hello", "--voice-id", "female-1"},
			func(b []byte) bool {
				return bytes.HasPrefix(b, []byte("ID3")) || len(b) > 1 && b[0] == 0xff && b[1]&0xe0 == 0xe0
			}},
		{"one image of a list", []string{"image", "text-to-image", "--prompt", "a fox"}, isPNG},
		{"an image", []string{"image", "generate-qr", "--url", "https://example.com", "--prompt", "flowers"}, isPNG},
		{"a generated file, downloaded", []string{"audio", "text-to-music", "--prompt", "piano", "--duration", "1"},
			func(b []byte) bool { return len(b) > 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WAVE" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			code, stdout, stderr := runCLI(t, env, append(tt.args, "--out", "-")...)
			require.Equal(t, 0, code, stderr)
			assert.Empty(t, stderr)
			assert.True(t, tt.magic([]byte(stdout)), "stdout starts with % x", []byte(stdout)[:min(16, len(stdout))])
			entries, err := os.ReadDir(".")
			require.NoError(t, err)
			assert.Empty(t, entries, "no file and no directory named -")
		})
	}
	t.Run("the image on stdout is the one the service made", func(t *testing.T) {
		srv.Reset()
		code, stdout, stderr := runCLI(t, env, "image", "generate-qr", "--url", "https://example.com", "--prompt", "flowers", "--out", "-")
		require.Equal(t, 0, code, stderr)
		code, asJSON, stderr := runCLI(t, env, "image", "generate-qr", "--url", "https://example.com", "--prompt", "flowers", "--json")
		require.Equal(t, 0, code, stderr)
		var got []jsonImage
		require.NoError(t, json.Unmarshal([]byte(asJSON), &got))
		require.Len(t, got, 1)
		assert.Equal(t, got[0].Base64, []byte(stdout))
		assert.Equal(t, 2, srv.Count("image/generate-qr"))
	})
}

func TestOutDashRefusesToWriteBytesOnATerminal(t *testing.T) {
	srv, env := fakeEnv(t)
	onTerminal := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, stdoutTerminal: true}
		return a.run(args), stdout.String(), stderr.String()
	}
	for _, tt := range []struct {
		name string
		args []string
		file string
	}{
		{"speech", []string{"audio", "text-to-speech", "--prompt", "Hello", "--voice-id", "female-1"}, "text-to-speech.mp3"},
		{"an image", []string{"image", "generate-qr", "--url", "https://example.com", "--prompt", "flowers"}, "generate-qr.png"},
		{"a generated file", []string{"audio", "text-to-music", "--prompt", "piano", "--duration", "1"}, "text-to-music.wav"},
		{"a video", []string{"video", "infinite-zoom", "--prompt", "a galaxy"}, "infinite-zoom.mp4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := onTerminal(append(tt.args, "--out", "-")...)
			assert.Equal(t, 2, code)
			assert.Equal(t, "creative: binary output to a terminal: redirect it (> "+tt.file+") or pipe it (| mpv -), or give --out a directory\n", stderr)
			assert.Empty(t, stdout)
			assert.Empty(t, srv.Requests(), "nothing was sent")
		})
	}
	t.Run("--fake starts nothing either", func(t *testing.T) {
		code, _, stderr := onTerminal("--fake", "image", "generate-qr", "--url", "https://example.com", "--prompt", "p", "--out", "-")
		assert.Equal(t, 2, code)
		assert.NotContains(t, stderr, "using the built-in fake service")
	})
	t.Run("text is written on a terminal as it is", func(t *testing.T) {
		for _, args := range [][]string{
			{"image", "generate-qr", "--url", "https://example.com", "--prompt", "p", "--out", "-", "--json"},
			{"audio", "text-to-music", "--prompt", "piano", "--duration", "1", "--out", "-", "--no-download"},
			{"text", "writer-tool", "--job-role", "r", "--job-skills", "s", "--language", "en", "--tone", "t", "--out", t.TempDir()},
		} {
			code, stdout, stderr := onTerminal(args...)
			require.Equal(t, 0, code, "%v: %s", args, stderr)
			assert.NotEmpty(t, stdout, "%v", args)
		}
		assert.Len(t, srv.Requests(), 3)
	})
}

// TestOutDashWritesToDevNull: /dev/null is a character device and no
// terminal, and what is written there is meant to be dropped: --out - on
// it runs the call and writes the result, as on a pipe or a file.
func TestOutDashWritesToDevNull(t *testing.T) {
	srv, env := fakeEnv(t)
	for _, tt := range []struct {
		name, op string
		args     []string
	}{
		{"speech", "audio/text-to-speech", []string{"audio", "text-to-speech", "--prompt", "Hello", "--voice-id", "female-1"}},
		{"an image", "image/generate-qr", []string{"image", "generate-qr", "--url", "https://example.com", "--prompt", "flowers"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			require.NoError(t, err)
			defer devNull.Close()
			stderr, err := os.CreateTemp(t.TempDir(), "stderr")
			require.NoError(t, err)
			defer stderr.Close()
			a := newApp(devNull, stderr, func(k string) string { return env[k] }, nil, testBuckets)
			written := &countingWriter{w: a.stdout}
			a.stdout = written
			code := a.run(append(tt.args, "--out", "-"))
			said, err := os.ReadFile(stderr.Name())
			require.NoError(t, err)
			require.Equal(t, 0, code, "%s", said)
			assert.Empty(t, string(said))
			assert.Positive(t, written.n, "the result was written to /dev/null")
			assert.Equal(t, 1, srv.Count(tt.op))
			entries, err := os.ReadDir(".")
			require.NoError(t, err)
			assert.Empty(t, entries, "no file and no directory named -")
		})
	}
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int
}

func TestIsTerminalTellsATerminalFromOtherFiles(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer devNull.Close()
	assert.False(t, isTerminal(devNull), "/dev/null")

	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	require.NoError(t, err)
	defer file.Close()
	assert.False(t, isTerminal(file), "a file")

	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, isTerminal(w), "a pipe")

	if runtime.GOOS != "linux" {
		t.Skip("a pseudo-terminal is opened here only on Linux")
	}
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	assert.True(t, isTerminal(ptmx), "a pseudo-terminal")
}

func TestFakeLinksAreSaidToDieWithTheFake(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "--fake", "--no-download", "audio", "text-to-music", "--prompt", "piano", "--duration", "1")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/files/\S+\.wav\n$`, stdout)
	assert.Contains(t, stderr, "creative: these links are served by the built-in fake service, which stops when this command ends: they will not open afterwards")

	_, env := fakeEnv(t)
	code, _, stderr = runCLI(t, env, "--no-download", "audio", "text-to-music", "--prompt", "piano", "--duration", "1")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr, "a real service's links need no warning")
}

func TestOutDashKeepsTheProgressDisplayOffStdout(t *testing.T) {
	_, env := fakeEnv(t, creativetest.WithLatency(300*time.Millisecond))
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, progress: true}
	code := a.run([]string{"audio", "text-to-speech", "--prompt", "Hello", "--voice-id", "female-1", "--out", "-"})
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stderr.String(), "audio/text-to-speech", "the display showed on stderr")
	b := stdout.Bytes()
	assert.True(t, bytes.HasPrefix(b, []byte("ID3")) || len(b) > 1 && b[0] == 0xff && b[1]&0xe0 == 0xe0, "audio on stdout, got % x", b[:min(8, len(b))])
	assert.NotContains(t, stdout.String(), "\033[", "no display codes in the audio")
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}
