package creativetest_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/gif"
	"image/png"
	"io"
	"testing"

	"github.com/hajimehoshi/go-mp3"
	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/media"
)

// The SDK's methods, end to end against the fake, with their outputs
// decoded and measured.

func fake(t *testing.T) (*creativetest.Server, *creative.Client) {
	t.Helper()
	s := creativetest.NewServer()
	t.Cleanup(s.Close)
	c := s.Client()
	t.Cleanup(c.CloseIdleConnections)
	return s, c
}

func download(t *testing.T, c *creative.Client, u creative.URL) []byte {
	t.Helper()
	var b bytes.Buffer
	_, err := c.Download(context.Background(), u, &b)
	require.NoError(t, err)
	return b.Bytes()
}

func TestTextToImageDrawsTheRequestedAspect(t *testing.T) {
	_, c := fake(t)
	// The longer side is 512 pixels; the shorter is the nearest whole
	// number to 512 times the aspect (20:9 is 230.4, 5:4 is 409.6).
	tests := []struct {
		size ids.ImageSizeID
		w, h int // the aspect, as the service's docs write it
		want image.Point
	}{
		{"", 1, 1, image.Pt(512, 512)},
		{ids.Size2x3, 2, 3, image.Pt(341, 512)},
		{ids.Size1x1, 1, 1, image.Pt(512, 512)},
		{ids.Size3x2, 3, 2, image.Pt(512, 341)},
		{ids.Size4x3, 4, 3, image.Pt(512, 384)},
		{ids.Size3x4, 3, 4, image.Pt(384, 512)},
		{ids.Size16x9, 16, 9, image.Pt(512, 288)},
		{ids.Size9x16, 9, 16, image.Pt(288, 512)},
		{ids.Size20x9, 20, 9, image.Pt(512, 230)},
		{ids.Size9x20, 9, 20, image.Pt(230, 512)},
		{ids.Size2x1, 2, 1, image.Pt(512, 256)},
		{ids.Size1x2, 1, 2, image.Pt(256, 512)},
		{ids.Size5x4, 5, 4, image.Pt(512, 410)},
		{ids.Size4x5, 4, 5, image.Pt(410, 512)},
	}
	require.Len(t, tests, 1+len(ids.ImageSizes()), "every listed size has a row")
	for _, tt := range tests {
		name, ok := tt.size.Label()
		if !ok {
			name = "none given"
		}
		t.Run("size "+name, func(t *testing.T) {
			ims, err := c.TextToImage(context.Background(), creative.TextToImageRequest{Prompt: "a fox", NumberOfResults: 2, ImageSizeID: tt.size, StyleID: ids.StyleAnime, ColorID: ids.ColorVibrant})
			require.NoError(t, err)
			require.Len(t, ims, 2)
			for _, im := range ims {
				require.Equal(t, "image/png", im.ContentType())
				img, err := png.Decode(bytes.NewReader(im.Data))
				require.NoError(t, err)
				got := img.Bounds().Size()
				assert.Equal(t, tt.want, got)
				// Off by at most half a pixel on the shorter side.
				assert.LessOrEqual(t, 2*abs(got.X*tt.h-got.Y*tt.w), max(tt.w, tt.h), "%v is not %d:%d", got, tt.w, tt.h)
				assert.Greater(t, distinctColors(img), 3, "not blank or flat")
			}
			assert.NotEqual(t, ims[0].Data, ims[1].Data)
		})
	}
}

func abs(n int) int { return max(n, -n) }

func distinctColors(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

func TestImagesAreDeterministicAndFollowThePrompt(t *testing.T) {
	_, c := fake(t)
	get := func(prompt string) []byte {
		ims, err := c.TextToImage(context.Background(), creative.TextToImageRequest{Prompt: prompt, NumberOfResults: 1})
		require.NoError(t, err)
		return ims[0].Data
	}
	assert.Equal(t, get("sea"), get("sea"))
	assert.NotEqual(t, get("sea"), get("forest"))
}

func TestTheQRCodeScansBackToTheURL(t *testing.T) {
	_, c := fake(t)
	for _, u := range []string{"https://example.com", "https://example.com/a/long/path?with=query&and=more#fragment"} {
		im, err := c.GenerateQR(context.Background(), creative.GenerateQRRequest{URL: u, Prompt: "autumn"})
		require.NoError(t, err)
		img, err := im.Decode()
		require.NoError(t, err)
		bmp, err := gozxing.NewBinaryBitmapFromImage(img)
		require.NoError(t, err)
		res, err := qrcode.NewQRCodeReader().Decode(bmp, nil)
		require.NoError(t, err)
		assert.Equal(t, u, res.GetText())
	}
}

func TestLogosAreSquareListsWhateverTheCount(t *testing.T) {
	_, c := fake(t)
	for _, n := range []int{0, 1, 4} {
		logos, err := c.GenerateLogo(context.Background(), creative.GenerateLogoRequest{Prompt: "bakery", NumberOfResults: n})
		require.NoError(t, err)
		assert.Len(t, logos, max(n, 1))
		img, err := logos[0].Decode()
		require.NoError(t, err)
		assert.Equal(t, image.Pt(256, 256), img.Bounds().Size())
	}
}

func TestImageTransformsWorkOnLinkedAndUploadedImages(t *testing.T) {
	s, c := fake(t)
	ctx := context.Background()
	// A linked image the fake can fetch: one of its own files is not an
	// image, so serve one through a generated logo's bytes via Handle.
	ims, err := c.GenerateLogo(ctx, creative.GenerateLogoRequest{Prompt: "seed"})
	require.NoError(t, err)
	logo := ims[0].Data

	up, err := c.UpScale(ctx, creative.UpScaleRequest{URL: "https://elsewhere.example/a.png", Scale: 2})
	require.NoError(t, err)
	img, _ := up.Decode()
	assert.Equal(t, image.Pt(512, 512), img.Bounds().Size(), "the 256 px stand-in, doubled")

	rb, err := c.RemoveBackground(ctx, creative.RemoveBackgroundRequest{URL: "https://elsewhere.example/a.png"})
	require.NoError(t, err)
	img, _ = rb.Decode()
	_, _, _, cornerA := img.At(0, 0).RGBA()
	_, _, _, centreA := img.At(128, 128).RGBA()
	assert.Equal(t, uint32(0), cornerA, "background transparent")
	assert.Equal(t, uint32(0xffff), centreA, "subject opaque")

	col, err := c.ColorImage(ctx, creative.ColorImageRequest{URL: "https://elsewhere.example/gray.png"})
	require.NoError(t, err)
	img, _ = col.Decode()
	r, g, b, _ := img.At(128, 128).RGBA()
	assert.False(t, r == g && g == b, "a gray input gets color")

	enh, err := c.EnhanceImage(ctx, creative.EnhanceImageRequest{URL: "https://elsewhere.example/a.png"})
	require.NoError(t, err)
	_, err = enh.Decode()
	require.NoError(t, err)

	re, err := c.ReImagine(ctx, creative.ReImagineRequest{Image: creative.FileFromBytes("logo.png", logo)})
	require.NoError(t, err)
	img, _ = re.Decode()
	assert.Equal(t, image.Pt(256, 256), img.Bounds().Size(), "same size as the upload")
	assert.NotEqual(t, logo, re.Data)

	cb, err := c.ChangeBackground(ctx, creative.ChangeBackgroundRequest{Image: creative.FileFromBytes("logo.png", logo), Prompt: "a beach"})
	require.NoError(t, err)
	img, _ = cb.Decode()
	assert.Equal(t, image.Pt(256, 256), img.Bounds().Size())
	assert.Equal(t, 6, s.Count("image/generate-logo")+s.Count("image/up-scale")+s.Count("image/remove-background")+s.Count("image/color-image")+s.Count("image/enhance")+s.Count("image/re-imagine"))
}

func mp3Seconds(t *testing.T, b []byte) float64 {
	t.Helper()
	d, err := mp3.NewDecoder(bytes.NewReader(b))
	require.NoError(t, err)
	n, err := io.Copy(io.Discard, d)
	require.NoError(t, err)
	return float64(n) / 4 / float64(d.SampleRate())
}

func TestSpeechIsAnMP3ThatGrowsWithTheText(t *testing.T) {
	_, c := fake(t)
	say := func(text string) []byte {
		a, err := c.TextToSpeech(context.Background(), creative.TextToSpeechRequest{Prompt: text, VoiceID: ids.VoiceMale1})
		require.NoError(t, err)
		defer a.Close()
		assert.Equal(t, "audio/mpeg", a.ContentType)
		b, err := io.ReadAll(a)
		require.NoError(t, err)
		return b
	}
	short, long := mp3Seconds(t, say("Hi there.")), mp3Seconds(t, say("Hello there, this is a much longer sentence to speak."))
	assert.Greater(t, long, 2*short)
	assert.InDelta(t, 53*0.072, long, 0.1)
}

func wavSeconds(t *testing.T, b []byte) float64 {
	t.Helper()
	pcm, err := media.ReadAudio(b)
	require.NoError(t, err)
	return pcm.Duration()
}

func TestMusicLastsTheRequestedDuration(t *testing.T) {
	_, c := fake(t)
	for _, d := range []float64{0, 3.5} {
		u, err := c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "piano", Duration: d})
		require.NoError(t, err)
		want := d
		if d == 0 {
			want = 8
		}
		assert.InDelta(t, want, wavSeconds(t, download(t, c, u)), 0.001)
	}
}

func TestAudioEnhanceAndSplitKeepTheLength(t *testing.T) {
	_, c := fake(t)
	ctx := context.Background()
	in := media.Music("source", 1.5)
	u, err := c.EnhanceAudio(ctx, creative.EnhanceAudioRequest{Audio: creative.FileFromBytes("in.wav", in), TypeID: ids.EnhanceStudio})
	require.NoError(t, err)
	assert.InDelta(t, 1.5, wavSeconds(t, download(t, c, u)), 0.001)

	parts, err := c.SplitAudio(ctx, creative.SplitAudioRequest{Audio: creative.FileFromBytes("in.wav", in)})
	require.NoError(t, err)
	require.Len(t, parts, 2)
	for _, p := range parts {
		assert.InDelta(t, 1.5, wavSeconds(t, download(t, c, p)), 0.001)
	}
}

func TestVideoOperationsServePlayableAnimations(t *testing.T) {
	_, c := fake(t)
	ctx := context.Background()
	for _, steps := range []int{0, 3} {
		u, err := c.InfiniteZoom(ctx, creative.InfiniteZoomRequest{Prompt: "galaxy", NumberOfIteration: steps})
		require.NoError(t, err)
		g, err := gif.DecodeAll(bytes.NewReader(download(t, c, u)))
		require.NoError(t, err)
		assert.Len(t, g.Image, max(steps, 2)*media.FramesPerStep)
	}
	u, err := c.RemoveVideoBackground(ctx, creative.RemoveVideoBackgroundRequest{URL: "https://v.example/a.mp4"})
	require.NoError(t, err)
	g, err := gif.DecodeAll(bytes.NewReader(download(t, c, u)))
	require.NoError(t, err)
	_, _, _, a := g.Image[0].At(0, 0).RGBA()
	assert.Equal(t, uint32(0), a, "transparent background")
}

func TestWriterToolWritesTheRequestedNumber(t *testing.T) {
	_, c := fake(t)
	res, err := c.CoverLetter(context.Background(), creative.CoverLetterRequest{JobRole: "Engineer", JobSkills: "Go", Language: "English", Tone: "warm", Number: 3})
	require.NoError(t, err)
	require.Len(t, res.Choices, 3)
	total := 0
	for i, ch := range res.Choices {
		assert.Equal(t, i, ch.Index)
		assert.Contains(t, ch.Text, "Engineer")
		total += ch.WordCount
	}
	assert.Equal(t, total, res.WordCount)
}

func TestFaultsDriveTheSDKsRetries(t *testing.T) {
	s, c := fake(t)
	ctx := context.Background()
	s.Fail("image/generate-qr", creativetest.Fault{Times: 2, Status: 503, RetryAfter: "0"})
	_, err := c.GenerateQR(ctx, creative.GenerateQRRequest{URL: "https://example.com", Prompt: "p"})
	require.NoError(t, err, "two failures are within the default two retries")
	assert.Equal(t, 3, s.Count("image/generate-qr"))

	s.Fail("audio/text-to-music", creativetest.Fault{Times: 3, Drop: true})
	_, err = c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "p"})
	var netErr *creative.NetworkError
	require.ErrorAs(t, err, &netErr)
	assert.Equal(t, 1, netErr.Attempts, "a connection dropped after the request arrived may have been paid for: not sent again")
	assert.ErrorIs(t, err, creative.ErrOutcomeUnknown)

	s.Fail("video/infinite-zoom", creativetest.Fault{Status: 400, Message: "prompt: not allowed"})
	_, err = c.InfiniteZoom(ctx, creative.InfiniteZoomRequest{Prompt: "p"})
	assert.True(t, errors.Is(err, creative.ErrInvalidRequest))
	assert.Equal(t, 1, s.Count("video/infinite-zoom"), "a 400 is not retried")
}

func TestTheFakeRefusesTheWrongKeyThroughTheSDK(t *testing.T) {
	s, _ := fake(t)
	c := s.Client(creative.WithAccessKey("not-the-key"))
	_, err := c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "p"})
	assert.ErrorIs(t, err, creative.ErrUnauthorized)
}
