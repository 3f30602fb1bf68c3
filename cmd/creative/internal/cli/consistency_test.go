package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"maps"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/opcall"
	"github.com/creativegen/creative-go/internal/ops"
)

// An inFolder is the value of a file field: the name of a file in the
// test's folder, which each consumer takes its own way (a File, a path, a
// path relative to the jobs' folder, a form part).
type inFolder string

// An operation is described once: its request type with its Validate, the
// Client's method that takes it, and its row of the table in internal/ops.
// For each row, the four consumers of that description take a request with
// every field of the row and refuse one bad value of one field, each
// naming that field: the SDK (opcall.Build and Validate), the command
// `creative <area> <verb>` (a flag per field; exit 2 naming the flag), a
// one-line batch (a *batch.CheckError whose line names the field) and the
// fake's handler (a 400 naming the field, in the SDK's words).
func TestEveryOperationAgreesAcrossSDKCommandBatchAndFake(t *testing.T) {
	srv, env := fakeEnv(t)
	dir := t.TempDir()
	file := func(name string, data []byte) inFolder {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
		return inFolder(name)
	}
	readFrom := func(path string) []byte {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return b
	}
	var gifData bytes.Buffer
	require.NoError(t, gif.Encode(&gifData, image.NewPaletted(image.Rect(0, 0, 8, 8), color.Palette{color.Black, color.White}), nil))
	var (
		png   = file("in.png", readFrom(pngFile(t, 16, 16)))
		wide  = file("wide.png", readFrom(pngFile(t, 1025, 4)))
		gifIn = file("in.gif", gifData.Bytes())
		wav   = file("talk.wav", readFrom(writeWAV(t)))
		empty = file("empty.wav", nil)
	)
	const link = "https://example.com/a.png"

	// good holds a request of each operation that every consumer takes,
	// with a value for every field, as the wire names them.
	good := map[string]map[string]any{
		ops.WriterTool: {"inputs": []any{map[string]any{"jobRole": "Engineer", "jobSkills": "Go"}}, "language": "English",
			"number": 2.0, "useCase": "CoverLetter", "action": "generate_writenow", "tone": "formal"},
		ops.TextToMusic: {"prompt": "jazz", "duration": 2.0},
		ops.TextToImage: {"prompt": "a fox", "numberOfResults": 2.0, "imageSizeId": string(ids.Size3x2), "styleId": string(ids.StyleAnime),
			"cameraId": string(ids.CameraCloseUp), "colorId": string(ids.ColorPastelColors), "lightingId": string(ids.LightingGoldenHour)},
		ops.GenerateLogo:          {"prompt": "a bakery", "numberOfResults": 2.0},
		ops.GenerateQR:            {"url": "https://example.com", "prompt": "flowers"},
		ops.UpScale:               {"url": link, "scale": 2.0},
		ops.EnhanceAudio:          {"audio": wav, "typeId": string(ids.EnhancePodcast)},
		ops.InfiniteZoom:          {"prompt": "a galaxy", "numberOfIteration": 2.0},
		ops.ReImagine:             {"image": png},
		ops.SplitAudio:            {"audio": wav},
		ops.RemoveBackground:      {"url": link},
		ops.ColorImage:            {"url": link},
		ops.EnhanceImage:          {"url": link},
		ops.RemoveVideoBackground: {"url": "https://example.com/a.mp4"},
		ops.TextToSpeech:          {"prompt": "hello", "voiceId": string(ids.VoiceFemale1)},
		ops.ChangeBackground:      {"image": png, "prompt": "a beach"},
	}
	// bad is one value of one field of each operation that the SDK's
	// Validate refuses.
	bad := map[string]struct {
		field string
		value any
	}{
		ops.WriterTool:            {"number", -2.0},                      // a count below its range
		ops.TextToMusic:           {"duration", -1.0},                    // a number that must be positive
		ops.TextToImage:           {"numberOfResults", 11.0},             // a count above its range
		ops.GenerateLogo:          {"numberOfResults", 5.0},              // a count above its range
		ops.GenerateQR:            {"url", "ftp://example.com"},          // a link that is not http(s)
		ops.UpScale:               {"scale", -2.0},                       // a number that must be positive
		ops.EnhanceAudio:          {"typeId", "loud"},                    // an id that is not shaped as one
		ops.InfiniteZoom:          {"numberOfIteration", -1.0},           // a count below its range
		ops.ReImagine:             {"image", wide},                       // an image above 1024 pixels a side
		ops.SplitAudio:            {"audio", empty},                      // an empty upload
		ops.RemoveBackground:      {"url", "not a link"},                 // a link that is no URL
		ops.ColorImage:            {"url", "http://example.com:0/a.png"}, // a link to port 0
		ops.EnhanceImage:          {"url", "//example.com/a.png"},        // a link without a scheme
		ops.RemoveVideoBackground: {"url", "mailto:someone@example.com"}, // a link without a host
		ops.TextToSpeech:          {"prompt", ""},                        // an empty required text
		ops.ChangeBackground:      {"image", gifIn},                      // an upload of the wrong format
	}
	require.Len(t, good, len(ops.All))
	require.Len(t, bad, len(ops.All))

	for _, op := range ops.All {
		t.Run(op.Name, func(t *testing.T) {
			fields, ok := good[op.Name]
			require.True(t, ok, "no good request of %s", op.Name)
			require.Len(t, fields, len(op.Fields), "every field of the row has a value")
			b, ok := bad[op.Name]
			require.True(t, ok, "no bad value for %s", op.Name)
			_, ok = op.Field(b.field)
			require.True(t, ok, "%s has no field %s", op.Name, b.field)
			badFields := maps.Clone(fields)
			badFields[b.field] = b.value
			flag := "--" + kebab(b.field)

			var refused *creative.ValidationError
			t.Run("the SDK builds its request, which validates itself", func(t *testing.T) {
				req, err := opcall.Build(op, sdkFields(dir, fields))
				require.NoError(t, err)
				require.NoError(t, req.Validate())
				req, err = opcall.Build(op, sdkFields(dir, badFields))
				require.NoError(t, err)
				require.ErrorAs(t, req.Validate(), &refused)
				assert.Equal(t, b.field, refused.Field)
				assert.Equal(t, op.Name, refused.Operation)
			})

			t.Run("the command has a flag per field", func(t *testing.T) {
				before := srv.Count(op.Name)
				args := append(commandLine(op, dir, fields), "--out", t.TempDir())
				code, stdout, stderr := runCLI(t, env, args...)
				require.Equal(t, 0, code, "%v: %s", args, stderr)
				assert.NotEmpty(t, stdout)
				assert.Equal(t, before+1, srv.Count(op.Name), "one call")

				code, stdout, stderr = runCLI(t, env, commandLine(op, dir, badFields)...)
				assert.Equal(t, 2, code, stderr)
				assert.Empty(t, stdout)
				assert.Regexp(t, `^creative: .*(^|[^-\w])`+regexp.QuoteMeta(flag)+`([^-\w]|$)`, stderr, "the flag is named")
				assert.Equal(t, before+1, srv.Count(op.Name), "nothing sent")
			})

			t.Run("a batch of one line runs against the fake", func(t *testing.T) {
				before := srv.Count(op.Name)
				sum, err := runBatch(t, srv, dir, op, fields)
				require.NoError(t, err)
				assert.Equal(t, 1, sum.Done, "%+v", sum)
				assert.Equal(t, before+1, srv.Count(op.Name), "one call")

				_, err = runBatch(t, srv, dir, op, badFields)
				var ce *batch.CheckError
				require.ErrorAs(t, err, &ce)
				require.Len(t, ce.Lines, 1)
				assert.Equal(t, 1, ce.Lines[0].Line)
				assert.Equal(t, b.field, ce.Lines[0].Field, "%v", ce.Lines[0])
				assert.Equal(t, before+1, srv.Count(op.Name), "nothing sent")
			})

			t.Run("the fake answers, and refuses in the SDK's words", func(t *testing.T) {
				status, msg := sendRaw(t, srv, op, dir, fields)
				require.Equal(t, http.StatusOK, status, msg)

				status, msg = sendRaw(t, srv, op, dir, badFields)
				assert.Equal(t, http.StatusBadRequest, status)
				require.NotNil(t, refused, "the SDK refused the value")
				want := refused.Field + ": " + refused.Rule
				if refused.Value != "" {
					want += ", got " + refused.Value
				}
				assert.Equal(t, want, msg)
			})
		})
	}
}

// sdkFields are fields as opcall.Build takes them: a file as a
// creative.File.
func sdkFields(dir string, fields map[string]any) map[string]any {
	out := make(map[string]any, len(fields))
	for name, v := range fields {
		if f, ok := v.(inFolder); ok {
			v = creative.FileFromPath(filepath.Join(dir, string(f)))
		}
		out[name] = v
	}
	return out
}

// commandLine is the command of op with a flag per field, as
// --flag=value so that a value may start with a dash.
func commandLine(op ops.Op, dir string, fields map[string]any) []string {
	args := []string{op.Area(), op.Verb()}
	for _, f := range op.Fields {
		v, ok := fields[f.Name]
		if !ok {
			continue
		}
		args = append(args, "--"+kebab(f.Name)+"="+text(dir, v))
	}
	return args
}

// text is a field's value as a command line or a form gives it.
func text(dir string, v any) string {
	switch x := v.(type) {
	case inFolder:
		return filepath.Join(dir, string(x))
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// runBatch runs a one-line jobs file, the job of op with fields, with a
// Runner of its own over a Store in memory; file fields name files in dir.
func runBatch(t *testing.T, srv *creativetest.Server, dir string, op ops.Op, fields map[string]any) (batch.Summary, error) {
	t.Helper()
	line := map[string]any{"op": op.Name}
	for name, v := range fields {
		if f, ok := v.(inFolder); ok {
			v = string(f)
		}
		line[name] = v
	}
	b, err := json.Marshal(line)
	require.NoError(t, err)
	jobs := filepath.Join(t.TempDir(), "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, append(b, '\n'), 0o644))
	r, err := batch.New(srv.Client(), ledgertest.NewMemory(), ledgertest.NewFiles(), batch.Options{Base: dir})
	require.NoError(t, err)
	checked, err := r.Check(context.Background(), batch.File(jobs))
	if err != nil {
		return batch.Summary{}, err
	}
	return r.Run(context.Background(), checked)
}

// sendRaw sends op's fields to the fake as the wire carries them, a JSON
// body or a form, with the access key, and returns the status and, for a
// failure, the envelope's message.
func sendRaw(t *testing.T, srv *creativetest.Server, op ops.Op, dir string, fields map[string]any) (int, string) {
	t.Helper()
	var body bytes.Buffer
	ctype := "application/json"
	if op.Form {
		w := multipart.NewWriter(&body)
		for _, f := range op.Fields {
			switch v := fields[f.Name].(type) {
			case nil:
			case inFolder:
				data, err := os.ReadFile(filepath.Join(dir, string(v)))
				require.NoError(t, err)
				part, err := w.CreateFormFile(f.Name, string(v))
				require.NoError(t, err)
				_, err = part.Write(data)
				require.NoError(t, err)
			default:
				require.NoError(t, w.WriteField(f.Name, text(dir, v)))
			}
		}
		require.NoError(t, w.Close())
		ctype = w.FormDataContentType()
	} else {
		require.NoError(t, json.NewEncoder(&body).Encode(fields))
	}
	req, err := http.NewRequest(http.MethodPost, srv.URL+op.Path(), &body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("x-access-key", srv.AccessKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	var env struct{ Message string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&env), fmt.Sprint(resp.Status))
	return resp.StatusCode, env.Message
}
