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
		call  func(c *Client) error
		field string
		rule  string
	}{
		{"writer-tool without inputs", func(c *Client) error {
			_, err := c.WriterTool(ctx, WriterToolRequest{Language: "en", Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "t"})
			return err
		}, "inputs", "must hold at least one input"},
		{"writer-tool with number 0", func(c *Client) error {
			_, err := c.WriterTool(ctx, WriterToolRequest{Inputs: []any{CoverLetterInput{"a", "b"}}, Language: "en", UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "t"})
			return err
		}, "number", "must be at least 1"},
		{"writer-tool without a language", func(c *Client) error {
			_, err := c.WriterTool(ctx, WriterToolRequest{Inputs: []any{CoverLetterInput{"a", "b"}}, Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "t"})
			return err
		}, "language", "is required"},
		{"writer-tool without a tone", func(c *Client) error {
			_, err := c.WriterTool(ctx, WriterToolRequest{Inputs: []any{CoverLetterInput{"a", "b"}}, Language: "en", Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow})
			return err
		}, "tone", "is required"},
		{"a cover letter input without a job role", func(c *Client) error {
			_, err := c.CoverLetter(ctx, CoverLetterRequest{JobSkills: "Go", Language: "en", Tone: "t"})
			return err
		}, "inputs[0].jobRole", "is required"},
		{"a cover letter input of the wrong type", func(c *Client) error {
			_, err := c.WriterTool(ctx, WriterToolRequest{Inputs: []any{"just text"}, Language: "en", Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "t"})
			return err
		}, "inputs[0]", "must be a CoverLetterInput"},
		{"text-to-music without a prompt", func(c *Client) error {
			_, err := c.TextToMusic(ctx, TextToMusicRequest{})
			return err
		}, "prompt", "is required"},
		{"text-to-music with a negative duration", func(c *Client) error {
			_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p", Duration: -1})
			return err
		}, "duration", "must be a positive number"},
		{"text-to-music with a NaN duration", func(c *Client) error {
			_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p", Duration: math.NaN()})
			return err
		}, "duration", "must be a positive number"},
		{"text-to-speech without a voice", func(c *Client) error {
			_, err := c.TextToSpeech(ctx, TextToSpeechRequest{Prompt: "p"})
			return err
		}, "voiceId", "is required"},
		{"text-to-speech with a malformed voice", func(c *Client) error {
			_, err := c.TextToSpeech(ctx, TextToSpeechRequest{Prompt: "p", VoiceID: "female 1"})
			return err
		}, "voiceId", "must be an id of 24 lower-case hexadecimal characters"},
		{"enhance without audio", func(c *Client) error {
			_, err := c.EnhanceAudio(ctx, EnhanceAudioRequest{TypeID: ids.EnhancePodcast})
			return err
		}, "audio", "is required"},
		{"enhance with empty audio", func(c *Client) error {
			_, err := c.EnhanceAudio(ctx, EnhanceAudioRequest{Audio: FileFromBytes("a.wav", []byte{}), TypeID: ids.EnhancePodcast})
			return err
		}, "audio", "is empty"},
		{"enhance without a type", func(c *Client) error {
			_, err := c.EnhanceAudio(ctx, EnhanceAudioRequest{Audio: FileFromBytes("a.wav", wavBytes)})
			return err
		}, "typeId", "is required"},
		{"split-audio with a missing file", func(c *Client) error {
			_, err := c.SplitAudio(ctx, SplitAudioRequest{Audio: FileFromPath(missing)})
			return err
		}, "audio", "cannot be read"},
		{"text-to-image with 0 results", func(c *Client) error {
			_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p"})
			return err
		}, "numberOfResults", "must be between 1 and 10"},
		{"text-to-image with 11 results", func(c *Client) error {
			_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p", NumberOfResults: 11})
			return err
		}, "numberOfResults", "must be between 1 and 10"},
		{"text-to-image with a 23-character style", func(c *Client) error {
			_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p", NumberOfResults: 1, StyleID: "6644b0c5ec3658a8e38d94f"})
			return err
		}, "styleId", "must be an id of 24 lower-case hexadecimal characters"},
		{"text-to-image with a non-hex color", func(c *Client) error {
			_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p", NumberOfResults: 1, ColorID: "6644b0c5ec3658a8e38d95zz"})
			return err
		}, "colorId", "must be an id of 24 lower-case hexadecimal characters"},
		{"text-to-image with an upper-case style id", func(c *Client) error {
			_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p", NumberOfResults: 1, StyleID: "6644B0C5EC3658A8E38D94F2"})
			return err
		}, "styleId", "must be an id of 24 lower-case hexadecimal characters"},
		{"text-to-image with a size label instead of an id", func(c *Client) error {
			_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p", NumberOfResults: 1, ImageSizeID: "2:3"})
			return err
		}, "imageSizeId", "must be an id"},
		{"generate-logo with 5", func(c *Client) error {
			_, err := c.GenerateLogo(ctx, GenerateLogoRequest{Prompt: "p", NumberOfResults: 5})
			return err
		}, "numberOfResults", "must be between 1 and 4"},
		{"generate-logo with -1", func(c *Client) error {
			_, err := c.GenerateLogo(ctx, GenerateLogoRequest{Prompt: "p", NumberOfResults: -1})
			return err
		}, "numberOfResults", "must be between 1 and 4"},
		{"generate-qr without a url", func(c *Client) error {
			_, err := c.GenerateQR(ctx, GenerateQRRequest{Prompt: "p"})
			return err
		}, "url", "is required"},
		{"generate-qr with a relative url", func(c *Client) error {
			_, err := c.GenerateQR(ctx, GenerateQRRequest{URL: "/index.html", Prompt: "p"})
			return err
		}, "url", "must be an absolute http or https URL"},
		{"up-scale with an ftp url", func(c *Client) error {
			_, err := c.UpScale(ctx, UpScaleRequest{URL: "ftp://x.example/a.png"})
			return err
		}, "url", "must be an absolute http or https URL"},
		{"up-scale with a negative scale", func(c *Client) error {
			_, err := c.UpScale(ctx, UpScaleRequest{URL: "https://x.example/a.png", Scale: -2})
			return err
		}, "scale", "must be a positive number"},
		{"re-imagine without an image", func(c *Client) error {
			_, err := c.ReImagine(ctx, ReImagineRequest{})
			return err
		}, "image", "is required"},
		{"re-imagine with text named .png", func(c *Client) error {
			_, err := c.ReImagine(ctx, ReImagineRequest{Image: FileFromBytes("x.png", []byte("not an image at all"))})
			return err
		}, "image", "must be a PNG, JPEG or WebP image"},
		{"re-imagine with a GIF", func(c *Client) error {
			_, err := c.ReImagine(ctx, ReImagineRequest{Image: FileFromBytes("x.gif", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))})
			return err
		}, "image", "must be a PNG, JPEG or WebP image"},
		{"re-imagine 1025 pixels wide", func(c *Client) error {
			_, err := c.ReImagine(ctx, ReImagineRequest{Image: FileFromBytes("x.png", pngHeader(1025, 10))})
			return err
		}, "image", "must be at most 1024x1024 pixels"},
		{"re-imagine 1025 pixels high as JPEG", func(c *Client) error {
			_, err := c.ReImagine(ctx, ReImagineRequest{Image: FileFromBytes("x.jpg", jpegOf(10, 1025))})
			return err
		}, "image", "must be at most 1024x1024 pixels"},
		{"remove-background without a url", func(c *Client) error {
			_, err := c.RemoveBackground(ctx, RemoveBackgroundRequest{})
			return err
		}, "url", "is required"},
		{"color-image with a bare host", func(c *Client) error {
			_, err := c.ColorImage(ctx, ColorImageRequest{URL: "example.com/a.png"})
			return err
		}, "url", "must be an absolute http or https URL"},
		{"image enhance without a url", func(c *Client) error {
			_, err := c.EnhanceImage(ctx, EnhanceImageRequest{})
			return err
		}, "url", "is required"},
		{"change-background without a prompt", func(c *Client) error {
			_, err := c.ChangeBackground(ctx, ChangeBackgroundRequest{Image: FileFromBytes("a.png", pngBytes)})
			return err
		}, "prompt", "is required"},
		{"change-background with audio", func(c *Client) error {
			_, err := c.ChangeBackground(ctx, ChangeBackgroundRequest{Image: FileFromBytes("a.png", wavBytes), Prompt: "p"})
			return err
		}, "image", "must be a PNG, JPEG or WebP image"},
		{"infinite-zoom with -1 iterations", func(c *Client) error {
			_, err := c.InfiniteZoom(ctx, InfiniteZoomRequest{Prompt: "p", NumberOfIteration: -1})
			return err
		}, "numberOfIteration", "must be at least 1"},
		{"video remove-background without a url", func(c *Client) error {
			_, err := c.RemoveVideoBackground(ctx, RemoveVideoBackgroundRequest{})
			return err
		}, "url", "is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &requestCounter{}
			c := newTestClient(t, "https://api.example.com", WithHTTPClient(&http.Client{Transport: rt}))
			err := tt.call(c)
			var v *ValidationError
			require.ErrorAs(t, err, &v)
			assert.Equal(t, tt.field, v.Field)
			assert.Contains(t, v.Rule, tt.rule)
			assert.NotEmpty(t, v.Operation)
			assert.True(t, errors.Is(err, ErrInvalidRequest))
			assert.Equal(t, int64(0), rt.n.Load(), "nothing is sent")
		})
	}
}

func TestInputsThatCannotBeSentAsGivenFailBeforeAByteIsSent(t *testing.T) {
	ctx := context.Background()
	cover := func(in any) WriterToolRequest {
		return WriterToolRequest{Inputs: []any{in}, Language: "English", Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "formal"}
	}
	tests := []struct {
		name  string
		call  func(c *Client) error
		field string
		rule  string
		cause any // a pointer to an error type the error must hold, or nil
	}{
		{"a text-to-image prompt that is not UTF-8", func(c *Client) error {
			_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: notUTF8, NumberOfResults: 1})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"a text-to-music prompt that is not UTF-8", func(c *Client) error {
			_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: notUTF8})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"a text-to-speech prompt that is not UTF-8", func(c *Client) error {
			_, err := c.TextToSpeech(ctx, TextToSpeechRequest{Prompt: notUTF8, VoiceID: ids.VoiceFemale1})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"a logo prompt that is not UTF-8", func(c *Client) error {
			_, err := c.GenerateLogo(ctx, GenerateLogoRequest{Prompt: notUTF8})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"a QR prompt that is not UTF-8", func(c *Client) error {
			_, err := c.GenerateQR(ctx, GenerateQRRequest{URL: "https://example.com", Prompt: notUTF8})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"an infinite-zoom prompt that is not UTF-8", func(c *Client) error {
			_, err := c.InfiniteZoom(ctx, InfiniteZoomRequest{Prompt: notUTF8})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"a change-background prompt that is not UTF-8 (a form field)", func(c *Client) error {
			_, err := c.ChangeBackground(ctx, ChangeBackgroundRequest{Image: FileFromBytes("a.png", pngBytes), Prompt: notUTF8})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"a cover letter's job role that is not UTF-8", func(c *Client) error {
			_, err := c.CoverLetter(ctx, CoverLetterRequest{JobRole: notUTF8, JobSkills: "Go", Language: "English", Tone: "formal"})
			return err
		}, "inputs[0].jobRole", "must be valid UTF-8 text", nil},
		{"a writer-tool tone that is not UTF-8", func(c *Client) error {
			req := cover(CoverLetterInput{"a", "b"})
			req.Tone = notUTF8
			_, err := c.WriterTool(ctx, req)
			return err
		}, "tone", "must be valid UTF-8 text", nil},
		{"a writer-tool input map holding text that is not UTF-8", func(c *Client) error {
			_, err := c.WriterTool(ctx, cover(map[string]any{"jobRole": "a", "jobSkills": "b", "notes": notUTF8}))
			return err
		}, "inputs[0]", "must hold only valid UTF-8 text", nil},
		{"a writer-tool input key that is not UTF-8", func(c *Client) error {
			_, err := c.WriterTool(ctx, cover(map[string]string{"jobRole": "a", "jobSkills": "b", notUTF8: "c"}))
			return err
		}, "inputs[0]", "must hold only valid UTF-8 text", nil},
		{"a URL that is not UTF-8", func(c *Client) error {
			_, err := c.UpScale(ctx, UpScaleRequest{URL: "https://example.com/\xff.png"})
			return err
		}, "url", "must be valid UTF-8 text", nil},
		{"a URL with a port out of range", func(c *Client) error {
			_, err := c.UpScale(ctx, UpScaleRequest{URL: "https://example.com:99999999/a.png"})
			return err
		}, "url", "must have a port from 1 to 65535", nil},
		{"a URL with port 65536", func(c *Client) error {
			_, err := c.RemoveBackground(ctx, RemoveBackgroundRequest{URL: "http://example.com:65536/a.png"})
			return err
		}, "url", "must have a port from 1 to 65535", nil},
		{"a URL with port 0", func(c *Client) error {
			_, err := c.GenerateQR(ctx, GenerateQRRequest{URL: "https://example.com:0/", Prompt: "p"})
			return err
		}, "url", "must have a port from 1 to 65535", nil},
		{"a URL with a port and no host", func(c *Client) error {
			_, err := c.ColorImage(ctx, ColorImageRequest{URL: "https://:443/a.png"})
			return err
		}, "url", "must be an absolute http or https URL", nil},
		{"a writer-tool input holding a channel", func(c *Client) error {
			_, err := c.WriterTool(ctx, WriterToolRequest{Inputs: []any{map[string]any{"c": make(chan int)}}, Language: "en", Number: 1, UseCase: "Other", Action: "a", Tone: "t"})
			return err
		}, "inputs[0]", "cannot be encoded as JSON", new(*json.UnsupportedTypeError)},
		{"a writer-tool input that is a function", func(c *Client) error {
			_, err := c.WriterTool(ctx, WriterToolRequest{Inputs: []any{func() {}}, Language: "en", Number: 1, UseCase: "Other", Action: "a", Tone: "t"})
			return err
		}, "inputs[0]", "cannot be encoded as JSON", new(*json.UnsupportedTypeError)},
		{"a writer-tool input holding NaN", func(c *Client) error {
			_, err := c.WriterTool(ctx, WriterToolRequest{Inputs: []any{map[string]any{"score": math.NaN()}}, Language: "en", Number: 1, UseCase: "Other", Action: "a", Tone: "t"})
			return err
		}, "inputs[0]", "cannot be encoded as JSON", new(*json.UnsupportedValueError)},
		{"a cover letter map without jobSkills", func(c *Client) error {
			_, err := c.WriterTool(ctx, cover(map[string]string{"jobRole": "Backend engineer"}))
			return err
		}, "inputs[0].jobSkills", "is required", nil},
		{"a cover letter map whose jobRole is a number", func(c *Client) error {
			_, err := c.WriterTool(ctx, cover(map[string]any{"jobRole": 7, "jobSkills": "Go"}))
			return err
		}, "inputs[0].jobRole", "must be a string", nil},
		{"a nil *CoverLetterInput", func(c *Client) error {
			_, err := c.WriterTool(ctx, cover((*CoverLetterInput)(nil)))
			return err
		}, "inputs[0]", "must not be null", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &requestCounter{}
			c := newTestClient(t, "https://api.example.com", WithHTTPClient(&http.Client{Transport: rt}))
			err := tt.call(c)
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
