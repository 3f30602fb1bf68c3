package creative

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

// notUTF8 holds a byte that is not UTF-8: encoding/json would send it as
// U+FFFD, a text the user did not write.
const notUTF8 = "a fox in \xff the snow"

func TestBadInputFailsBeforeAByteIsSent(t *testing.T) {
	ctx := context.Background()
	missing := filepath.Join(t.TempDir(), "missing.png")
	tests := []struct {
		name  string
		req   any // the request, given to the method that takes it
		field string
		rule  string
	}{
		{"writer-tool without inputs", WriterToolRequest{Language: "en", Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "t"}, "inputs", "must hold at least one input"},
		{"writer-tool with number -1", WriterToolRequest{Inputs: []any{CoverLetterInput{"a", "b"}}, Number: -1, Language: "en", UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "t"}, "number", "must be at least 1"},
		{"writer-tool without an action for another use case", WriterToolRequest{Inputs: []any{map[string]string{"topic": "t"}}, Language: "en", UseCase: "Essay", Tone: "t"}, "action", "is required"},
		{"writer-tool without a language", WriterToolRequest{Inputs: []any{CoverLetterInput{"a", "b"}}, Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "t"}, "language", "is required"},
		{"writer-tool without a tone", WriterToolRequest{Inputs: []any{CoverLetterInput{"a", "b"}}, Language: "en", Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow}, "tone", "is required"},
		{"a cover letter input without a job role", CoverLetterRequest{JobSkills: "Go", Language: "en", Tone: "t"}, "inputs[0].jobRole", "is required"},
		{"a cover letter input of the wrong type", WriterToolRequest{Inputs: []any{"just text"}, Language: "en", Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "t"}, "inputs[0]", "must be a CoverLetterInput"},
		{"text-to-music without a prompt", TextToMusicRequest{}, "prompt", "is required"},
		{"text-to-music with a prompt of spaces", TextToMusicRequest{Prompt: " \t\n "}, "prompt", "must not be blank"},
		{"writer-tool with a blank tone", WriterToolRequest{Inputs: []any{CoverLetterInput{"a", "b"}}, Language: "en", Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "  "}, "tone", "must not be blank"},
		{"text-to-music with a negative duration", TextToMusicRequest{Prompt: "p", Duration: -1}, "duration", "must be a positive number"},
		{"text-to-music with a NaN duration", TextToMusicRequest{Prompt: "p", Duration: math.NaN()}, "duration", "must be a positive number"},
		{"text-to-speech without a voice", TextToSpeechRequest{Prompt: "p"}, "voiceId", "is required"},
		{"text-to-speech with a malformed voice", TextToSpeechRequest{Prompt: "p", VoiceID: "female 1"}, "voiceId", "must be an id of 24 lower-case hexadecimal characters"},
		{"enhance without audio", EnhanceAudioRequest{TypeID: ids.EnhancePodcast}, "audio", "is required"},
		{"enhance with empty audio", EnhanceAudioRequest{Audio: FileFromBytes("a.wav", []byte{}), TypeID: ids.EnhancePodcast}, "audio", "is empty"},
		{"enhance without a type", EnhanceAudioRequest{Audio: FileFromBytes("a.wav", wavBytes)}, "typeId", "is required"},
		{"split-audio with a missing file", SplitAudioRequest{Audio: FileFromPath(missing)}, "audio", "cannot be read"},
		{"text-to-image with -1 results", TextToImageRequest{Prompt: "p", NumberOfResults: -1}, "numberOfResults", "must be between 1 and 10"},
		{"text-to-image with 11 results", TextToImageRequest{Prompt: "p", NumberOfResults: 11}, "numberOfResults", "must be between 1 and 10"},
		{"text-to-image with a 23-character style", TextToImageRequest{Prompt: "p", NumberOfResults: 1, StyleID: "6644b0c5ec3658a8e38d94f"}, "styleId", "must be an id of 24 lower-case hexadecimal characters"},
		{"text-to-image with a non-hex color", TextToImageRequest{Prompt: "p", NumberOfResults: 1, ColorID: "6644b0c5ec3658a8e38d95zz"}, "colorId", "must be an id of 24 lower-case hexadecimal characters"},
		{"text-to-image with an upper-case style id", TextToImageRequest{Prompt: "p", NumberOfResults: 1, StyleID: "6644B0C5EC3658A8E38D94F2"}, "styleId", "must be an id of 24 lower-case hexadecimal characters"},
		{"text-to-image with a size label instead of an id", TextToImageRequest{Prompt: "p", NumberOfResults: 1, ImageSizeID: "2:3"}, "imageSizeId", "must be an id"},
		{"generate-logo with 5", GenerateLogoRequest{Prompt: "p", NumberOfResults: 5}, "numberOfResults", "must be between 1 and 4"},
		{"generate-logo with -1", GenerateLogoRequest{Prompt: "p", NumberOfResults: -1}, "numberOfResults", "must be between 1 and 4"},
		{"generate-qr without a url", GenerateQRRequest{Prompt: "p"}, "url", "is required"},
		{"generate-qr with a relative url", GenerateQRRequest{URL: "/index.html", Prompt: "p"}, "url", "must be an absolute http or https URL"},
		{"up-scale with an ftp url", UpScaleRequest{URL: "ftp://x.example/a.png"}, "url", "must be an absolute http or https URL"},
		{"up-scale with a negative scale", UpScaleRequest{URL: "https://x.example/a.png", Scale: -2}, "scale", "must be a positive number"},
		{"re-imagine without an image", ReImagineRequest{}, "image", "is required"},
		{"re-imagine with text named .png", ReImagineRequest{Image: FileFromBytes("x.png", []byte("not an image at all"))}, "image", "must be a PNG, JPEG or WebP image"},
		{"re-imagine with a GIF", ReImagineRequest{Image: FileFromBytes("x.gif", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))}, "image", "must be a PNG, JPEG or WebP image"},
		{"re-imagine 1025 pixels wide", ReImagineRequest{Image: FileFromBytes("x.png", pngHeader(1025, 10))}, "image", "must be at most 1024x1024 pixels"},
		{"re-imagine 1025 pixels high as JPEG", ReImagineRequest{Image: FileFromBytes("x.jpg", jpegOf(10, 1025))}, "image", "must be at most 1024x1024 pixels"},
		{"remove-background without a url", RemoveBackgroundRequest{}, "url", "is required"},
		{"color-image with a bare host", ColorImageRequest{URL: "example.com/a.png"}, "url", "must be an absolute http or https URL"},
		{"image enhance without a url", EnhanceImageRequest{}, "url", "is required"},
		{"change-background without a prompt", ChangeBackgroundRequest{Image: FileFromBytes("a.png", pngBytes)}, "prompt", "is required"},
		{"change-background with audio", ChangeBackgroundRequest{Image: FileFromBytes("a.png", wavBytes), Prompt: "p"}, "image", "must be a PNG, JPEG or WebP image"},
		{"infinite-zoom with -1 iterations", InfiniteZoomRequest{Prompt: "p", NumberOfIteration: -1}, "numberOfIteration", "must be at least 1"},
		{"video remove-background without a url", RemoveVideoBackgroundRequest{}, "url", "is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &requestCounter{}
			c := newTestClient(t, "https://api.example.com", WithHTTPClient(&http.Client{Transport: rt}))
			_, err := callWith(ctx, c, tt.req)
			var v *ValidationError
			require.ErrorAs(t, err, &v)
			assert.Equal(t, tt.field, v.Field)
			assert.Contains(t, v.Rule, tt.rule)
			assert.NotEmpty(t, v.Operation)
			assert.True(t, errors.Is(err, ErrInvalidRequest))
			assert.Equal(t, int64(0), rt.n.Load(), "nothing is sent")
			assert.Equal(t, err, tt.req.(interface{ Validate() error }).Validate(), "Validate says what the call says")
		})
	}
}

func TestInputsThatCannotBeSentAsGivenFailBeforeAByteIsSent(t *testing.T) {
	ctx := context.Background()
	cover := func(in any) WriterToolRequest {
		return WriterToolRequest{Inputs: []any{in}, Language: "English", Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "formal"}
	}
	withTone := func(req WriterToolRequest, tone Tone) WriterToolRequest { req.Tone = tone; return req }
	tests := []struct {
		name  string
		req   any // the request, given to the method that takes it
		field string
		rule  string
		cause any // a pointer to an error type the error must hold, or nil
	}{
		{"a text-to-image prompt that is not UTF-8", TextToImageRequest{Prompt: notUTF8, NumberOfResults: 1}, "prompt", "must be valid UTF-8 text", nil},
		{"a text-to-music prompt that is not UTF-8", TextToMusicRequest{Prompt: notUTF8}, "prompt", "must be valid UTF-8 text", nil},
		{"a text-to-speech prompt that is not UTF-8", TextToSpeechRequest{Prompt: notUTF8, VoiceID: ids.VoiceFemale1}, "prompt", "must be valid UTF-8 text", nil},
		{"a logo prompt that is not UTF-8", GenerateLogoRequest{Prompt: notUTF8}, "prompt", "must be valid UTF-8 text", nil},
		{"a QR prompt that is not UTF-8", GenerateQRRequest{URL: "https://example.com", Prompt: notUTF8}, "prompt", "must be valid UTF-8 text", nil},
		{"an infinite-zoom prompt that is not UTF-8", InfiniteZoomRequest{Prompt: notUTF8}, "prompt", "must be valid UTF-8 text", nil},
		{"a change-background prompt that is not UTF-8 (a form field)", ChangeBackgroundRequest{Image: FileFromBytes("a.png", pngBytes), Prompt: notUTF8}, "prompt", "must be valid UTF-8 text", nil},
		{"a cover letter's job role that is not UTF-8", CoverLetterRequest{JobRole: notUTF8, JobSkills: "Go", Language: "English", Tone: "formal"}, "inputs[0].jobRole", "must be valid UTF-8 text", nil},
		{"a writer-tool tone that is not UTF-8", withTone(cover(CoverLetterInput{"a", "b"}), notUTF8), "tone", "must be valid UTF-8 text", nil},
		{"a writer-tool input map holding text that is not UTF-8", cover(map[string]any{"jobRole": "a", "jobSkills": "b", "notes": notUTF8}), "inputs[0]", "must hold only valid UTF-8 text", nil},
		{"a writer-tool input key that is not UTF-8", cover(map[string]string{"jobRole": "a", "jobSkills": "b", notUTF8: "c"}), "inputs[0]", "must hold only valid UTF-8 text", nil},
		{"a URL that is not UTF-8", UpScaleRequest{URL: "https://example.com/\xff.png"}, "url", "must be valid UTF-8 text", nil},
		{"a URL with a port out of range", UpScaleRequest{URL: "https://example.com:99999999/a.png"}, "url", "must have a port from 1 to 65535", nil},
		{"a URL with port 65536", RemoveBackgroundRequest{URL: "http://example.com:65536/a.png"}, "url", "must have a port from 1 to 65535", nil},
		{"a URL with port 0", GenerateQRRequest{URL: "https://example.com:0/", Prompt: "p"}, "url", "must have a port from 1 to 65535", nil},
		{"a URL with a port and no host", ColorImageRequest{URL: "https://:443/a.png"}, "url", "must be an absolute http or https URL", nil},
		{"a writer-tool input holding a channel", WriterToolRequest{Inputs: []any{map[string]any{"c": make(chan int)}}, Language: "en", Number: 1, UseCase: "Other", Action: "a", Tone: "t"}, "inputs[0]", "cannot be encoded as JSON", new(*json.UnsupportedTypeError)},
		{"a writer-tool input that is a function", WriterToolRequest{Inputs: []any{func() {}}, Language: "en", Number: 1, UseCase: "Other", Action: "a", Tone: "t"}, "inputs[0]", "cannot be encoded as JSON", new(*json.UnsupportedTypeError)},
		{"a writer-tool input holding NaN", WriterToolRequest{Inputs: []any{map[string]any{"score": math.NaN()}}, Language: "en", Number: 1, UseCase: "Other", Action: "a", Tone: "t"}, "inputs[0]", "cannot be encoded as JSON", new(*json.UnsupportedValueError)},
		{"a cover letter map without jobSkills", cover(map[string]string{"jobRole": "Backend engineer"}), "inputs[0].jobSkills", "is required", nil},
		{"a cover letter map whose jobRole is a number", cover(map[string]any{"jobRole": 7, "jobSkills": "Go"}), "inputs[0].jobRole", "must be a string", nil},
		{"a nil *CoverLetterInput", cover((*CoverLetterInput)(nil)), "inputs[0]", "must not be null", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &requestCounter{}
			c := newTestClient(t, "https://api.example.com", WithHTTPClient(&http.Client{Transport: rt}))
			_, err := callWith(ctx, c, tt.req)
			var v *ValidationError
			require.ErrorAs(t, err, &v, "%v", err)
			assert.Equal(t, tt.field, v.Field)
			assert.Contains(t, v.Rule, tt.rule)
			assert.ErrorIs(t, err, ErrInvalidRequest)
			if tt.cause != nil {
				assert.ErrorAs(t, err, tt.cause)
			}
			assert.Equal(t, int64(0), rt.n.Load(), "nothing is sent")
		})
	}
}

func TestValidImagesAtTheLimitsPassValidation(t *testing.T) {
	ts := newTestServer(t, replyJSON(200, `{"success":true,"message":"ok","data":{"base64":"`+pngB64+`"}}`))
	c := newTestClient(t, ts.URL)
	for name, b := range map[string][]byte{"a 1024x1024 PNG": pngHeader(1024, 1024), "a JPEG": jpegOf(640, 480), "a WebP": webpLossless1x1} {
		t.Run(name, func(t *testing.T) {
			_, err := c.ReImagine(context.Background(), ReImagineRequest{Image: FileFromBytes("in", b)})
			assert.NoError(t, err)
		})
	}
	assert.Equal(t, int64(3), ts.hits.Load())
}

// URLs that are well formed pass, ports included, and so does text with a
// real U+FFFD in it.
func TestWellFormedURLsAndTextPass(t *testing.T) {
	ts := newTestServer(t, replyJSON(200, okImage))
	c := newTestClient(t, ts.URL)
	for _, u := range []string{"https://example.com:65535/a.png", "http://example.com:1/a.png", "https://example.com:8443/a%20b.png?x=1", "https://[::1]:443/a.png", "https://example.com/é.png"} {
		_, err := c.UpScale(context.Background(), UpScaleRequest{URL: u})
		assert.NoError(t, err, u)
	}
	_, err := c.GenerateQR(context.Background(), GenerateQRRequest{URL: "https://example.com", Prompt: "a sign that reads \uFFFD"})
	assert.NoError(t, err)
}

// A map[string]string with the cover-letter keys is accepted like the
// typed input, and goes on the wire as the same JSON.
func TestACoverLetterMapIsSentLikeTheTypedInput(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		replyJSON(200, `{"success":true,"data":{"language":"English","useCase":"CoverLetter","word_count":2,"text":{"choices":[{"text":"Dear team","index":0,"word_count":2}]}}}`)(w, r)
	})
	c := newTestClient(t, ts.URL)
	for _, in := range []any{
		CoverLetterInput{JobRole: "Backend engineer", JobSkills: "Go, SQL"},
		&CoverLetterInput{JobRole: "Backend engineer", JobSkills: "Go, SQL"},
		map[string]string{"jobRole": "Backend engineer", "jobSkills": "Go, SQL"},
		map[string]any{"jobRole": "Backend engineer", "jobSkills": "Go, SQL"},
	} {
		_, err := c.WriterTool(context.Background(), WriterToolRequest{Inputs: []any{in}, Language: "English", Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "formal"})
		require.NoError(t, err, "%T", in)
	}
	require.Len(t, bodies, 4)
	assert.JSONEq(t, `{"inputs":[{"jobRole":"Backend engineer","jobSkills":"Go, SQL"}],"language":"English","number":1,"useCase":"CoverLetter","action":"generate_writenow","tone":"formal"}`, bodies[0])
	for _, b := range bodies[1:] {
		assert.Equal(t, bodies[0], b, "the same bytes on the wire")
	}
}

func TestValidHeaderValue(t *testing.T) {
	for s, want := range map[string]bool{
		"":                        true,
		"my-app/1.2 (+https://x)": true,
		"tab\tinside":             true,
		"caf\xc3\xa9":             true, // obs-text passes, as net/http sends it
		"nul\x00inside":           false,
		"line\nbreak":             false,
		"carriage\rreturn":        false,
		"bell\a":                  false,
		"del\x7f":                 false,
		"\x1b[31mred":             false,
	} {
		assert.Equal(t, want, validHeaderValue(s), "%q", s)
	}
}

// The error of an input that cannot be encoded unwraps to encoding/json's.
func TestAnInputThatCannotBeEncodedUnwrapsToTheEncodingError(t *testing.T) {
	c := newTestClient(t, "https://api.example.com", WithHTTPClient(&http.Client{Transport: &requestCounter{}}))
	_, err := c.WriterTool(context.Background(), WriterToolRequest{Inputs: []any{math.Inf(1)}, Language: "en", Number: 1, UseCase: "Other", Action: "a", Tone: "t"})
	var uv *json.UnsupportedValueError
	require.True(t, errors.As(err, &uv), "%v", err)
}
