//go:build integration

package creative_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/ids"
)

// These tests call the service named by CREATIVE_BASE_URL with the key in
// CREATIVE_ACCESS_KEY. Every call costs what the service charges for it:
//
//	CREATIVE_BASE_URL=https://... CREATIVE_ACCESS_KEY=... go test -tags integration -run Integration -v .
//
// The link-based image operations use CREATIVE_TEST_IMAGE_URL and the video
// one CREATIVE_TEST_VIDEO_URL; their tests are skipped when those are unset.

func integrationClient(t *testing.T) *creative.Client {
	t.Helper()
	if os.Getenv(creative.EnvBaseURL) == "" || os.Getenv(creative.EnvAccessKey) == "" {
		t.Skipf("integration tests need %s and %s", creative.EnvBaseURL, creative.EnvAccessKey)
	}
	c, err := creative.New(creative.WithTimeout(5 * time.Minute))
	require.NoError(t, err)
	return c
}

func integrationEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("set %s to run this test", name)
	}
	return v
}

func integrationPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 128, 128))
	for y := range 128 {
		for x := range 128 {
			img.Set(x, y, color.RGBA{uint8(2 * x), uint8(2 * y), 160, 255})
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func integrationWAV(t *testing.T) []byte {
	t.Helper()
	const n = 22050
	b := []byte("RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x22\x56\x00\x00\x44\xac\x00\x00\x02\x00\x10\x00data")
	b = append(b, byte(2*n), byte(2*n>>8), byte(2*n>>16), 0)
	for i := range n {
		v := int16((i % 50) * 600)
		b = append(b, byte(v), byte(v>>8))
	}
	size := len(b) - 8
	b[4], b[5], b[6], b[7] = byte(size), byte(size>>8), byte(size>>16), byte(size>>24)
	return b
}

func assertImage(t *testing.T, im creative.Image) {
	t.Helper()
	assert.True(t, strings.HasPrefix(im.ContentType(), "image/"), "content type %s", im.ContentType())
	_, err := im.Decode()
	assert.NoError(t, err)
}

func assertDownload(t *testing.T, c *creative.Client, u creative.URL) {
	t.Helper()
	require.NotEmpty(t, u)
	n, err := c.Download(context.Background(), u, io.Discard)
	require.NoError(t, err)
	assert.Positive(t, n)
}

func TestIntegrationText(t *testing.T) {
	c := integrationClient(t)
	res, err := c.CoverLetter(context.Background(), creative.CoverLetterRequest{
		JobRole: "Backend engineer", JobSkills: "Go, SQL", Language: "English", Tone: "formal", Number: 1,
	})
	require.NoError(t, err)
	require.NotEmpty(t, res.Choices)
	assert.NotEmpty(t, res.Choices[0].Text)
}

func TestIntegrationAudio(t *testing.T) {
	c := integrationClient(t)
	ctx := context.Background()
	t.Run("text to music", func(t *testing.T) {
		u, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "calm piano", Duration: 5})
		require.NoError(t, err)
		assertDownload(t, c, u)
	})
	t.Run("text to speech", func(t *testing.T) {
		a, err := c.TextToSpeech(ctx, creative.TextToSpeechRequest{Prompt: "Hello there.", VoiceID: ids.VoiceFemale1})
		require.NoError(t, err)
		n, err := io.Copy(io.Discard, a)
		require.NoError(t, err)
		require.NoError(t, a.Close())
		assert.Positive(t, n)
	})
	t.Run("enhance", func(t *testing.T) {
		u, err := c.EnhanceAudio(ctx, creative.EnhanceAudioRequest{Audio: creative.FileFromBytes("tone.wav", integrationWAV(t)), TypeID: ids.EnhancePodcast})
		require.NoError(t, err)
		assertDownload(t, c, u)
	})
	t.Run("split", func(t *testing.T) {
		us, err := c.SplitAudio(ctx, creative.SplitAudioRequest{Audio: creative.FileFromBytes("tone.wav", integrationWAV(t))})
		require.NoError(t, err)
		require.NotEmpty(t, us)
		for _, u := range us {
			assertDownload(t, c, u)
		}
	})
}

func TestIntegrationImage(t *testing.T) {
	c := integrationClient(t)
	ctx := context.Background()
	t.Run("text to image", func(t *testing.T) {
		ims, err := c.TextToImage(ctx, creative.TextToImageRequest{
			Prompt: "a red bicycle", NumberOfResults: 2, ImageSizeID: ids.Size3x2,
			StyleID: ids.StylePhotograph, CameraID: ids.CameraCloseUp, ColorID: ids.ColorVibrant, LightingID: ids.LightingStudio,
		})
		require.NoError(t, err)
		require.Len(t, ims, 2)
		for _, im := range ims {
			assertImage(t, im)
		}
	})
	t.Run("logo", func(t *testing.T) {
		ims, err := c.GenerateLogo(ctx, creative.GenerateLogoRequest{Prompt: "a bakery", NumberOfResults: 2})
		require.NoError(t, err)
		require.NotEmpty(t, ims)
		assertImage(t, ims[0])
	})
	t.Run("qr", func(t *testing.T) {
		im, err := c.GenerateQR(ctx, creative.GenerateQRRequest{URL: "https://example.com", Prompt: "flowers"})
		require.NoError(t, err)
		assertImage(t, im)
	})
	t.Run("re-imagine", func(t *testing.T) {
		im, err := c.ReImagine(ctx, creative.ReImagineRequest{Image: creative.FileFromBytes("in.png", integrationPNG(t))})
		require.NoError(t, err)
		assertImage(t, im)
	})
	t.Run("change background", func(t *testing.T) {
		im, err := c.ChangeBackground(ctx, creative.ChangeBackgroundRequest{Image: creative.FileFromBytes("in.png", integrationPNG(t)), Prompt: "a beach"})
		require.NoError(t, err)
		assertImage(t, im)
	})
	t.Run("link based", func(t *testing.T) {
		link := integrationEnv(t, "CREATIVE_TEST_IMAGE_URL")
		calls := map[string]func() (creative.Image, error){
			"up-scale": func() (creative.Image, error) { return c.UpScale(ctx, creative.UpScaleRequest{URL: link, Scale: 2}) },
			"remove-background": func() (creative.Image, error) {
				return c.RemoveBackground(ctx, creative.RemoveBackgroundRequest{URL: link})
			},
			"color-image": func() (creative.Image, error) { return c.ColorImage(ctx, creative.ColorImageRequest{URL: link}) },
			"enhance":     func() (creative.Image, error) { return c.EnhanceImage(ctx, creative.EnhanceImageRequest{URL: link}) },
		}
		for name, call := range calls {
			t.Run(name, func(t *testing.T) {
				im, err := call()
				require.NoError(t, err)
				assertImage(t, im)
			})
		}
	})
}

func TestIntegrationVideo(t *testing.T) {
	c := integrationClient(t)
	ctx := context.Background()
	t.Run("infinite zoom", func(t *testing.T) {
		u, err := c.InfiniteZoom(ctx, creative.InfiniteZoomRequest{Prompt: "a forest path", NumberOfIteration: 2})
		require.NoError(t, err)
		assertDownload(t, c, u)
	})
	t.Run("remove background", func(t *testing.T) {
		link := integrationEnv(t, "CREATIVE_TEST_VIDEO_URL")
		u, err := c.RemoveVideoBackground(ctx, creative.RemoveVideoBackgroundRequest{URL: link})
		require.NoError(t, err)
		assertDownload(t, c, u)
	})
}
