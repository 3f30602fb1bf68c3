package creative

import (
	"context"
	"errors"
	"math"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

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
