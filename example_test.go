package creative_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log"
	"strings"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/ids"
)

// The examples run against the built-in fake service; with a real service,
// make the client with creative.New() instead of srv.Client().

func ExampleNew() {
	// New reads CREATIVE_BASE_URL and CREATIVE_ACCESS_KEY; options override.
	c, err := creative.New(
		creative.WithBaseURL("https://api.example.com"),
		creative.WithAccessKey("my-key"),
		creative.WithMaxRetries(3),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c) // the key is never printed
	// Output: creative.Client{BaseURL: "https://api.example.com", AccessKey: [redacted]}
}

func ExampleClient_TextToImage() {
	srv := creativetest.NewServer()
	defer srv.Close()
	c := srv.Client()

	images, err := c.TextToImage(context.Background(), creative.TextToImageRequest{
		Prompt:          "a lighthouse at dawn",
		NumberOfResults: 2,
		ImageSizeID:     ids.Size3x2,
		StyleID:         ids.StyleWatercolor,
		LightingID:      ids.LightingGoldenHour,
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, im := range images {
		img, err := im.Decode()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(im.ContentType(), img.Bounds().Dx(), "x", img.Bounds().Dy())
	}
	// Output:
	// image/png 512 x 341
	// image/png 512 x 341
}

func ExampleClient_GenerateLogo() {
	srv := creativetest.NewServer()
	defer srv.Close()
	logos, err := srv.Client().GenerateLogo(context.Background(), creative.GenerateLogoRequest{Prompt: "a bakery", NumberOfResults: 3})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(logos), logos[0].Ext())
	// Output: 3 .png
}

func ExampleClient_GenerateQR() {
	srv := creativetest.NewServer()
	defer srv.Close()
	qr, err := srv.Client().GenerateQR(context.Background(), creative.GenerateQRRequest{URL: "https://example.com", Prompt: "spring flowers"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(qr.ContentType())
	// Output: image/png
}

func ExampleClient_UpScale() {
	srv := creativetest.NewServer()
	defer srv.Close()
	// The fake fetches loopback links; for others it uses a 256x256 stand-in.
	im, err := srv.Client().UpScale(context.Background(), creative.UpScaleRequest{URL: "https://images.example.com/cat.png", Scale: 2})
	if err != nil {
		log.Fatal(err)
	}
	img, _ := im.Decode()
	fmt.Println(img.Bounds().Dx(), "x", img.Bounds().Dy())
	// Output: 512 x 512
}

// samplePNG is a 64x64 disc on a plain background.
func samplePNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for y := range 64 {
		for x := range 64 {
			c := color.RGBA{240, 240, 240, 255}
			if (x-32)*(x-32)+(y-32)*(y-32) < 400 {
				c = color.RGBA{200, 40, 40, 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

func ExampleClient_ReImagine() {
	srv := creativetest.NewServer()
	defer srv.Close()
	// FileFromPath("cat.png") streams a file from disk instead.
	im, err := srv.Client().ReImagine(context.Background(), creative.ReImagineRequest{Image: creative.FileFromBytes("disc.png", samplePNG())})
	if err != nil {
		log.Fatal(err)
	}
	img, _ := im.Decode()
	fmt.Println(im.ContentType(), img.Bounds().Dx(), "x", img.Bounds().Dy())
	// Output: image/png 64 x 64
}

func ExampleClient_RemoveBackground() {
	srv := creativetest.NewServer()
	defer srv.Close()
	im, err := srv.Client().RemoveBackground(context.Background(), creative.RemoveBackgroundRequest{URL: "https://images.example.com/cat.png"})
	if err != nil {
		log.Fatal(err)
	}
	img, _ := im.Decode()
	_, _, _, a := img.At(0, 0).RGBA()
	fmt.Println("corner alpha:", a)
	// Output: corner alpha: 0
}

func ExampleClient_ColorImage() {
	srv := creativetest.NewServer()
	defer srv.Close()
	im, err := srv.Client().ColorImage(context.Background(), creative.ColorImageRequest{URL: "https://images.example.com/old.jpg"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(im.ContentType())
	// Output: image/png
}

func ExampleClient_EnhanceImage() {
	srv := creativetest.NewServer()
	defer srv.Close()
	im, err := srv.Client().EnhanceImage(context.Background(), creative.EnhanceImageRequest{URL: "https://images.example.com/dull.jpg"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(im.ContentType())
	// Output: image/png
}

func ExampleClient_ChangeBackground() {
	srv := creativetest.NewServer()
	defer srv.Close()
	im, err := srv.Client().ChangeBackground(context.Background(), creative.ChangeBackgroundRequest{
		Image:  creative.FileFromBytes("disc.png", samplePNG()),
		Prompt: "a beach at sunset",
	})
	if err != nil {
		log.Fatal(err)
	}
	img, _ := im.Decode()
	fmt.Println(img.Bounds().Dx(), "x", img.Bounds().Dy())
	// Output: 64 x 64
}

func ExampleClient_TextToMusic() {
	srv := creativetest.NewServer()
	defer srv.Close()
	c := srv.Client()
	ctx := context.Background()
	u, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "calm piano", Duration: 2})
	if err != nil {
		log.Fatal(err)
	}
	// The URL needs no key; Download never sends it.
	var wav bytes.Buffer
	if _, err := c.Download(ctx, u, &wav); err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.HasSuffix(u.String(), ".wav"), string(wav.Bytes()[8:12]))
	// Output: true WAVE
}

func ExampleClient_TextToSpeech() {
	srv := creativetest.NewServer()
	defer srv.Close()
	speech, err := srv.Client().TextToSpeech(context.Background(), creative.TextToSpeechRequest{
		Prompt:  "Hello there.",
		VoiceID: ids.VoiceFemale1,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer speech.Close()
	// Stream it anywhere: a file (speech.Save), a player, an HTTP response.
	n, err := io.Copy(io.Discard, speech)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(speech.ContentType, n > 0)
	// Output: audio/mpeg true
}

// sampleWAV is a tenth of a second of a square wave.
func sampleWAV() []byte {
	const n = 2205
	b := []byte("RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x22\x56\x00\x00\x44\xac\x00\x00\x02\x00\x10\x00data")
	b = append(b, byte(2*n&0xff), byte(2*n>>8), 0, 0)
	for i := range n {
		v := int16(4000)
		if i%50 < 25 {
			v = -4000
		}
		b = append(b, byte(v), byte(v>>8))
	}
	return b
}

func ExampleClient_EnhanceAudio() {
	srv := creativetest.NewServer()
	defer srv.Close()
	u, err := srv.Client().EnhanceAudio(context.Background(), creative.EnhanceAudioRequest{
		Audio:  creative.FileFromBytes("talk.wav", sampleWAV()),
		TypeID: ids.EnhancePodcast,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.HasPrefix(u.String(), srv.URL))
	// Output: true
}

func ExampleClient_SplitAudio() {
	srv := creativetest.NewServer()
	defer srv.Close()
	parts, err := srv.Client().SplitAudio(context.Background(), creative.SplitAudioRequest{Audio: creative.FileFromBytes("song.wav", sampleWAV())})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(parts))
	// Output: 2
}

func ExampleClient_InfiniteZoom() {
	srv := creativetest.NewServer()
	defer srv.Close()
	u, err := srv.Client().InfiniteZoom(context.Background(), creative.InfiniteZoomRequest{Prompt: "a spiral galaxy", NumberOfIteration: 3})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.HasSuffix(u.String(), ".gif"))
	// Output: true
}

func ExampleClient_RemoveVideoBackground() {
	srv := creativetest.NewServer()
	defer srv.Close()
	u, err := srv.Client().RemoveVideoBackground(context.Background(), creative.RemoveVideoBackgroundRequest{URL: "https://videos.example.com/dance.mp4"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(u != "")
	// Output: true
}

func ExampleClient_WriterTool() {
	srv := creativetest.NewServer()
	defer srv.Close()
	res, err := srv.Client().WriterTool(context.Background(), creative.WriterToolRequest{
		Inputs:   []any{creative.CoverLetterInput{JobRole: "Backend engineer", JobSkills: "Go, SQL"}},
		Language: "English",
		Number:   2,
		UseCase:  creative.UseCaseCoverLetter,
		Action:   creative.ActionGenerateWriteNow,
		Tone:     "formal",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(res.Choices), res.UseCase)
	// Output: 2 CoverLetter
}

func ExampleClient_CoverLetter() {
	srv := creativetest.NewServer()
	defer srv.Close()
	res, err := srv.Client().CoverLetter(context.Background(), creative.CoverLetterRequest{
		JobRole: "Backend engineer", JobSkills: "Go, SQL", Language: "English", Tone: "formal",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.SplitN(res.Choices[0].Text, "\n", 2)[0])
	// Output: Dear Hiring Manager,
}

func ExampleClient_Download() {
	srv := creativetest.NewServer()
	defer srv.Close()
	c := srv.Client()
	u, err := c.InfiniteZoom(context.Background(), creative.InfiniteZoomRequest{Prompt: "a forest"})
	if err != nil {
		log.Fatal(err)
	}
	var gif bytes.Buffer
	n, err := c.Download(context.Background(), u, &gif)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n == int64(gif.Len()), string(gif.Bytes()[:6]))
	// Output: true GIF89a
}

func ExampleValidationError() {
	srv := creativetest.NewServer()
	defer srv.Close()
	_, err := srv.Client().TextToImage(context.Background(), creative.TextToImageRequest{Prompt: "p", NumberOfResults: 11})
	var v *creative.ValidationError
	fmt.Println(errors.As(err, &v), v.Field, errors.Is(err, creative.ErrInvalidRequest))
	fmt.Println(err)
	fmt.Println("requests sent:", len(srv.Requests()))
	// Output:
	// true numberOfResults true
	// creative: image/text-to-image: numberOfResults must be between 1 and 10, got 11
	// requests sent: 0
}

func ExampleAPIError() {
	srv := creativetest.NewServer()
	defer srv.Close()
	srv.Fail("image/generate-qr", creativetest.Fault{Status: 502, Message: "upstream is down"})
	_, err := srv.Client().GenerateQR(context.Background(), creative.GenerateQRRequest{URL: "https://example.com", Prompt: "p"})
	var apiErr *creative.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Attempts, errors.Is(err, creative.ErrServer), errors.Is(err, creative.ErrOutcomeUnknown))
	}
	fmt.Println(err)
	// Output:
	// 502 1 true true
	// creative: image/generate-qr: HTTP 502: upstream is down (outcome unknown: the service may have done the work and charged for it, so it was not sent again, after 1 attempt) (request id req-1)
}
