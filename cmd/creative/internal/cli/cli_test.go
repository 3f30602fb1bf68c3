package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/internal/ops"
)

// fakeEnv starts the fake service and returns the environment that points
// the command at it.
func fakeEnv(t *testing.T, opts ...creativetest.Option) (*creativetest.Server, map[string]string) {
	t.Helper()
	srv := creativetest.NewServer(opts...)
	t.Cleanup(srv.Close)
	return srv, map[string]string{"CREATIVE_BASE_URL": srv.URL, "CREATIVE_ACCESS_KEY": srv.AccessKey}
}

func TestHelpAtEveryLevelListsWhatIsBelow(t *testing.T) {
	t.Run("creative --help lists the areas, the operations grouped by area and the other commands", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, nil, "--help")
		require.Equal(t, 0, code, stderr)
		for _, want := range []string{"text", "audio", "image", "video", "batch", "completion", "ids", "version", "--fake", "--retries"} {
			assert.Contains(t, stdout, "  "+want)
		}
		// Each operation is listed once, under its area's heading.
		_, list, ok := strings.Cut(stdout, "Operations (creative <area> <operation>), by area:\n")
		require.True(t, ok, stdout)
		list, _, _ = strings.Cut(list, "\n\n")
		area, listed := "", map[string]int{}
		for _, line := range strings.Split(list, "\n") {
			if name, ok := strings.CutPrefix(line, "    "); ok {
				require.NotEmpty(t, area, "an operation before any area: %q", line)
				listed[area+"/"+strings.Fields(name)[0]]++
				continue
			}
			area = strings.TrimSpace(line)
		}
		for _, op := range ops.All {
			assert.Equal(t, 1, listed[op.Name], op.Name)
		}
		assert.Len(t, listed, len(ops.All))
	})
	t.Run("an area's help lists its operations and only those", func(t *testing.T) {
		for _, area := range []string{"text", "audio", "image", "video"} {
			code, stdout, stderr := runCLI(t, nil, area, "--help")
			require.Equal(t, 0, code, stderr)
			for _, op := range ops.All {
				if op.Area() == area {
					assert.Contains(t, stdout, "  "+op.Verb()+" ", area)
				} else if !strings.Contains(op.Verb(), "enhance") && !strings.Contains(op.Verb(), "remove-background") {
					assert.NotContains(t, stdout, "  "+op.Verb()+" ", area)
				}
			}
			assert.NotContains(t, stdout, "want <area> <operation>")
		}
	})
	t.Run("help works as a command too", func(t *testing.T) {
		code, stdout, _ := runCLI(t, nil, "help", "image")
		require.Equal(t, 0, code)
		assert.Contains(t, stdout, "text-to-image")
	})
	t.Run("an operation's help lists its flags, marks the required ones and offers only what applies", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, nil, "image", "text-to-image", "--help")
		require.Equal(t, 0, code, stderr)
		assert.Regexp(t, `--prompt string +text to turn into images \(required\)`, stdout)
		assert.Regexp(t, `--number-of-results number +number of images, 1 to 10 \(default 1\)`, stdout)
		assert.Contains(t, stdout, "--style-id id")
		assert.Contains(t, stdout, "--out string")
		assert.NotContains(t, stdout, "--no-download", "images are not downloaded")

		code, stdout, _ = runCLI(t, nil, "audio", "text-to-music", "--help")
		require.Equal(t, 0, code)
		assert.Contains(t, stdout, "--no-download")

		code, stdout, _ = runCLI(t, nil, "text", "writer-tool", "--help")
		require.Equal(t, 0, code)
		assert.Contains(t, stdout, "--out", "the writer's text is saved too")
		assert.Contains(t, stdout, "--job-role")

		code, stdout, _ = runCLI(t, nil, "audio", "text-to-speech", "-h")
		require.Equal(t, 0, code)
		assert.Regexp(t, `--voice-id id +voice \(an id or its label; see creative ids voice\) \(required\)`, stdout)
	})
	t.Run("batch's help shows its flags and the format of a line", func(t *testing.T) {
		code, stdout, _ := runCLI(t, nil, "batch", "--help")
		require.Equal(t, 0, code)
		for _, want := range []string{"--concurrency", "--rate", "--shard", "--dry-run", "--out", "results.jsonl", `"op"`} {
			assert.Contains(t, stdout, want)
		}
	})
	t.Run("creative or an area alone prints help on stderr and exits 2", func(t *testing.T) {
		for _, args := range [][]string{nil, {"image"}} {
			code, stdout, stderr := runCLI(t, nil, args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, "Usage:")
		}
	})
}

func TestUsageErrorsExit2AndSendNothing(t *testing.T) {
	srv, env := fakeEnv(t)
	img := pngFile(t, 8, 8)
	tests := []struct {
		name string
		args []string
		err  string
	}{
		{"a misspelt flag", []string{"image", "text-to-image", "--promt", "fox"}, "unknown flag: --promt (did you mean --prompt?)"},
		{"a misspelt flag before the words", []string{"--promt", "fox", "image", "text-to-image"}, "unknown flag: --promt (did you mean --prompt?)"},
		{"a flag that does not apply", []string{"image", "text-to-image", "--prompt", "fox", "--no-download"}, "unknown flag: --no-download"},
		{"a missing required flag", []string{"image", "generate-qr", "--prompt", "p"}, `required flag(s) "url" not set`},
		{"negative retries", []string{"--retries", "-1", "image", "generate-qr", "--url", "https://e.example", "--prompt", "p"}, "--retries must be 0 or more, got -1"},
		{"a negative timeout", []string{"image", "generate-qr", "--url", "https://e.example", "--prompt", "p", "--timeout", "-5s"}, "--timeout must be 0 (no bound) or more, got -5s"},
		{"a timeout that is no duration", []string{"image", "generate-qr", "--timeout", "soon"}, `invalid argument "soon" for "--timeout" flag`},
		{"a number that is no number", []string{"image", "text-to-image", "--prompt", "p", "--number-of-results", "two"}, `invalid argument "two" for "--number-of-results" flag: not a number`},
		{"a number that is not whole", []string{"image", "text-to-image", "--prompt", "p", "--number-of-results", "2.5"}, "--number-of-results must be a whole number, got 2.5"},
		{"an unknown area", []string{"imgae", "text-to-image"}, `unknown command "imgae" for "creative"; did you mean "creative image"?`},
		{"an unknown operation", []string{"image", "text-to-imag"}, `unknown command "text-to-imag" for "creative image"; did you mean "creative image text-to-image"?`},
		{"an unknown operation followed by its flags", []string{"image", "text-to-imag", "--prompt", "x"}, `unknown command "text-to-imag" for "creative image"; did you mean "creative image text-to-image"?`},
		{"an unknown area followed by flags", []string{"imgae", "text-to-image", "--prompt", "x"}, `unknown command "imgae" for "creative"; did you mean "creative image"?`},
		{"an operation spelt otherwise", []string{"image", "text2image", "--prompt", "x"}, `unknown command "text2image" for "creative image"; did you mean "creative image text-to-image"?`},
		{"an operation as batch names it", []string{"image/text-to-image", "--prompt", "x"}, `unknown command "image/text-to-image" for "creative"; did you mean "creative image text-to-image"?`},
		{"an area and an operation as one word", []string{"imagetext-to-image"}, `unknown command "imagetext-to-image" for "creative"; did you mean "creative image text-to-image"?`},
		{"an operation without its area", []string{"text2image"}, `unknown command "text2image" for "creative"; did you mean "creative image text-to-image"?`},
		{"an operation under another area", []string{"audio", "text-to-image"}, `unknown command "text-to-image" for "creative audio"; did you mean "creative image text-to-image"?`},
		{"an operation of two areas", []string{"enhance"}, `unknown command "enhance" for "creative"; did you mean "creative audio enhance" or "creative image enhance"?`},
		{"an operation of two areas, under one", []string{"image", "enhanc"}, `unknown command "enhanc" for "creative image"; did you mean "creative image enhance"?`},
		{"a shell without a completion script", []string{"completion", "tcsh"}, `no completion script for "tcsh": give one of bash, fish, powershell, zsh`},
		{"--fake with --base-url", []string{"--fake", "--base-url", "https://api.example", "image", "generate-qr", "--url", "https://e.example", "--prompt", "p"}, "--fake and --base-url cannot go together"},
		{"the writer without inputs", []string{"text", "writer-tool", "--language", "English", "--tone", "formal"}, "no inputs: give --job-role and --job-skills for a cover letter, or --inputs as a JSON array"},
		{"--out - for several images", []string{"image", "text-to-image", "--prompt", "p", "--number-of-results", "2", "--out", "-"}, "--out - writes one result to stdout, and --number-of-results 2 asks for more: give --out a directory"},
		{"--out - for the parts of a split", []string{"audio", "split-audio", "--audio", img, "--out", "-"}, "--out - writes one result to stdout, and split-audio makes several files"},
		{"a word after an operation", []string{"image", "re-imagine", "--image", img, "extra"}, `unexpected "extra"`},
		{"an image too big for re-imagine", []string{"image", "re-imagine", "--image", pngFile(t, 1025, 4)}, "image must be at most 1024x1024 pixels, got 1025x4"},
		{"an unknown kind of id", []string{"ids", "flavour"}, `unknown kind "flavour"`},
		{"batch without a file", []string{"batch"}, "want one JOBS.jsonl file"},
		{"batch with a bad shard", []string{"batch", "x.jsonl", "--shard", "3/3"}, "--shard must be I/N with 0 <= I < N"},
		{"batch with no workers", []string{"batch", "x.jsonl", "--concurrency", "0"}, "--concurrency must be 1 or more"},
		{"batch with a negative rate", []string{"batch", "x.jsonl", "--rate", "-1"}, "--rate must be 0 (no limit) or a positive number, got -1"},
		{"batch with an endless rate", []string{"batch", "x.jsonl", "--rate", "inf"}, "--rate must be 0 (no limit) or a positive number, got +Inf"},
		{"batch with a missing file", []string{"batch", filepath.Join(t.TempDir(), "none.jsonl")}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, env, tt.args...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, tt.err)
			assert.True(t, strings.HasPrefix(stderr, "creative: "), stderr)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			assert.Empty(t, stdout)
			assert.NotContains(t, stderr, "goroutine", "no panic")
			assert.Empty(t, srv.Requests(), "nothing was sent")
		})
	}
	t.Run("--fake with bad globals is a usage error too, not a panic", func(t *testing.T) {
		code, _, stderr := runCLI(t, nil, "--fake", "--retries", "-1", "image", "generate-qr", "--url", "https://e.example", "--prompt", "p")
		assert.Equal(t, 2, code)
		assert.Equal(t, "creative: --retries must be 0 or more, got -1\n", stderr)
	})
	t.Run("messages speak of flags and environment variables", func(t *testing.T) {
		code, _, stderr := runCLI(t, map[string]string{"CREATIVE_BASE_URL": "ftp://x", "CREATIVE_ACCESS_KEY": "k"}, "image", "generate-qr", "--url", "https://e.example", "--prompt", "p")
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "--base-url or CREATIVE_BASE_URL")
		assert.NotContains(t, stderr, "With")
		code, _, stderr = runCLI(t, map[string]string{"CREATIVE_BASE_URL": srv.URL}, "image", "generate-qr", "--url", "https://e.example", "--prompt", "p")
		assert.Equal(t, 2, code)
		assert.Equal(t, "creative: no access key: set CREATIVE_ACCESS_KEY (or try --fake)\n", stderr)
	})
}

func TestAMistypedFlagGetsTheNearestFlagOfItsCommand(t *testing.T) {
	srv, env := fakeEnv(t)
	jobs := writeJobs(t, 1)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"a letter left out", []string{"image", "text-to-image", "--promt", "fox"},
			"unknown flag: --promt (did you mean --prompt?) (see creative image text-to-image --help)"},
		{"with its value after =", []string{"audio", "text-to-speech", "--voice=female-1", "--prompt", "hi"},
			"unknown flag: --voice (did you mean --voice-id?) (see creative audio text-to-speech --help)"},
		{"the JSON name of a field", []string{"image", "text-to-image", "--prompt", "fox", "--numberOfResults", "2"},
			"unknown flag: --numberOfResults (did you mean --number-of-results?) (see creative image text-to-image --help)"},
		{"a global flag", []string{"image", "generate-qr", "--base-ulr", "https://x.example"},
			"unknown flag: --base-ulr (did you mean --base-url?) (see creative image generate-qr --help)"},
		{"a flag of batch, after the jobs file", []string{"batch", jobs, "--concurency", "2"},
			"unknown flag: --concurency (did you mean --concurrency?) (see creative batch --help)"},
		{"a flag near none", []string{"image", "text-to-image", "--prompt", "fox", "--flavour", "x"},
			"unknown flag: --flavour (see creative image text-to-image --help)"},
		{"a flag of another operation is not suggested", []string{"image", "text-to-image", "--prompt", "fox", "--no-download"},
			"unknown flag: --no-download (see creative image text-to-image --help)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, env, tt.args...)
			assert.Equal(t, 2, code)
			assert.Equal(t, "creative: "+tt.want+"\n", stderr)
			assert.Empty(t, stdout)
			assert.Empty(t, srv.Requests(), "nothing was sent")
		})
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		t.Run(shell+" prints a script", func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, "completion", shell)
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, stdout, "creative")
			assert.Greater(t, len(stdout), 1000)
		})
	}
	complete := func(t *testing.T, args ...string) []string {
		t.Helper()
		code, stdout, stderr := runCLI(t, nil, append([]string{"__complete"}, args...)...)
		require.Equal(t, 0, code, stderr)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		return lines[:len(lines)-1] // the last line is cobra's directive
	}
	t.Run("id flags complete their labels", func(t *testing.T) {
		assert.Equal(t, []string{"anime\t6644b0c5ec3658a8e38d94f2"}, complete(t, "image", "text-to-image", "--style-id", "an"))
		assert.Equal(t, []string{"golden-hour\t6644b0c5ec3658a8e38d953c"}, complete(t, "image", "text-to-image", "--prompt", "x", "--lighting-id", "gold"))
		assert.Len(t, complete(t, "audio", "text-to-speech", "--voice-id", "female"), 8)
		assert.Contains(t, complete(t, "audio", "enhance", "--type-id", ""), "podcast\t664f30c0ba9c162a962f75b6")
		assert.Equal(t, []string{"fisheye-lens\t6644b0c5ec3658a8e38d9534", "Fish-Eye\t6644b0c5ec3658a8e38d9534", "first-person-view\t6644b0c5ec3658a8e38d9535", "First-Person\t6644b0c5ec3658a8e38d9535"},
			complete(t, "image", "text-to-image", "--camera-id", "fi"), "the docs' labels too")
		assert.Equal(t, []string{"16:9\t6644b0c5ec3658a8e38d9520"}, complete(t, "image", "text-to-image", "--image-size-id", "16"))
	})
	t.Run("words complete commands", func(t *testing.T) {
		got := complete(t, "image", "text-to")
		require.Len(t, got, 1)
		assert.True(t, strings.HasPrefix(got[0], "text-to-image\t"))
		got = complete(t, "au")
		require.Len(t, got, 1)
		assert.True(t, strings.HasPrefix(got[0], "audio\t"))
	})
}

// umask returns the process's umask.
func umask() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}

func TestFilesAreCreatedWithMode0644(t *testing.T) {
	_, env := fakeEnv(t)
	want := 0o644 &^ umask()
	out := t.TempDir()
	for _, args := range [][]string{
		{"image", "generate-qr", "--url", "https://e.example", "--prompt", "p"},
		{"audio", "text-to-music", "--prompt", "p", "--duration", "1"},
		{"audio", "text-to-speech", "--prompt", "p", "--voice-id", "male-1"},
	} {
		code, stdout, stderr := runCLI(t, env, append(args, "--out", out)...)
		require.Equal(t, 0, code, stderr)
		st, err := os.Stat(strings.TrimSpace(stdout))
		require.NoError(t, err)
		assert.Equal(t, want, st.Mode().Perm(), "%v", args)
	}
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), tempPrefix), "temporary file %s left", e.Name())
	}
}

func TestVerboseLogsStayOffTheProgressLine(t *testing.T) {
	srv, env := fakeEnv(t)
	srv.Fail("image/generate-qr", creativetest.Fault{Status: 503, Times: 1})
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, progress: true}
	code := a.run([]string{"-v", "image", "generate-qr", "--url", "https://e.example", "--prompt", "p", "--out", t.TempDir()})
	require.Equal(t, 0, code, stderr.String())
	// Every log line starts at the beginning of a line: after a newline or
	// after the display's erase sequence, never after progress text.
	for _, chunk := range strings.Split(stderr.String(), "\n") {
		if i := strings.Index(chunk, "time="); i > 0 {
			before := chunk[:i]
			assert.True(t, strings.HasSuffix(before, "\x1b[J"), "log line glued to %q", before)
		}
	}
	assert.Contains(t, stderr.String(), "creative: retrying")
	assert.Contains(t, stderr.String(), "creative: attempt")
	assert.Equal(t, 2, srv.Count("image/generate-qr"))
}

// The progress line names the attempt and the wait before a retry, on the
// bubble's clock: the backoff of 300 ms shows as 0.3s.
func TestProgressShowsTheAttemptAndTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := creativetest.Start(t, creativetest.WithInMemoryNetwork())
		srv.Fail("image/generate-qr", creativetest.Fault{Status: 503, Times: 1})
		s := newCallStatus("image/generate-qr")
		var lines []string
		look := func() { lines = append(lines, s.String()) }
		// Seen from the client's middleware (outside the call's) and from the
		// handler the records go to after the status read them.
		c := srv.Client(creative.WithRetryWait(300*time.Millisecond, 300*time.Millisecond), creative.WithMiddleware(
			func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
				resp, err := next(req)
				look()
				return resp, err
			}))
		after := &recordsHandler{seen: func(r slog.Record) {
			if r.Message == "creative: retrying" {
				look()
			}
		}}
		_, err := c.GenerateQR(t.Context(), creative.GenerateQRRequest{URL: "https://e.example", Prompt: "p"}, s.track(after)...)
		require.NoError(t, err)
		require.Len(t, lines, 3)
		assert.Equal(t, "image/generate-qr 0.0s", lines[0], "the first attempt is not named")
		assert.Regexp(t, `^image/generate-qr 0\.0s \(retry in 0\.[0-3]s\)$`, lines[1], "the wait before the retry (jittered)")
		assert.Regexp(t, `^image/generate-qr 0\.[0-3]s attempt 2$`, lines[2], "the retry, and no wait")
		assert.Equal(t, int32(2), s.attempt.Load())
	})
}

func TestProgressCountsUploadsAndDownloadsWithTheirSizes(t *testing.T) {
	srv, _ := fakeEnv(t)
	c := srv.Client()
	t.Run("an upload, counted anew on each attempt", func(t *testing.T) {
		srv.Fail("image/re-imagine", creativetest.Fault{Status: 503, Times: 1})
		s := newCallStatus("image/re-imagine")
		_, err := c.ReImagine(t.Context(), creative.ReImagineRequest{Image: creative.FileFromPath(pngFile(t, 300, 300))}, s.track(nil)...)
		require.NoError(t, err)
		reqs := srv.Requests()
		size := reqs[len(reqs)-1].Parts[0].Size
		require.Greater(t, size, int64(0))
		// The form around the file adds a few hundred bytes.
		assert.Regexp(t, `attempt 2 sent (\d+) B of (\d+) B$`, s.String())
		sent, total := s.sent.Load(), s.size.Load()
		assert.Equal(t, total, sent, "the second attempt sent it all, and the first is not added")
		assert.InDelta(t, size, total, 1024)
	})
	t.Run("a download, with the size its answer declares", func(t *testing.T) {
		release := make(chan struct{})
		files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "131072")
			_, _ = w.Write(make([]byte, 65536))
			w.(http.Flusher).Flush()
			<-release
			_, _ = w.Write(make([]byte, 65536))
		}))
		defer files.Close()
		s := newCallStatus("download")
		done := make(chan error, 1)
		go func() {
			_, err := c.Download(t.Context(), creative.URL(files.URL+"/f.wav"), io.Discard, s.track(nil)...)
			done <- err
		}()
		require.Eventually(t, func() bool { return s.got.Load() == 65536 }, 5*time.Second, time.Millisecond)
		assert.Regexp(t, `^download \d\.\ds got 64\.0 KiB of 128\.0 KiB$`, s.String())
		close(release)
		require.NoError(t, <-done)
		assert.Contains(t, s.String(), "got 128.0 KiB of 128.0 KiB")
	})
}

// recordsHandler is a slog.Handler that shows each record to seen.
type recordsHandler struct{ seen func(slog.Record) }

func (h *recordsHandler) Enabled(context.Context, slog.Level) bool      { return true }
func (h *recordsHandler) Handle(_ context.Context, r slog.Record) error { h.seen(r); return nil }
func (h *recordsHandler) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h *recordsHandler) WithGroup(string) slog.Handler                 { return h }

func TestEveryOperationHasACommandAndEveryBindingAnOperation(t *testing.T) {
	for _, op := range ops.All {
		b, ok := bindings[op.Name]
		require.True(t, ok, "%s has no binding", op.Name)
		assert.True(t, strings.HasPrefix(b.example, "creative "+op.Area()+" "+op.Verb()+" "), op.Name)
		named := map[string]bool{}
		for f := range b.help {
			named[f] = true
		}
		for _, f := range b.filled {
			named[f] = true
		}
		for f := range named {
			_, ok := op.Field(f)
			assert.True(t, ok, "%s: the binding names %q, which is not a field of the operation", op.Name, f)
		}
		code, stdout, _ := runCLI(t, nil, op.Area(), op.Verb(), "--help")
		require.Equal(t, 0, code)
		for _, f := range op.Fields {
			assert.Contains(t, stdout, "--"+kebab(f.Name)+" ", op.Name)
		}
	}
	for name := range bindings {
		_, ok := ops.Lookup(name)
		assert.True(t, ok, "binding %s names no operation", name)
	}
}

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

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
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

// TestAnOperationsOutTakesNoURL: a URL as an operation's --out is refused
// before anything is sent, and no folder such as ./s3:/b/x is made.
func TestAnOperationsOutTakesNoURL(t *testing.T) {
	srv, env := fakeEnv(t)
	for _, tt := range []struct{ out, op string }{
		{"s3://b/x", "image generate-qr --url https://example.com --prompt flowers"},
		{"gs://b/x", "audio text-to-speech --prompt Hello --voice-id female-1"},
		{"azblob://c/x", "audio text-to-music --prompt piano --duration 1"},
		{"mem://x", "image text-to-image --prompt fox"},
		{"file:///tmp/x", "image generate-qr --url https://example.com --prompt flowers"},
		{"S3://b/x", "image generate-qr --url https://example.com --prompt flowers"},
	} {
		for _, fake := range []bool{false, true} {
			args := strings.Fields(tt.op)
			if fake {
				args = append([]string{"--fake"}, args...)
			}
			args = append(args, "--out", tt.out)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				t.Chdir(t.TempDir())
				code, stdout, stderr := runCLI(t, env, args...)
				assert.Equal(t, exitUsage, code)
				assert.Empty(t, stdout)
				assert.Equal(t, "creative: --out of an operation takes a folder on this machine or \"-\", not a URL such as \""+tt.out+"\": buckets are for creative batch --out\n", stderr)
				assert.Empty(t, srv.Requests(), "nothing sent")
				entries, err := os.ReadDir(".")
				require.NoError(t, err)
				assert.Empty(t, entries, "no folder made")
			})
		}
	}
}

// TestAFlagsMistakeComesBeforeTheFolderAndTheClient: a request that its
// flags make invalid is reported as such, whatever else is missing, and
// leaves no --out folder and no fake service started.
func TestAFlagsMistakeComesBeforeTheFolderAndTheClient(t *testing.T) {
	const tooMany = "creative: image/text-to-image: --number-of-results must be between 1 and 10, got 11\n"
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"no base URL", map[string]string{"CREATIVE_ACCESS_KEY": cliKey}, nil},
		{"no access key", map[string]string{"CREATIVE_BASE_URL": "http://127.0.0.1:9"}, nil},
		{"nothing set", nil, nil},
		{"the fake", nil, []string{"--fake"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "x")
			args := append(tt.args, "image", "text-to-image", "--prompt", "p", "--number-of-results", "11", "--out", out)
			code, stdout, stderr := runCLI(t, tt.env, args...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, stdout)
			assert.Equal(t, tooMany, stderr)
			assert.NoDirExists(t, out, "no folder made")
		})
	}
	t.Run("a missing field of the writer", func(t *testing.T) {
		code, _, stderr := runCLI(t, nil, "text", "writer-tool", "--language", "en", "--tone", "t")
		assert.Equal(t, exitUsage, code)
		assert.Equal(t, "creative: no inputs: give --job-role and --job-skills for a cover letter, or --inputs as a JSON array\n", stderr)
	})
}

func isPNG(b []byte) bool {
	_, err := png.Decode(bytes.NewReader(b))
	return err == nil
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

func TestCompletionHelpSaysWhatBashNeedsFirst(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "completion", "--help")
	require.Equal(t, 0, code, stderr)
	for _, want := range []string{
		"bash needs the bash-completion package, version 2",
		"apt install bash-completion",
		"brew install bash-completion@2",
		`Tab says "_get_comp_words_by_ref: command not found"`,
		"source <(creative completion bash)",
		"creative completion fish | source",
	} {
		assert.Contains(t, stdout, want)
	}
	_, _, alone := runCLI(t, nil, "completion")
	assert.Contains(t, alone, "bash-completion", "creative completion alone shows it too, on stderr")
}

func TestCompletionAloneShowsItsShells(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "completion")
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		assert.Contains(t, stderr, "  "+shell+" ")
	}
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

func TestFakeWithTheEnvironmentsBaseURLIsNoConflict(t *testing.T) {
	env := map[string]string{"CREATIVE_BASE_URL": "https://api.example"}
	code, stdout, stderr := runCLI(t, env, "--fake", "image", "generate-qr", "--url", "https://example.com", "--prompt", "p", "--out", t.TempDir())
	require.Equal(t, 0, code, stderr)
	assert.True(t, strings.HasSuffix(stdout, "generate-qr.png\n"), stdout)
}
