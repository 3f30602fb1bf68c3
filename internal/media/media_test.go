package media

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	return img
}

func grayImage(t *testing.T) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 64, 64))
	for y := 0; y < 64; y++ {
		for x := 0; x < 64; x++ {
			v := uint8(100 + x/2)
			if (x-32)*(x-32)+(y-32)*(y-32) < 200 {
				v = 60
			}
			img.SetGray(x, y, color.Gray{Y: v})
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func lumaStdDev(img image.Image) float64 {
	var sum, sq, n float64
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			l := (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(bl)) / 257
			sum, sq, n = sum+l, sq+l*l, n+1
		}
	}
	mean := sum / n
	return math.Sqrt(sq/n - mean*mean)
}

func TestOutputsAreDeterministic(t *testing.T) {
	p := ImageParams{Prompt: "fox", N: 2, AspectW: 3, AspectH: 2, StyleID: "s"}
	assert.Equal(t, TextToImage(p), TextToImage(p))
	assert.Equal(t, Logo("x", 1), Logo("x", 1))
	assert.Equal(t, Speech("hello", "v"), Speech("hello", "v"))
	assert.Equal(t, Music("m", 1), Music("m", 1))
	assert.Equal(t, Zoom("z", 1), Zoom("z", 1))
	assert.NotEqual(t, TextToImage(ImageParams{Prompt: "sea", N: 1}), TextToImage(ImageParams{Prompt: "forest", N: 1}))
}

func TestEnhanceRaisesContrast(t *testing.T) {
	in := grayImage(t)
	out, err := Enhance(in)
	require.NoError(t, err)
	assert.Greater(t, lumaStdDev(decodePNG(t, out)), lumaStdDev(decodePNG(t, in))*1.5)
}

func TestColorizeGivesColorToGray(t *testing.T) {
	out, err := Colorize(grayImage(t))
	require.NoError(t, err)
	img := decodePNG(t, out)
	r, g, b, _ := img.At(10, 10).RGBA()
	assert.False(t, r == g && g == b)
}

func TestRemoveBackgroundKeepsTheSubject(t *testing.T) {
	out, err := RemoveBackground(StandIn("x"))
	require.NoError(t, err)
	img := decodePNG(t, out)
	_, _, _, corner := img.At(2, 2).RGBA()
	_, _, _, centre := img.At(128, 128).RGBA()
	assert.Equal(t, uint32(0), corner)
	assert.Equal(t, uint32(0xffff), centre)
}

func TestTransformsKeepTheSizeAndUpScaleScales(t *testing.T) {
	in := grayImage(t)
	for name, f := range map[string]func([]byte) ([]byte, error){
		"re-imagine":        func(b []byte) ([]byte, error) { return ReImagine(b, "s") },
		"change-background": func(b []byte) ([]byte, error) { return ChangeBackground(b, "beach") },
		"enhance":           Enhance,
	} {
		out, err := f(in)
		require.NoError(t, err, name)
		assert.Equal(t, image.Pt(64, 64), decodePNG(t, out).Bounds().Size(), name)
	}
	out, err := UpScale(in, 3)
	require.NoError(t, err)
	assert.Equal(t, image.Pt(192, 192), decodePNG(t, out).Bounds().Size())
	_, err = UpScale(in, 100)
	assert.Error(t, err, "an output above the size cap is refused")
	_, err = Enhance([]byte("not an image"))
	assert.Error(t, err)
}

func TestAudioLengths(t *testing.T) {
	pcm, err := ReadAudio(Speech("abcdefghij", "v"))
	require.NoError(t, err)
	assert.InDelta(t, 10*framesPerChar*float64(mp3Samples)/mp3Rate, pcm.Duration(), 0.001)
	short, err := ReadAudio(Speech("a", "v"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, short.Duration(), 0.5, "at least half a second")

	music := Music("m", 2.5)
	pcm, err = ReadAudio(music)
	require.NoError(t, err)
	assert.InDelta(t, 2.5, pcm.Duration(), 1.0/wavRate)

	out, ct, err := EnhanceAudio(music)
	require.NoError(t, err)
	assert.Equal(t, "audio/wav", ct)
	norm, err := ReadAudio(out)
	require.NoError(t, err)
	peak := 0.0
	for _, v := range norm.Samples {
		peak = math.Max(peak, math.Abs(float64(v)))
	}
	assert.InDelta(t, math.Pow(10, -1.0/20)*math.MaxInt16, peak, 2, "peak at -1 dBFS")

	parts, err := SplitAudio(music)
	require.NoError(t, err)
	require.Len(t, parts, 2)
	low, _ := ReadAudio(parts[0])
	high, _ := ReadAudio(parts[1])
	orig, _ := ReadAudio(music)
	for i := range orig.Samples {
		require.InDelta(t, float64(orig.Samples[i]), float64(low.Samples[i])+float64(high.Samples[i]), 1, "low + high = input")
	}
	_, _, err = EnhanceAudio([]byte("text"))
	assert.Error(t, err)
}

func TestSpeechIsAudible(t *testing.T) {
	pcm, err := ReadAudio(Speech("hello world", "v"))
	require.NoError(t, err)
	var sq float64
	for _, v := range pcm.Samples {
		sq += float64(v) * float64(v)
	}
	assert.Greater(t, math.Sqrt(sq/float64(len(pcm.Samples))), 500.0, "not silence")
}
