// Command quickstart makes images, a QR code, speech and music with the
// Creative Generation Service and writes them under ./out.
//
// With CREATIVE_BASE_URL and CREATIVE_ACCESS_KEY set it talks to that
// service. Without them it starts the SDK's built-in fake service
// (package creativetest) in process, so it runs with no key and no network:
//
//	go run ./examples/quickstart
//	go run ./examples/quickstart -out /tmp/creative
package main

import (
	"context"
	"flag"
	"fmt"
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
	out := flag.String("out", "out", "directory to write the generated files to")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var client *creative.Client
	if os.Getenv(creative.EnvBaseURL) == "" || os.Getenv(creative.EnvAccessKey) == "" {
		fake := creativetest.NewServer()
		defer fake.Close()
		fmt.Fprintf(os.Stderr, "quickstart: %s or %s not set: using the built-in fake service at %s\n",
			creative.EnvBaseURL, creative.EnvAccessKey, fake.URL)
		client = fake.Client()
	} else {
		var err error
		if client, err = creative.New(); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	save := func(name string, write func(path string) error) error {
		path := filepath.Join(out, name)
		if err := write(path); err != nil {
			return err
		}
		fmt.Println(path)
		return nil
	}

	// Two images in 3:2, watercolor style.
	images, err := client.TextToImage(ctx, creative.TextToImageRequest{
		Prompt:          "a lighthouse on a cliff at dawn",
		NumberOfResults: 2,
		ImageSizeID:     ids.Size3x2,
		StyleID:         ids.StyleWatercolor,
	})
	if err != nil {
		return err
	}
	for i, im := range images {
		if err := save(fmt.Sprintf("lighthouse-%d%s", i+1, im.Ext()), im.Save); err != nil {
			return err
		}
	}

	// A QR code that links to a site.
	qr, err := client.GenerateQR(ctx, creative.GenerateQRRequest{URL: "https://example.com", Prompt: "spring flowers"})
	if err != nil {
		return err
	}
	if err := save("qr"+qr.Ext(), qr.Save); err != nil {
		return err
	}

	// Speech, streamed to a file.
	speech, err := client.TextToSpeech(ctx, creative.TextToSpeechRequest{
		Prompt:  "Hello from the Creative Generation Service.",
		VoiceID: ids.VoiceFemale1,
	})
	if err != nil {
		return err
	}
	if err := save("speech.mp3", speech.Save); err != nil {
		return err
	}

	// Music: the service answers with a URL; Download fetches it without
	// the access key.
	music, err := client.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "calm piano by the sea", Duration: 5})
	if err != nil {
		return err
	}
	ext := ".wav"
	if u, err := url.Parse(music.String()); err == nil && path.Ext(u.Path) != "" {
		ext = path.Ext(u.Path)
	}
	return save("music"+ext, func(path string) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if _, err := client.Download(ctx, music, f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
}
