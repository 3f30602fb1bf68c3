package cli

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/cmd/creative/internal/bucket"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/ops"
)

const cliKey = "cli-key-5b2e-LEAKCHECK"

// testBuckets opens bucket URLs in process, as creative-cloud does.
var testBuckets = &Buckets{Open: bucket.OpenStore, OpenFS: bucket.OpenFS}

// runCLI runs the command in process with env, as creative-cloud does
// (bucket URLs are opened in process), and returns its status and output.
func runCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, buckets: testBuckets}
	code := a.run(args)
	return code, stdout.String(), stderr.String()
}

// inMemory starts the fake on an in-memory network, inside a synctest
// bubble, and returns it with an app whose calls reach it: a run's waits
// (backoff, Retry-After, the rate) then pass on the bubble's clock.
func inMemory(t *testing.T, signals <-chan os.Signal) (*creativetest.Server, *app, *bytes.Buffer) {
	t.Helper()
	srv := creativetest.Start(t, creativetest.WithInMemoryNetwork())
	env := map[string]string{"CREATIVE_BASE_URL": srv.URL, "CREATIVE_ACCESS_KEY": srv.AccessKey}
	var stderr bytes.Buffer
	a := &app{stdout: io.Discard, stderr: &stderr, getenv: func(k string) string { return env[k] }, buckets: testBuckets,
		hc: srv.HTTPClient(), signals: signals}
	return srv, a, &stderr
}

// recorded is one request a recording server saw.
type recorded struct {
	path, key, ctype string
	json             string
	parts            map[string]string // name -> value, or file name and size for files
}

// recorder is a server on 127.0.0.1 that records requests and answers
// each operation with a fixed body.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []recorded
}

func newRecorder(t *testing.T, status int, answer func(path string) (string, string)) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := recorded{path: r.URL.Path, key: r.Header.Get("x-access-key"), ctype: r.Header.Get("Content-Type"), parts: map[string]string{}}
		if mt, params, _ := mime.ParseMediaType(got.ctype); mt == "multipart/form-data" {
			mr := multipart.NewReader(r.Body, params["boundary"])
			for {
				p, err := mr.NextPart()
				if err != nil {
					break
				}
				b, _ := io.ReadAll(p)
				if p.FileName() != "" {
					got.parts[p.FormName()] = p.FileName()
				} else {
					got.parts[p.FormName()] = string(b)
				}
			}
		} else {
			b, _ := io.ReadAll(r.Body)
			got.json = string(b)
		}
		rec.mu.Lock()
		rec.seen = append(rec.seen, got)
		rec.mu.Unlock()
		ct, body := answer(r.URL.Path)
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.seen...)
}

func pngFile(t *testing.T, w, h int) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))))
	path := filepath.Join(t.TempDir(), "in.png")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	return path
}

func TestEveryCommandSendsItsRequest(t *testing.T) {
	png64 := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	rec := newRecorder(t, 200, func(path string) (string, string) {
		switch {
		case strings.HasSuffix(path, "writer-tool"):
			return "application/json", `{"success":true,"message":"ok","data":{"language":"English","useCase":"CoverLetter","word_count":2,"text":{"choices":[{"text":"Dear team","index":0,"word_count":2}]}}}`
		case strings.HasSuffix(path, "text-to-speech"):
			return "audio/mpeg", "ID3 audio bytes"
		case strings.HasSuffix(path, "split-audio"):
			return "application/json", `{"success":true,"message":"ok","data":["https://f.example/1.wav","https://f.example/2.wav"]}`
		case strings.HasPrefix(path, "/image/"):
			return "application/json", `{"success":true,"message":"ok","data":{"base64":"` + png64 + `"}}`
		}
		return "application/json", `{"success":true,"message":"ok","data":"https://f.example/out.wav"}`
	})
	env := map[string]string{"CREATIVE_BASE_URL": rec.URL, "CREATIVE_ACCESS_KEY": cliKey}
	img := pngFile(t, 16, 16)
	wavPath := filepath.Join(t.TempDir(), "talk.wav")
	require.NoError(t, os.WriteFile(wavPath, []byte("RIFF\x04\x00\x00\x00WAVEdata"), 0o644))
	tests := []struct {
		args  []string
		path  string
		json  string
		parts map[string]string
	}{
		{[]string{"text", "writer-tool", "--job-role", "Engineer", "--job-skills", "Go", "--language", "English", "--tone", "formal"}, "/text/v1/writer-tool",
			`{"inputs":[{"jobRole":"Engineer","jobSkills":"Go"}],"language":"English","number":1,"useCase":"CoverLetter","action":"generate_writenow","tone":"formal"}`, nil},
		{[]string{"text", "writer-tool", "--inputs", `[{"topic":"x"}]`, "--use-case", "Blog", "--action", "write", "--language", "en", "--tone", "fun", "--number", "2"}, "/text/v1/writer-tool",
			`{"inputs":[{"topic":"x"}],"language":"en","number":2,"useCase":"Blog","action":"write","tone":"fun"}`, nil},
		{[]string{"audio", "text-to-music", "--prompt", "jazz", "--duration", "12", "--no-download"}, "/audio/v1/text-to-music", `{"prompt":"jazz","duration":12}`, nil},
		{[]string{"audio", "text-to-speech", "--prompt", "hi", "--voice-id", "male 2"}, "/audio/v1/text-to-speech", `{"prompt":"hi","voiceId":"` + string(ids.VoicesByGender(ids.Male)[1]) + `"}`, nil},
		{[]string{"audio", "enhance", "--audio", wavPath, "--type-id", "podcast", "--no-download"}, "/audio/v1/enhance", "", map[string]string{"audio": "talk.wav", "typeId": string(ids.EnhancePodcast)}},
		{[]string{"audio", "split-audio", "--audio", wavPath, "--no-download"}, "/audio/v1/split-audio", "", map[string]string{"audio": "talk.wav"}},
		{[]string{"image", "text-to-image", "--prompt", "fox", "--number-of-results", "2", "--image-size-id", "2:3", "--style-id", "anime", "--camera-id", "Close-Up", "--color-id", "pastel colors", "--lighting-id", "golden-hour"}, "/image/v1/text-to-image",
			`{"prompt":"fox","numberOfResults":2,"imageSizeId":"6644b0c5ec3658a8e38d951b","dimensionsId":"6644b0c5ec3658a8e38d951b","styleId":"6644b0c5ec3658a8e38d94f2","cameraId":"6644b0c5ec3658a8e38d952d","colorId":"6644b0c5ec3658a8e38d9507","lightingId":"6644b0c5ec3658a8e38d953c"}`, nil},
		{[]string{"image", "text-to-image", "--prompt", "owl", "--image-size-id", "16:9", "--style-id", "Photo", "--camera-id", "Fish Eye"}, "/image/v1/text-to-image",
			`{"prompt":"owl","numberOfResults":1,"imageSizeId":"6644b0c5ec3658a8e38d9520","dimensionsId":"6644b0c5ec3658a8e38d9520","styleId":"6644b0c5ec3658a8e38d94ec","cameraId":"6644b0c5ec3658a8e38d9534"}`, nil},
		{[]string{"image", "generate-logo", "--prompt", "bakery"}, "/image/v1/generate-logo", `{"prompt":"bakery"}`, nil},
		{[]string{"image", "generate-qr", "--url", "https://example.com", "--prompt", "flowers"}, "/image/v1/generate-qr", `{"url":"https://example.com","prompt":"flowers"}`, nil},
		{[]string{"image", "up-scale", "--url", "https://i.example/a.png", "--scale", "2"}, "/image/v1/up-scale", `{"url":"https://i.example/a.png","scale":2}`, nil},
		{[]string{"image", "re-imagine", "--image", img}, "/image/v1/re-imagine", "", map[string]string{"image": "in.png"}},
		{[]string{"image", "remove-background", "--url", "https://i.example/a.png"}, "/image/v1/remove-background", `{"url":"https://i.example/a.png"}`, nil},
		{[]string{"image", "color-image", "--url", "https://i.example/a.png"}, "/image/v1/color-image", `{"url":"https://i.example/a.png"}`, nil},
		{[]string{"image", "enhance", "--url", "https://i.example/a.png"}, "/image/v1/enhance", `{"url":"https://i.example/a.png"}`, nil},
		{[]string{"image", "change-background", "--image", img, "--prompt", "beach"}, "/image/v1/change-background", "", map[string]string{"image": "in.png", "prompt": "beach"}},
		{[]string{"video", "infinite-zoom", "--prompt", "galaxy", "--number-of-iteration", "3", "--no-download"}, "/video/v1/infinite-zoom", `{"prompt":"galaxy","numberOfIteration":3}`, nil},
		{[]string{"video", "remove-background", "--url", "https://v.example/a.mp4", "--no-download"}, "/video/v1/remove-background", `{"url":"https://v.example/a.mp4"}`, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:2], " ")+" "+tt.args[2], func(t *testing.T) {
			before := len(rec.requests())
			out := t.TempDir()
			args := append(tt.args, "--out", out)
			code, stdout, stderr := runCLI(t, env, args...)
			require.Equal(t, 0, code, stderr)
			reqs := rec.requests()
			require.Len(t, reqs, before+1)
			got := reqs[len(reqs)-1]
			assert.Equal(t, tt.path, got.path)
			assert.Equal(t, cliKey, got.key)
			if tt.parts != nil {
				assert.Equal(t, tt.parts, got.parts)
			} else {
				assert.Equal(t, tt.json, got.json)
			}
			assert.NotEmpty(t, stdout)
			for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
				if strings.HasPrefix(line, out) {
					_, err := os.Stat(line)
					assert.NoError(t, err, "each printed path exists")
				}
			}
		})
	}
}

func TestFilesAreNamedByOperationAndNeverOverwritten(t *testing.T) {
	out := t.TempDir()
	args := []string{"--fake", "image", "text-to-image", "--prompt", "fox", "--number-of-results", "2", "--out", out}
	code, stdout, stderr := runCLI(t, nil, args...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, filepath.Join(out, "text-to-image-1.png")+"\n"+filepath.Join(out, "text-to-image-2.png")+"\n", stdout)
	code, stdout, _ = runCLI(t, nil, args...)
	require.Equal(t, 0, code)
	assert.Equal(t, filepath.Join(out, "text-to-image-3.png")+"\n"+filepath.Join(out, "text-to-image-4.png")+"\n", stdout)
	one := []string{"--fake", "image", "text-to-image", "--prompt", "fox", "--out", out}
	code, stdout, _ = runCLI(t, nil, one...)
	require.Equal(t, 0, code)
	assert.Equal(t, filepath.Join(out, "text-to-image.png")+"\n", stdout, "one result has no number")
	code, stdout, _ = runCLI(t, nil, one...)
	require.Equal(t, 0, code)
	assert.Equal(t, filepath.Join(out, "text-to-image-5.png")+"\n", stdout, "a taken name is never overwritten")
	entries, _ := os.ReadDir(out)
	assert.Len(t, entries, 6, "no temporary file is left")
	assert.Contains(t, stderr, "using the built-in fake service")
}

func TestURLResultsAreDownloadedWithoutTheKey(t *testing.T) {
	var keys []string
	var mu sync.Mutex
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("x-access-key"))
		mu.Unlock()
		_, _ = io.WriteString(w, "RIFF\x04\x00\x00\x00WAVEdata")
	}))
	defer files.Close()
	rec := newRecorder(t, 200, func(string) (string, string) {
		return "application/json", `{"success":true,"message":"ok","data":["` + files.URL + `/a","` + files.URL + `/b"]}`
	})
	wavPath := filepath.Join(t.TempDir(), "talk.wav")
	require.NoError(t, os.WriteFile(wavPath, []byte("RIFF\x04\x00\x00\x00WAVEdata"), 0o644))
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, map[string]string{"CREATIVE_BASE_URL": rec.URL, "CREATIVE_ACCESS_KEY": cliKey}, "audio", "split-audio", "--audio", wavPath, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, filepath.Join(out, "split-audio-1.wav")+"\n"+filepath.Join(out, "split-audio-2.wav")+"\n", stdout)
	assert.Equal(t, []string{"", ""}, keys)
}

func TestExitStatusesAndNothingSentOnUsageErrors(t *testing.T) {
	rec := newRecorder(t, 400, func(string) (string, string) {
		return "application/json", `{"success":false,"message":"prompt: rejected"}`
	})
	env := map[string]string{"CREATIVE_BASE_URL": rec.URL, "CREATIVE_ACCESS_KEY": cliKey}
	missing := filepath.Join(t.TempDir(), "nope.png")
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		err  string
	}{
		{"an unknown flag", env, []string{"image", "generate-qr", "--colour", "red"}, 2, "unknown flag: --colour"},
		{"an unknown label", env, []string{"image", "text-to-image", "--prompt", "p", "--style-id", "impressionism"}, 2, `unknown style "impressionism"`},
		{"a missing file", env, []string{"image", "re-imagine", "--image", missing}, 2, "image cannot be read"},
		{"a broken limit", env, []string{"image", "text-to-image", "--prompt", "p", "--number-of-results", "11"}, 2, "creative: image/text-to-image: --number-of-results must be between 1 and 10, got 11"},
		{"a missing key", map[string]string{"CREATIVE_BASE_URL": rec.URL}, []string{"image", "generate-qr", "--url", "https://e.example", "--prompt", "p"}, 2, "CREATIVE_ACCESS_KEY"},
		{"a missing base URL", map[string]string{"CREATIVE_ACCESS_KEY": cliKey}, []string{"image", "generate-qr", "--url", "https://e.example", "--prompt", "p"}, 2, "CREATIVE_BASE_URL"},
		{"an unknown command", env, []string{"image", "paint"}, 2, `unknown command "paint" for "creative image"`},
		{"bad JSON inputs", env, []string{"text", "writer-tool", "--inputs", "[", "--language", "en", "--tone", "t", "--use-case", "X", "--action", "y"}, 2, `"--inputs" flag: not a JSON array: column 2: the line ends before the array is closed: "]" is missing`},
		{"JSON inputs with a trailing comma", env, []string{"text", "writer-tool", "--inputs", `[{"topic":"x",}]`, "--language", "en", "--tone", "t", "--use-case", "X", "--action", "y"}, 2, `not a JSON array: column 14: a trailing comma before "}" (JSON allows none)`},
		{"JSON inputs that are no array", env, []string{"text", "writer-tool", "--inputs", `{"topic":"x"}`, "--language", "en", "--tone", "t", "--use-case", "X", "--action", "y"}, 2, `not a JSON array such as '[{"topic":"foxes"}]'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.env, tt.args...)
			assert.Equal(t, tt.code, code)
			assert.Contains(t, stderr, tt.err)
			assert.Empty(t, stdout)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			assert.Empty(t, rec.requests(), "nothing was sent")
		})
	}
	t.Run("a 400 from the service exits 1", func(t *testing.T) {
		code, _, stderr := runCLI(t, env, "image", "generate-qr", "--url", "https://e.example", "--prompt", "p")
		assert.Equal(t, 1, code)
		assert.Equal(t, "creative: image/generate-qr: HTTP 400: prompt: rejected\n", stderr)
	})
}

// A 502 may come after the service did the work: the call is not repeated,
// exits 1, and says so.
func TestA502IsReportedAsMaybePaidAndNotRepeated(t *testing.T) {
	rec := newRecorder(t, 502, func(string) (string, string) {
		return "application/json", `{"success":false,"message":"upstream down"}`
	})
	code, _, stderr := runCLI(t, map[string]string{"CREATIVE_BASE_URL": rec.URL, "CREATIVE_ACCESS_KEY": cliKey},
		"image", "generate-qr", "--url", "https://e.example", "--prompt", "p", "--retries", "2", "--timeout", "30s")
	assert.Equal(t, 1, code)
	assert.Equal(t, "creative: image/generate-qr: HTTP 502: upstream down (outcome unknown: the service may have done the work and charged for it, so it was not sent again, after 1 attempt)\n"+
		"creative: the service may have done this work and charged for it; it was not repeated: check before running it again\n", stderr)
	assert.Len(t, rec.requests(), 1)
}

func TestTheKeyIsInNoOutputEvenVerbose(t *testing.T) {
	rec := newRecorder(t, 503, func(string) (string, string) {
		return "application/json", `{"success":false,"message":"busy for ` + cliKey + `"}`
	})
	code, stdout, stderr := runCLI(t, map[string]string{"CREATIVE_BASE_URL": rec.URL, "CREATIVE_ACCESS_KEY": cliKey},
		"-v", "audio", "text-to-music", "--prompt", "p", "--retries", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "creative: attempt")
	assert.Contains(t, stderr, "creative: retrying")
	assert.NotContains(t, stdout+stderr, cliKey)
}

func TestFlagsMayComeBeforeOrAfterTheWords(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, nil, "--out", out, "--fake", "image", "--prompt", "bakery", "generate-logo", "--number-of-results", "2")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 2, strings.Count(stdout, "\n"))
}

func TestJSONPrintsTheTypedResult(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "--fake", "--json", "image", "generate-logo", "--prompt", "bakery")
	require.Equal(t, 0, code, stderr)
	var got []struct {
		ContentType string `json:"contentType"`
		Bytes       int    `json:"bytes"`
		Base64      []byte `json:"base64"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	require.Len(t, got, 1)
	assert.Equal(t, "image/png", got[0].ContentType)
	assert.Equal(t, got[0].Bytes, len(got[0].Base64))

	code, stdout, _ = runCLI(t, nil, "--fake", "--json", "audio", "split-audio", "--audio", writeWAV(t))
	require.Equal(t, 0, code)
	var urls []string
	require.NoError(t, json.Unmarshal([]byte(stdout), &urls))
	assert.Len(t, urls, 2)
}

func writeWAV(t *testing.T) string {
	t.Helper()
	b := []byte("RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x22\x56\x00\x00\x44\xac\x00\x00\x02\x00\x10\x00data\x08\x00\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08")
	path := filepath.Join(t.TempDir(), "a.wav")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

func TestTheFakeQRCodeScans(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, nil, "--fake", "image", "generate-qr", "--url", "https://example.com", "--prompt", "flowers", "--out", out)
	require.Equal(t, 0, code, stderr)
	path := strings.TrimSpace(stdout)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	require.NoError(t, err)
	res, err := qrcode.NewQRCodeReader().Decode(bmp, nil)
	require.NoError(t, err)
	assert.Equal(t, "https://example.com", res.GetText())
}

func TestHelpIDsAndVersion(t *testing.T) {
	code, stdout, _ := runCLI(t, nil, "help")
	assert.Equal(t, 0, code)
	for _, op := range ops.All {
		assert.Regexp(t, `\n  `+op.Area()+`\n(    .*\n)*    `+op.Verb()+` `, stdout, "listed under its area")
	}
	code, stdout, _ = runCLI(t, nil, "image", "text-to-image", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "Examples:\n  creative image text-to-image")
	assert.Contains(t, stdout, "--style-id")

	code, stdout, _ = runCLI(t, nil, "ids", "style")
	assert.Equal(t, 0, code)
	assert.Equal(t, 24, strings.Count(stdout, "\n"))
	assert.Contains(t, stdout, "style\t6644b0c5ec3658a8e38d94f2\tanime\n")
	assert.Contains(t, stdout, "style\t6644b0c5ec3658a8e38d94ec\tphotograph\tPhoto\n", "the docs' label after the spec's")
	code, stdout, _ = runCLI(t, nil, "ids", "image-size")
	assert.Equal(t, 0, code)
	assert.Equal(t, 13, strings.Count(stdout, "\n"))
	assert.Contains(t, stdout, "image-size\t6644b0c5ec3658a8e38d9520\t16:9\n")
	code, stdout, _ = runCLI(t, nil, "ids")
	assert.Equal(t, 0, code)
	assert.Equal(t, 13+24+11+17+11+20+9, strings.Count(stdout, "\n"))
	code, _, _ = runCLI(t, nil, "ids", "flavour")
	assert.Equal(t, 2, code)

	code, stdout, _ = runCLI(t, nil, "version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stdout, "creative "))
	code, _, _ = runCLI(t, nil)
	assert.Equal(t, 2, code, "no command is a usage error")
}

func TestTheFakeRunsEveryOperation(t *testing.T) {
	srv := creativetest.NewServer()
	defer srv.Close()
	env := map[string]string{"CREATIVE_BASE_URL": srv.URL, "CREATIVE_ACCESS_KEY": srv.AccessKey}
	img, wav := pngFile(t, 32, 32), writeWAV(t)
	out := t.TempDir()
	for _, args := range [][]string{
		{"text", "writer-tool", "--job-role", "r", "--job-skills", "s", "--language", "en", "--tone", "t"},
		{"audio", "text-to-music", "--prompt", "p", "--duration", "1"},
		{"audio", "text-to-speech", "--prompt", "p", "--voice-id", "female 3"},
		{"audio", "enhance", "--audio", wav, "--type-id", "studio"},
		{"audio", "split-audio", "--audio", wav},
		{"image", "text-to-image", "--prompt", "p"},
		{"image", "generate-logo", "--prompt", "p"},
		{"image", "generate-qr", "--url", "https://e.example", "--prompt", "p"},
		{"image", "up-scale", "--url", "https://e.example/a.png"},
		{"image", "re-imagine", "--image", img},
		{"image", "remove-background", "--url", "https://e.example/a.png"},
		{"image", "color-image", "--url", "https://e.example/a.png"},
		{"image", "enhance", "--url", "https://e.example/a.png"},
		{"image", "change-background", "--image", img, "--prompt", "p"},
		{"video", "infinite-zoom", "--prompt", "p"},
		{"video", "remove-background", "--url", "https://e.example/a.mp4"},
	} {
		code, _, stderr := runCLI(t, env, append(args, "--out", out)...)
		assert.Equal(t, 0, code, "%v: %s", args, stderr)
	}
	names := map[string]bool{}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		names[e.Name()] = true
	}
	for _, want := range []string{"writer-tool.txt", "text-to-music.wav", "text-to-speech.mp3", "enhance.wav", "split-audio-1.wav", "split-audio-2.wav", "text-to-image.png", "infinite-zoom.gif", "remove-background.png", "remove-background.gif"} {
		assert.True(t, names[want], "%s in %v", want, names)
	}
	assert.Len(t, srv.Requests(), 16)
}

func TestProgressShowsOnlyOnATerminal(t *testing.T) {
	srv := creativetest.NewServer(creativetest.WithLatency(700 * time.Millisecond))
	defer srv.Close()
	env := map[string]string{"CREATIVE_BASE_URL": srv.URL, "CREATIVE_ACCESS_KEY": srv.AccessKey}
	for _, terminal := range []bool{true, false} {
		var stdout, stderr bytes.Buffer
		a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, progress: terminal}
		code := a.run([]string{"image", "generate-qr", "--url", "https://e.example", "--prompt", "p", "--out", t.TempDir()})
		require.Equal(t, 0, code, stderr.String())
		if terminal {
			assert.Contains(t, stderr.String(), "image/generate-qr 0.")
			assert.True(t, strings.HasSuffix(stderr.String(), "\033[1A\033[J"), "the line is cleared at the end: %q", stderr.String())
		} else {
			assert.Empty(t, stderr.String(), "nothing extra when stderr is not a terminal")
		}
	}
}

func TestSpeechIsNamedByItsTypeElseByItsBytes(t *testing.T) {
	for _, tt := range []struct{ ctype, body, name string }{
		{"audio/mpeg", "ID3 audio", "text-to-speech.mp3"},
		{"audio/wav; codecs=1", "RIFF\x04\x00\x00\x00WAVEdata", "text-to-speech.wav"},
		{"audio/ogg", "OggS audio", "text-to-speech.ogg"},
		{"audio/aac", "\xff\xf1 aac", "text-to-speech.aac"},
		{"application/octet-stream", "RIFF\x04\x00\x00\x00WAVEdata", "text-to-speech.wav"},
	} {
		rec := newRecorder(t, 200, func(string) (string, string) { return tt.ctype, tt.body })
		out := t.TempDir()
		code, stdout, stderr := runCLI(t, map[string]string{"CREATIVE_BASE_URL": rec.URL, "CREATIVE_ACCESS_KEY": cliKey},
			"audio", "text-to-speech", "--prompt", "hi", "--voice-id", "female-1", "--out", out)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, filepath.Join(out, tt.name)+"\n", stdout, tt.ctype)

		// A batch names it alike.
		jobs := filepath.Join(t.TempDir(), "jobs.jsonl")
		require.NoError(t, os.WriteFile(jobs, []byte(`{"op":"audio/text-to-speech","prompt":"hi","voiceId":"female-1"}`+"\n"), 0o644))
		out = t.TempDir()
		code, _, stderr = runCLI(t, map[string]string{"CREATIVE_BASE_URL": rec.URL, "CREATIVE_ACCESS_KEY": cliKey}, "batch", jobs, "--out", out)
		require.Equal(t, 0, code, stderr)
		recs := readResults(t, out)
		require.Len(t, recs, 1)
		require.Len(t, recs[0].Files, 1)
		assert.Equal(t, filepath.Ext(tt.name), filepath.Ext(recs[0].Files[0]), tt.ctype)
	}
}

func TestErrorsNameTheRequestIDOnce(t *testing.T) {
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-7f3a")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"success":false,"message":"prompt: rejected"}`)
	}))
	defer svc.Close()
	env := map[string]string{"CREATIVE_BASE_URL": svc.URL, "CREATIVE_ACCESS_KEY": cliKey}
	code, _, stderr := runCLI(t, env, "image", "generate-qr", "--url", "https://e.example", "--prompt", "p")
	assert.Equal(t, 1, code)
	assert.Equal(t, "creative: image/generate-qr: HTTP 400: prompt: rejected (request id req-7f3a)\n", stderr)

	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"op":"image/generate-qr","url":"https://e.example","prompt":"p"}`+"\n"), 0o644))
	out := t.TempDir()
	code, _, stderr = runCLI(t, env, "batch", path, "--out", out)
	assert.Equal(t, 1, code, stderr)
	recs := readResults(t, out)
	require.Len(t, recs, 1)
	assert.Equal(t, "image/generate-qr: HTTP 400: prompt: rejected (request id req-7f3a)", recs[0].Error)
}
