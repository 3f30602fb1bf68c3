// Command tour calls every operation of the Creative Generation Service
// once, writes each result under -out (default ./out) and prints one line
// per operation. It exits with status 1 if any call fails.
//
// It talks to the service named by CREATIVE_BASE_URL and
// CREATIVE_ACCESS_KEY, or, when they are not set, to the SDK's built-in fake
// service. It makes its own small PNG and WAV inputs; the operations that
// take a link use -image-url and -video-url.
//
//	go run ./examples/tour -out /tmp/tour
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/ids"
)

func main() {
	out := flag.String("out", "out", "directory to write the results to")
	imageURL := flag.String("image-url", "https://upload.wikimedia.org/wikipedia/commons/a/a9/Example.jpg", "image link for up-scale, remove-background, color-image and enhance")
	videoURL := flag.String("video-url", "https://www.w3schools.com/html/mov_bbb.mp4", "video link for video remove-background")
	flag.Parse()
	os.Exit(run(*out, *imageURL, *videoURL))
}

// A tour holds what every step needs.
type tour struct {
	c        *creative.Client
	out      string
	imageURL string
	videoURL string
	png      []byte
	wav      []byte
}

func run(out, imageURL, videoURL string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t := &tour{out: out, imageURL: imageURL, videoURL: videoURL, png: samplePNG(), wav: sampleWAV()}
	if os.Getenv(creative.EnvBaseURL) == "" || os.Getenv(creative.EnvAccessKey) == "" {
		fake := creativetest.NewServer()
		defer fake.Close()
		fmt.Fprintf(os.Stderr, "tour: %s or %s not set: using the built-in fake service at %s\n",
			creative.EnvBaseURL, creative.EnvAccessKey, fake.URL)
		t.c = fake.Client()
	} else {
		c, err := creative.New()
		if err != nil {
			fmt.Fprintln(os.Stderr, "tour:", err)
			return 1
		}
		t.c = c
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		return 1
	}

	steps := []struct {
		op  string
		run func(context.Context) ([]string, error)
	}{
		{"text/writer-tool", t.writerTool},
		{"audio/text-to-music", t.textToMusic},
		{"audio/text-to-speech", t.textToSpeech},
		{"audio/enhance", t.enhanceAudio},
		{"audio/split-audio", t.splitAudio},
		{"image/text-to-image", t.textToImage},
		{"image/generate-logo", t.generateLogo},
		{"image/generate-qr", t.generateQR},
		{"image/up-scale", t.upScale},
		{"image/re-imagine", t.reImagine},
		{"image/remove-background", t.removeBackground},
		{"image/color-image", t.colorImage},
		{"image/enhance", t.enhanceImage},
		{"image/change-background", t.changeBackground},
		{"video/infinite-zoom", t.infiniteZoom},
		{"video/remove-background", t.removeVideoBackground},
	}
	failed := 0
	for _, s := range steps {
		start := time.Now()
		paths, err := s.run(ctx)
		if err != nil {
			failed++
			fmt.Printf("%-24s FAILED: %v\n", s.op, err)
			continue
		}
		fmt.Printf("%-24s %v  %s\n", s.op, time.Since(start).Round(time.Millisecond), paths)
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "tour: %d of %d operations failed\n", failed, len(steps))
		return 1
	}
	return 0
}

func (t *tour) writerTool(ctx context.Context) ([]string, error) {
	res, err := t.c.CoverLetter(ctx, creative.CoverLetterRequest{
		JobRole: "Backend engineer", JobSkills: "Go, PostgreSQL, distributed systems",
		Language: "English", Tone: "formal", Number: 1,
	})
	if err != nil {
		return nil, err
	}
	var text bytes.Buffer
	for _, ch := range res.Choices {
		fmt.Fprintf(&text, "%s\n\n", ch.Text)
	}
	return t.write("writer-tool.txt", text.Bytes())
}

func (t *tour) textToMusic(ctx context.Context) ([]string, error) {
	u, err := t.c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "calm piano by the sea", Duration: 5})
	return t.download(ctx, "text-to-music", err, u)
}

func (t *tour) textToSpeech(ctx context.Context) ([]string, error) {
	audio, err := t.c.TextToSpeech(ctx, creative.TextToSpeechRequest{Prompt: "Welcome to the tour.", VoiceID: ids.VoiceMale1})
	if err != nil {
		return nil, err
	}
	p := filepath.Join(t.out, "text-to-speech.mp3")
	return []string{p}, audio.Save(p)
}

func (t *tour) enhanceAudio(ctx context.Context) ([]string, error) {
	u, err := t.c.EnhanceAudio(ctx, creative.EnhanceAudioRequest{Audio: creative.FileFromBytes("tone.wav", t.wav), TypeID: ids.EnhancePodcast})
	return t.download(ctx, "enhance-audio", err, u)
}

func (t *tour) splitAudio(ctx context.Context) ([]string, error) {
	us, err := t.c.SplitAudio(ctx, creative.SplitAudioRequest{Audio: creative.FileFromBytes("tone.wav", t.wav)})
	return t.download(ctx, "split-audio", err, us...)
}

func (t *tour) textToImage(ctx context.Context) ([]string, error) {
	ims, err := t.c.TextToImage(ctx, creative.TextToImageRequest{
		Prompt:          "a fox in a snowy forest",
		NumberOfResults: 2,
		ImageSizeID:     ids.Size2x3,
		StyleID:         ids.StyleDigitalArt,
		CameraID:        ids.CameraCloseUp,
		ColorID:         ids.ColorPastelColors,
		LightingID:      ids.LightingGoldenHour,
	})
	return t.saveImages("text-to-image", err, ims...)
}

func (t *tour) generateLogo(ctx context.Context) ([]string, error) {
	ims, err := t.c.GenerateLogo(ctx, creative.GenerateLogoRequest{Prompt: "a coffee shop called Bean There", NumberOfResults: 2})
	return t.saveImages("generate-logo", err, ims...)
}

func (t *tour) generateQR(ctx context.Context) ([]string, error) {
	im, err := t.c.GenerateQR(ctx, creative.GenerateQRRequest{URL: "https://example.com", Prompt: "autumn leaves"})
	return t.saveImages("generate-qr", err, im)
}

func (t *tour) upScale(ctx context.Context) ([]string, error) {
	im, err := t.c.UpScale(ctx, creative.UpScaleRequest{URL: t.imageURL, Scale: 2})
	return t.saveImages("up-scale", err, im)
}

func (t *tour) reImagine(ctx context.Context) ([]string, error) {
	im, err := t.c.ReImagine(ctx, creative.ReImagineRequest{Image: creative.FileFromBytes("square.png", t.png)})
	return t.saveImages("re-imagine", err, im)
}

func (t *tour) removeBackground(ctx context.Context) ([]string, error) {
	im, err := t.c.RemoveBackground(ctx, creative.RemoveBackgroundRequest{URL: t.imageURL})
	return t.saveImages("remove-background", err, im)
}

func (t *tour) colorImage(ctx context.Context) ([]string, error) {
	im, err := t.c.ColorImage(ctx, creative.ColorImageRequest{URL: t.imageURL})
	return t.saveImages("color-image", err, im)
}

func (t *tour) enhanceImage(ctx context.Context) ([]string, error) {
	im, err := t.c.EnhanceImage(ctx, creative.EnhanceImageRequest{URL: t.imageURL})
	return t.saveImages("enhance-image", err, im)
}

func (t *tour) changeBackground(ctx context.Context) ([]string, error) {
	im, err := t.c.ChangeBackground(ctx, creative.ChangeBackgroundRequest{Image: creative.FileFromBytes("square.png", t.png), Prompt: "a beach at sunset"})
	return t.saveImages("change-background", err, im)
}

func (t *tour) infiniteZoom(ctx context.Context) ([]string, error) {
	u, err := t.c.InfiniteZoom(ctx, creative.InfiniteZoomRequest{Prompt: "a spiral galaxy", NumberOfIteration: 3})
	return t.download(ctx, "infinite-zoom", err, u)
}

func (t *tour) removeVideoBackground(ctx context.Context) ([]string, error) {
	u, err := t.c.RemoveVideoBackground(ctx, creative.RemoveVideoBackgroundRequest{URL: t.videoURL})
	return t.download(ctx, "remove-video-background", err, u)
}

// saveImages writes images as name.ext, or name-1.ext, name-2.ext ... when
// there are several (the command line's rule), passing on an earlier error.
func (t *tour) saveImages(name string, err error, ims ...creative.Image) ([]string, error) {
	if err != nil {
		return nil, err
	}
	var paths []string
	for i, im := range ims {
		p := filepath.Join(t.out, fileName(name, i, len(ims), im.Ext()))
		if err := im.Save(p); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// download fetches generated files, named as saveImages names images,
// passing on an earlier error.
func (t *tour) download(ctx context.Context, name string, err error, us ...creative.URL) ([]string, error) {
	if err != nil {
		return nil, err
	}
	var paths []string
	for i, u := range us {
		ext := ".bin"
		if pu, err := url.Parse(u.String()); err == nil && path.Ext(pu.Path) != "" {
			ext = path.Ext(pu.Path)
		}
		p := filepath.Join(t.out, fileName(name, i, len(us), ext))
		f, err := os.Create(p)
		if err != nil {
			return paths, err
		}
		_, err = t.c.Download(ctx, u, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// fileName names the i-th of n files of one result: name.ext for a single
// file, name-1.ext, name-2.ext ... for several.
func fileName(name string, i, n int, ext string) string {
	if n == 1 {
		return name + ext
	}
	return fmt.Sprintf("%s-%d%s", name, i+1, ext)
}

func (t *tour) write(name string, b []byte) ([]string, error) {
	p := filepath.Join(t.out, name)
	return []string{p}, os.WriteFile(p, b, 0o644)
}

// samplePNG draws a 256x256 input image: a disc on a plain background.
func samplePNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 256, 256))
	for y := range 256 {
		for x := range 256 {
			c := color.RGBA{230, 230, 240, 255}
			if dx, dy := x-128, y-128; dx*dx+dy*dy < 70*70 {
				c = color.RGBA{uint8(x), 90, uint8(255 - y), 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

// sampleWAV makes one second of a 440 Hz tone with a 3 kHz overtone, as
// 16-bit mono PCM at 22050 Hz.
func sampleWAV() []byte {
	const rate, n = 22050, 22050
	var b bytes.Buffer
	le := binary.LittleEndian
	b.WriteString("RIFF")
	_ = binary.Write(&b, le, uint32(36+2*n))
	b.WriteString("WAVEfmt ")
	_ = binary.Write(&b, le, struct {
		Size                      uint32
		Format, Channels          uint16
		Rate, ByteRate            uint32
		BlockAlign, BitsPerSample uint16
	}{16, 1, 1, uint32(rate), uint32(2 * rate), 2, 16})
	b.WriteString("data")
	_ = binary.Write(&b, le, uint32(2*n))
	for i := range n {
		s := 0.4*math.Sin(2*math.Pi*440*float64(i)/rate) + 0.1*math.Sin(2*math.Pi*3000*float64(i)/rate)
		_ = binary.Write(&b, le, int16(s*math.MaxInt16))
	}
	return b.Bytes()
}
