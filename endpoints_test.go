package creative

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/ops"
)

var update = flag.Bool("update", false, "rewrite the golden request bodies in testdata/golden")

// endpointCase is one endpoint called with typical input.
type endpointCase struct {
	op   string // ops.TextToImage
	req  any    // the request value, such as TextToImageRequest
	data string // the envelope's data in the answer
	want any    // the typed result
	form bool
	// audio, when set, is the answer instead of an envelope: speech.
	audio string
}

var (
	pngBytes = pngHeader(4, 3)
	pngB64   = base64.StdEncoding.EncodeToString(pngBytes)
	wavBytes = append([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), bytes.Repeat([]byte{1}, 64)...)
)

func endpointCases() []endpointCase {
	img := Image{Data: pngBytes}
	obj := `{"base64":"` + pngB64 + `"}`
	return []endpointCase{
		{op: ops.TextToSpeech, req: TextToSpeechRequest{Prompt: "good morning", VoiceID: ids.VoiceFemale1}, audio: "ID3-mp3-bytes"},
		{op: ops.WriterTool, req: WriterToolRequest{Inputs: []any{CoverLetterInput{JobRole: "Engineer", JobSkills: "Go"}}, Language: "English", Number: 2, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "formal"}, data: `{"language":"English","useCase":"CoverLetter","word_count":5,"text":{"choices":[{"text":"Dear team,","index":0,"word_count":2},{"text":"Hello there friends","index":1,"word_count":3}]}}`,
			want: &WriterResult{Language: "English", UseCase: "CoverLetter", WordCount: 5, Choices: []WriterChoice{{"Dear team,", 0, 2}, {"Hello there friends", 1, 3}}}},
		{op: ops.TextToMusic, req: TextToMusicRequest{Prompt: "calm piano", Duration: 12.5}, data: `"https://files.example.com/m.wav"`, want: URL("https://files.example.com/m.wav")},
		{op: ops.EnhanceAudio, form: true, req: EnhanceAudioRequest{Audio: FileFromBytes("talk.wav", wavBytes), TypeID: ids.EnhancePodcast}, data: `"https://files.example.com/e.wav"`, want: URL("https://files.example.com/e.wav")},
		{op: ops.SplitAudio, form: true, req: SplitAudioRequest{Audio: FileFromBytes("song.wav", wavBytes)}, data: `["https://f.example/1.wav","https://f.example/2.wav"]`, want: []URL{"https://f.example/1.wav", "https://f.example/2.wav"}},
		{op: ops.TextToImage, req: TextToImageRequest{Prompt: "a fox", NumberOfResults: 2, ImageSizeID: ids.Size2x3, StyleID: ids.StyleAnime, CameraID: ids.CameraCloseUp, ColorID: ids.ColorPastelColors, LightingID: ids.LightingGoldenHour}, data: `[` + obj + `,` + obj + `]`, want: []Image{img, img}},
		{op: ops.GenerateLogo, req: GenerateLogoRequest{Prompt: "bakery", NumberOfResults: 3}, data: `[` + obj + `,` + obj + `,` + obj + `]`, want: []Image{img, img, img}},
		{op: ops.GenerateQR, req: GenerateQRRequest{URL: "https://example.com", Prompt: "flowers"}, data: obj, want: img},
		{op: ops.UpScale, req: UpScaleRequest{URL: "https://img.example/a.png", Scale: 2}, data: obj, want: img},
		{op: ops.ReImagine, form: true, req: ReImagineRequest{Image: FileFromBytes("cat.png", pngBytes)}, data: obj, want: img},
		{op: ops.RemoveBackground, req: RemoveBackgroundRequest{URL: "https://img.example/a.png"}, data: obj, want: img},
		{op: ops.ColorImage, req: ColorImageRequest{URL: "https://img.example/a.png"}, data: obj, want: img},
		{op: ops.EnhanceImage, req: EnhanceImageRequest{URL: "https://img.example/a.png"}, data: obj, want: img},
		{op: ops.ChangeBackground, form: true, req: ChangeBackgroundRequest{Image: FileFromBytes("cat.png", pngBytes), Prompt: "a beach"}, data: obj, want: img},
		{op: ops.InfiniteZoom, req: InfiniteZoomRequest{Prompt: "galaxy", NumberOfIteration: 3}, data: `"https://f.example/z.mp4"`, want: URL("https://f.example/z.mp4")},
		{op: ops.RemoveVideoBackground, req: RemoveVideoBackgroundRequest{URL: "https://v.example/a.mp4"}, data: `"https://f.example/v.mp4"`, want: URL("https://f.example/v.mp4")},
	}
}

// call calls the case's method with its request.
func (e endpointCase) call(c *Client) (any, error) { return callWith(context.Background(), c, e.req) }

// callWith calls the method that takes req.
func callWith(ctx context.Context, c *Client, req any) (any, error) {
	switch r := req.(type) {
	case CoverLetterRequest:
		return c.CoverLetter(ctx, r)
	case WriterToolRequest:
		return c.WriterTool(ctx, r)
	case TextToMusicRequest:
		return c.TextToMusic(ctx, r)
	case TextToSpeechRequest:
		return c.TextToSpeech(ctx, r)
	case EnhanceAudioRequest:
		return c.EnhanceAudio(ctx, r)
	case SplitAudioRequest:
		return c.SplitAudio(ctx, r)
	case TextToImageRequest:
		return c.TextToImage(ctx, r)
	case GenerateLogoRequest:
		return c.GenerateLogo(ctx, r)
	case GenerateQRRequest:
		return c.GenerateQR(ctx, r)
	case UpScaleRequest:
		return c.UpScale(ctx, r)
	case ReImagineRequest:
		return c.ReImagine(ctx, r)
	case RemoveBackgroundRequest:
		return c.RemoveBackground(ctx, r)
	case ColorImageRequest:
		return c.ColorImage(ctx, r)
	case EnhanceImageRequest:
		return c.EnhanceImage(ctx, r)
	case ChangeBackgroundRequest:
		return c.ChangeBackground(ctx, r)
	case InfiniteZoomRequest:
		return c.InfiniteZoom(ctx, r)
	case RemoveVideoBackgroundRequest:
		return c.RemoveVideoBackground(ctx, r)
	}
	panic(fmt.Sprintf("no method takes a %T", req))
}

// The table of operations (internal/ops) and the SDK cannot drift apart:
// every operation has an endpoint case; each required field left out is a
// *ValidationError naming it, before anything is sent; each optional one
// left out is sent without it; an id field is typed by its kind and
// refuses a malformed id; a link field refuses what is not a URL.
func TestEveryOperationOfTheTableIsChecked(t *testing.T) {
	cases := map[string]endpointCase{}
	for _, e := range endpointCases() {
		cases[e.op] = e
	}
	assert.Len(t, cases, len(ops.All), "endpoint cases that are not operations of the table")
	for _, o := range ops.All {
		e, ok := cases[o.Name]
		if !assert.True(t, ok, "%s has no endpoint case", o.Name) {
			continue
		}
		assert.Equal(t, o.Form, e.form, "%s: form", o.Name)
		for _, f := range o.Fields {
			t.Run(o.Name+"/"+f.Name, func(t *testing.T) {
				var arrived atomic.Int32
				ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					arrived.Add(1)
					if e.audio != "" {
						w.Header().Set("Content-Type", "audio/mpeg")
						_, _ = io.WriteString(w, e.audio)
						return
					}
					replyJSON(200, `{"success":true,"message":"ok","data":`+e.data+`}`)(w, r)
				})
				c := newTestClient(t, ts.URL)
				field := requestField(t, e.req, f.Name)
				got, err := callWith(context.Background(), c, withField(e.req, field, reflect.Zero(field.Type)))
				if a, ok := got.(*Audio); ok && a != nil {
					a.Close()
				}
				// A count left out is its default (ops.Field.Default), and a
				// cover letter's action is filled in: neither is required of
				// the caller.
				filled := f.Default != 0 || o.Name == ops.WriterTool && f.Name == "action"
				if f.Required && !filled {
					var ve *ValidationError
					require.ErrorAs(t, err, &ve, "%s left out", f.Name)
					assert.Equal(t, f.Name, ve.Field)
					assert.Equal(t, o.Name, ve.Operation)
					assert.Zero(t, arrived.Load(), "a request was sent")
				} else {
					// Sent without it (the answer may then not fit the
					// case's, as for the count of logos).
					var ve *ValidationError
					assert.False(t, errors.As(err, &ve), "%s is optional: %v", f.Name, err)
					assert.EqualValues(t, 1, arrived.Load())
				}
				var bad any
				switch f.Type {
				case ops.ID:
					assert.Equal(t, idTypeName(f.IDKind), field.Type.Name(), "%s is typed by its kind", f.Name)
					bad = "not-an-id"
				case ops.Link:
					bad = "not a link"
				default:
					return
				}
				_, err = callWith(context.Background(), c, withField(e.req, field, reflect.ValueOf(bad).Convert(field.Type)))
				var ve *ValidationError
				require.ErrorAs(t, err, &ve, "%s = %q", f.Name, bad)
				assert.Equal(t, f.Name, ve.Field)
			})
		}
	}
}

// requestField finds the field of a request struct sent as name: by its
// json or url tag, or for a File (tagged url:"-") by its name.
func requestField(t *testing.T, req any, name string) reflect.StructField {
	t.Helper()
	rt := reflect.TypeOf(req)
	for i := range rt.NumField() {
		f := rt.Field(i)
		tag, _, _ := strings.Cut(cmpTag(f), ",")
		if tag == name || tag == "-" && strings.EqualFold(f.Name, name) {
			return f
		}
	}
	t.Fatalf("%T has no field sent as %s", req, name)
	return reflect.StructField{}
}

func cmpTag(f reflect.StructField) string {
	if tag, ok := f.Tag.Lookup("json"); ok {
		return tag
	}
	return f.Tag.Get("url")
}

// withField returns a copy of req with the field set to v.
func withField(req any, f reflect.StructField, v reflect.Value) any {
	cp := reflect.New(reflect.TypeOf(req)).Elem()
	cp.Set(reflect.ValueOf(req))
	cp.FieldByIndex(f.Index).Set(v)
	return cp.Interface()
}

// idTypeName is the Go type of an id kind of package ids: "image-size" is
// ImageSizeID.
func idTypeName(kind string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(kind, "-") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String() + "ID"
}

func goldenPath(op string) string {
	return filepath.Join("testdata", "golden", strings.ReplaceAll(op, "/", "_")+".json")
}

func TestEveryEndpointSendsItsRequestAndReturnsItsTypedResult(t *testing.T) {
	for _, tt := range endpointCases() {
		t.Run(tt.op, func(t *testing.T) {
			var req *http.Request
			var body []byte
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				req = r
				body, _ = io.ReadAll(r.Body)
				if tt.audio != "" {
					w.Header().Set("Content-Type", "audio/mpeg")
					_, _ = io.WriteString(w, tt.audio)
					return
				}
				replyJSON(200, `{"success":true,"message":"done","data":`+tt.data+`}`)(w, r)
			})
			c := newTestClient(t, ts.URL)
			got, err := tt.call(c)
			require.NoError(t, err)
			if a, ok := got.(*Audio); ok {
				speech, err := io.ReadAll(a)
				require.NoError(t, err)
				require.NoError(t, a.Close())
				got = string(speech)
				tt.want = tt.audio
			}
			assert.Equal(t, tt.want, got)

			area, name, _ := strings.Cut(tt.op, "/")
			assert.Equal(t, http.MethodPost, req.Method)
			assert.Equal(t, "/"+area+"/v1/"+name, req.URL.Path)
			assert.Equal(t, int64(len(body)), req.ContentLength)
			if tt.form {
				mt, params, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
				require.NoError(t, err)
				assert.Equal(t, "multipart/form-data", mt)
				body = formSummary(t, body, params["boundary"])
			} else {
				assert.Equal(t, "application/json", req.Header.Get("Content-Type"))
			}
			golden := goldenPath(tt.op)
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, append(body, '\n'), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -run TestEveryEndpoint -update once to create it")
			assert.Equal(t, strings.TrimSuffix(string(want), "\n"), string(body))
		})
	}
}

// formSummary turns a multipart body into stable text: each part's name,
// file name, content type and content (files as their length and start).
func formSummary(t *testing.T, body []byte, boundary string) []byte {
	t.Helper()
	var b strings.Builder
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		content, _ := io.ReadAll(p)
		if p.FileName() != "" {
			b.WriteString("part " + p.FormName() + " file=" + p.FileName() + " type=" + p.Header.Get("Content-Type") + " bytes=" + strconv.Itoa(len(content)) + " start=" + hex.EncodeToString(content[:min(len(content), 8)]) + "\n")
			continue
		}
		b.WriteString("part " + p.FormName() + " = " + string(content) + "\n")
	}
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

func TestOptionalNumbersAreLeftOutWhenUnset(t *testing.T) {
	c, mt := mockClient(t, "https://api.example.com")
	var bodies []string
	mt.RegisterNoResponder(func(r *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		if strings.Contains(r.URL.Path, "image") {
			return httpmock.NewStringResponse(200, `{"success":true,"message":"ok","data":{"base64":"`+pngB64+`"}}`), nil
		}
		return httpmock.NewStringResponse(200, `{"success":true,"message":"ok","data":"https://f.example/x"}`), nil
	})
	ctx := context.Background()
	_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"})
	require.NoError(t, err)
	_, err = c.InfiniteZoom(ctx, InfiniteZoomRequest{Prompt: "p"})
	require.NoError(t, err)
	_, err = c.UpScale(ctx, UpScaleRequest{URL: "https://i.example/a.png"})
	require.NoError(t, err)
	_, err = c.GenerateLogo(ctx, GenerateLogoRequest{Prompt: "p"})
	require.NoError(t, err)
	_, err = c.TextToImage(ctx, TextToImageRequest{Prompt: "p", NumberOfResults: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{
		`{"prompt":"p"}`,
		`{"prompt":"p"}`,
		`{"url":"https://i.example/a.png"}`,
		`{"prompt":"p"}`,
		`{"prompt":"p","numberOfResults":1}`,
	}, bodies)
}

func TestTextToImageSendsTheSizeUnderBothNames(t *testing.T) {
	c, mt := mockClient(t, "https://api.example.com")
	var body string
	mt.RegisterResponder(http.MethodPost, "https://api.example.com/image/v1/text-to-image", func(r *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		return httpmock.NewStringResponse(200, `{"success":true,"message":"ok","data":[{"base64":"`+pngB64+`"}]}`), nil
	})
	_, err := c.TextToImage(context.Background(), TextToImageRequest{Prompt: "p", NumberOfResults: 1, ImageSizeID: ids.Size3x2})
	require.NoError(t, err)
	assert.Equal(t, `{"prompt":"p","numberOfResults":1,"imageSizeId":"6644b0c5ec3658a8e38d951d","dimensionsId":"6644b0c5ec3658a8e38d951d"}`, body)
}

func TestImageDataIsAcceptedInEveryShapeTheSpecAllows(t *testing.T) {
	shapes := map[string]string{
		"an object with base64":    `{"base64":"` + pngB64 + `"}`,
		"a list of one object":     `[{"base64":"` + pngB64 + `"}]`,
		"a bare base64 string":     `"` + pngB64 + `"`,
		"a data URL":               `{"base64":"data:image/png;base64,` + pngB64 + `"}`,
		"unpadded base64":          `"` + strings.TrimRight(pngB64, "=") + `"`,
		"an object with more keys": `{"id":7,"base64":"` + pngB64 + `","mime":"image/png"}`,
		"escaped slashes":          `{"base64":"` + strings.ReplaceAll(pngB64, "/", `\/`) + `"}`,
	}
	calls := []struct {
		name string
		call func(c *Client) ([]Image, error)
	}{
		{"text-to-image", func(c *Client) ([]Image, error) {
			return c.TextToImage(context.Background(), TextToImageRequest{Prompt: "p", NumberOfResults: 1})
		}},
		{"generate-logo", func(c *Client) ([]Image, error) {
			return c.GenerateLogo(context.Background(), GenerateLogoRequest{Prompt: "p"})
		}},
		{"generate-qr", one(func(c *Client) (Image, error) {
			return c.GenerateQR(context.Background(), GenerateQRRequest{URL: "https://e.example", Prompt: "p"})
		})},
		{"up-scale", one(func(c *Client) (Image, error) {
			return c.UpScale(context.Background(), UpScaleRequest{URL: "https://e.example/a.png"})
		})},
		{"re-imagine", one(func(c *Client) (Image, error) {
			return c.ReImagine(context.Background(), ReImagineRequest{Image: FileFromBytes("a.png", pngBytes)})
		})},
		{"remove-background", one(func(c *Client) (Image, error) {
			return c.RemoveBackground(context.Background(), RemoveBackgroundRequest{URL: "https://e.example/a.png"})
		})},
		{"color-image", one(func(c *Client) (Image, error) {
			return c.ColorImage(context.Background(), ColorImageRequest{URL: "https://e.example/a.png"})
		})},
		{"enhance", one(func(c *Client) (Image, error) {
			return c.EnhanceImage(context.Background(), EnhanceImageRequest{URL: "https://e.example/a.png"})
		})},
		{"change-background", one(func(c *Client) (Image, error) {
			return c.ChangeBackground(context.Background(), ChangeBackgroundRequest{Image: FileFromBytes("a.png", pngBytes), Prompt: "p"})
		})},
	}
	for _, op := range calls {
		for shape, data := range shapes {
			t.Run(op.name+" with "+shape, func(t *testing.T) {
				ts := newTestServer(t, replyJSON(200, `{"success":true,"message":"ok","data":`+data+`}`))
				ims, err := op.call(newTestClient(t, ts.URL))
				require.NoError(t, err)
				require.Len(t, ims, 1)
				assert.Equal(t, pngBytes, ims[0].Data)
				assert.Equal(t, "image/png", ims[0].ContentType())
			})
		}
	}
}

func one(f func(c *Client) (Image, error)) func(c *Client) ([]Image, error) {
	return func(c *Client) ([]Image, error) {
		im, err := f(c)
		if err != nil {
			return nil, err
		}
		return []Image{im}, nil
	}
}

func TestUnexpectedShapesAreErrorsThatSayWhatCame(t *testing.T) {
	tests := []struct {
		name, data, want string
		call             func(c *Client) (any, error)
	}{
		{"a number for images", `42`, "data is a number", imagesCall},
		{"an object without base64", `{"url":"x"}`, "without a base64 string", imagesCall},
		{"a list of numbers", `[1,2]`, "data[0] is a number, want an object with base64 or a base64 string", imagesCall},
		{"a list of strings that are not base64", `["a","b"]`, "data[0] is not valid base64", imagesCall},
		{"an empty list", `[]`, "empty array", imagesCall},
		{"invalid base64", `{"base64":"!!!not base64!!!"}`, "not valid base64", imagesCall},
		{"an empty base64", `{"base64":""}`, "is empty", imagesCall},
		{"two images where one is promised", `[{"base64":"` + pngB64 + `"},{"base64":"` + pngB64 + `"}]`, "data holds more than the 1 image(s) asked for", func(c *Client) (any, error) {
			return c.GenerateQR(context.Background(), GenerateQRRequest{URL: "https://e.example", Prompt: "p"})
		}},
		{"an object for a URL", `{"url":"x"}`, "data is an object, want a non-empty URL string", func(c *Client) (any, error) {
			return c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
		}},
		{"numbers for URLs", `[1,2]`, "data[0] is a number, want a non-empty URL string", func(c *Client) (any, error) {
			return c.SplitAudio(context.Background(), SplitAudioRequest{Audio: FileFromBytes("a.wav", wavBytes)})
		}},
		{"a writer without choices", `{"language":"en","text":{}}`, "no text.choices", func(c *Client) (any, error) {
			return c.CoverLetter(context.Background(), CoverLetterRequest{JobRole: "a", JobSkills: "b", Language: "en", Tone: "t"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, replyJSON(200, `{"success":true,"message":"ok","data":`+tt.data+`}`))
			_, err := tt.call(newTestClient(t, ts.URL))
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
			assert.Contains(t, apiErr.Message, tt.want)
			assert.Equal(t, 200, apiErr.StatusCode)
		})
	}
}

func imagesCall(c *Client) (any, error) {
	return c.TextToImage(context.Background(), TextToImageRequest{Prompt: "p", NumberOfResults: 1})
}

func TestSplitAudioTakesALoneURLAsAListOfOne(t *testing.T) {
	ts := newTestServer(t, replyJSON(200, `{"success":true,"message":"ok","data":"https://f.example/a.wav"}`))
	us, err := newTestClient(t, ts.URL).SplitAudio(context.Background(), SplitAudioRequest{Audio: FileFromBytes("a.wav", wavBytes)})
	require.NoError(t, err)
	assert.Equal(t, []URL{"https://f.example/a.wav"}, us)
}

func TestTextToSpeechStreamsWithoutHoldingTheAudio(t *testing.T) {
	const size = 20 << 20
	var req *http.Request
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		req = r
		w.Header().Set("Content-Type", "audio/mpeg")
		chunk := bytes.Repeat([]byte{0xff, 0xfb, 0x14, 0xc4}, 16<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			_, _ = w.Write(chunk)
		}
	})
	c := newTestClient(t, ts.URL)
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	audio, err := c.TextToSpeech(context.Background(), TextToSpeechRequest{Prompt: "hello", VoiceID: ids.VoiceFemale1})
	require.NoError(t, err)
	assert.Equal(t, "audio/mpeg", audio.ContentType)
	var peak uint64
	var n int64
	buf := make([]byte, 32<<10)
	for {
		k, err := audio.Read(buf)
		n += int64(k)
		if n%(1<<20) < int64(len(buf)) {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	require.NoError(t, audio.Close())
	require.NoError(t, audio.Close(), "Close twice is fine")
	assert.Equal(t, int64(size), n)
	grown := int64(peak) - int64(base.HeapInuse)
	t.Logf("heap grew by %.2f MiB while reading 20 MiB", float64(grown)/(1<<20))
	assert.Less(t, grown, int64(4<<20))
	assert.Equal(t, "audio/mpeg, application/json", req.Header.Get("Accept"))
}

func TestTextToSpeechReadsAnEnvelopeAsAFailure(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		sentinel error
		want     string
	}{
		{"a 200 envelope with success false", 200, `{"success":false,"message":"voice is busy"}`, nil, "voice is busy"},
		{"a 200 envelope with success true", 200, `{"success":true,"message":"ok","data":"x"}`, ErrUnexpectedResponse, "where audio was promised"},
		{"a 400 envelope", 400, `{"success":false,"message":"voiceId: unknown"}`, ErrInvalidRequest, "voiceId: unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, replyJSON(tt.status, tt.body))
			audio, err := newTestClient(t, ts.URL).TextToSpeech(context.Background(), TextToSpeechRequest{Prompt: "p", VoiceID: ids.VoiceMale1})
			assert.Nil(t, audio)
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Contains(t, apiErr.Message, tt.want)
			if tt.sentinel != nil {
				assert.ErrorIs(t, err, tt.sentinel)
			}
		})
	}
}

// requestCounter counts requests that reach a transport.
type requestCounter struct{ n atomic.Int64 }

func (r *requestCounter) RoundTrip(*http.Request) (*http.Response, error) {
	r.n.Add(1)
	return nil, io.ErrUnexpectedEOF
}
