package cli

import (
	"bytes"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
		{"a flag of another operation is not suggested", []string{"image", "text-to-image", "--prompt", "fox", "--voice-id", "female-1"},
			"unknown flag: --voice-id (see creative image text-to-image --help)"},
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

func TestFakeWithTheEnvironmentsBaseURLIsNoConflict(t *testing.T) {
	env := map[string]string{"CREATIVE_BASE_URL": "https://api.example"}
	code, stdout, stderr := runCLI(t, env, "--fake", "image", "generate-qr", "--url", "https://example.com", "--prompt", "p", "--out", t.TempDir())
	require.Equal(t, 0, code, stderr)
	assert.True(t, strings.HasSuffix(stdout, "generate-qr.png\n"), stdout)
}
