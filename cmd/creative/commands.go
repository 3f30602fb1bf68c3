package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/ids"
)

// A caller makes one operation's call once the flags are parsed.
type caller func(ctx context.Context, c *creative.Client, p *progress) (any, error)

// A command is one operation of the service.
type command struct {
	area, name string
	summary    string
	example    string
	// flags registers the operation's flags and returns its call.
	flags func(fs *flag.FlagSet) caller
}

func (c *command) path() string { return c.area + "/" + c.name }

func (c *command) usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "creative %s %s: %s\n\nExample:\n  %s\n\nFlags:\n", c.area, c.name, c.summary, c.example)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

func findCommand(area, name string) (*command, bool) {
	for i := range commands {
		if commands[i].area == area && commands[i].name == name {
			return &commands[i], true
		}
	}
	return nil, false
}

// idFlag is a flag taking an id of one kind, or its label.
type idFlag struct {
	kind string
	flag string
	id   string
}

func (f *idFlag) String() string { return f.id }

func (f *idFlag) Set(s string) error {
	id, err := ids.Parse(f.kind, s)
	if err != nil {
		return err
	}
	f.id = id
	return nil
}

func idVar(fs *flag.FlagSet, name, kind, usage string) *idFlag {
	f := &idFlag{kind: kind, flag: name}
	fs.Var(f, name, usage+" (an id or its label; see creative ids "+kind+")")
	return f
}

// openFile makes an upload from a path, counting the bytes sent. An empty
// path is a missing file, which the SDK reports before sending anything.
func openFile(path string, p *progress) (creative.File, func()) {
	if path == "" {
		return creative.File{}, func() {}
	}
	f, err := os.Open(path)
	if err != nil {
		return creative.FileFromPath(path), func() {} // the SDK reports the error
	}
	name := path[strings.LastIndexAny(path, `/\`)+1:]
	return creative.FileFromReader(name, &countingFile{f: f, p: p}), func() { f.Close() }
}

var commands = []command{
	{area: "text", name: "writer-tool", summary: "write texts such as cover letters",
		example: `creative text writer-tool --job-role "Backend engineer" --job-skills "Go, SQL" --language English --tone formal`,
		flags: func(fs *flag.FlagSet) caller {
			inputs := fs.String("inputs", "", "inputs as a JSON array (for CoverLetter: [{\"jobRole\":...,\"jobSkills\":...}])")
			language := fs.String("language", "", "language to write in")
			number := fs.Int("number", 1, "number of texts")
			useCase := fs.String("use-case", "", "use case (default CoverLetter with --job-role)")
			action := fs.String("action", "", "action (default generate_writenow for CoverLetter)")
			tone := fs.String("tone", "", "tone of the text")
			role := fs.String("job-role", "", "CoverLetter shorthand: the job role")
			skills := fs.String("job-skills", "", "CoverLetter shorthand: the job skills")
			return func(ctx context.Context, c *creative.Client, _ *progress) (any, error) {
				req := creative.WriterToolRequest{Language: creative.Language(*language), Number: *number, UseCase: creative.UseCase(*useCase), Action: creative.Action(*action), Tone: creative.Tone(*tone)}
				if *inputs != "" {
					if err := json.Unmarshal([]byte(*inputs), &req.Inputs); err != nil {
						return nil, usagef("--inputs: not a JSON array: %v", err)
					}
				}
				if *role != "" || *skills != "" {
					req.Inputs = append(req.Inputs, creative.CoverLetterInput{JobRole: *role, JobSkills: *skills})
					if req.UseCase == "" {
						req.UseCase = creative.UseCaseCoverLetter
					}
				}
				if req.UseCase == creative.UseCaseCoverLetter && req.Action == "" {
					req.Action = creative.ActionGenerateWriteNow
				}
				return c.WriterTool(ctx, req)
			}
		}},
	{area: "audio", name: "text-to-music", summary: "make music from a text (downloads the file)",
		example: `creative audio text-to-music --prompt "calm piano by the sea" --duration 12`,
		flags: func(fs *flag.FlagSet) caller {
			prompt := fs.String("prompt", "", "text to turn into music")
			duration := fs.Float64("duration", 0, "length in seconds (default: the service's, 8)")
			return func(ctx context.Context, c *creative.Client, _ *progress) (any, error) {
				return c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: *prompt, Duration: *duration})
			}
		}},
	{area: "audio", name: "text-to-speech", summary: "speak a text (saves the audio)",
		example: `creative audio text-to-speech --prompt "Hello there" --voice-id "female 1"`,
		flags: func(fs *flag.FlagSet) caller {
			prompt := fs.String("prompt", "", "text to speak")
			voice := idVar(fs, "voice-id", "voice", "voice")
			return func(ctx context.Context, c *creative.Client, _ *progress) (any, error) {
				return c.TextToSpeech(ctx, creative.TextToSpeechRequest{Prompt: *prompt, VoiceID: ids.VoiceID(voice.id)})
			}
		}},
	{area: "audio", name: "enhance", summary: "enhance an audio file (downloads the result)",
		example: `creative audio enhance --audio talk.wav --type-id podcast`,
		flags: func(fs *flag.FlagSet) caller {
			audio := fs.String("audio", "", "audio file to enhance")
			typeID := idVar(fs, "type-id", "enhance-type", "kind of recording")
			return func(ctx context.Context, c *creative.Client, p *progress) (any, error) {
				f, done := openFile(*audio, p)
				defer done()
				return c.EnhanceAudio(ctx, creative.EnhanceAudioRequest{Audio: f, TypeID: ids.EnhanceTypeID(typeID.id)})
			}
		}},
	{area: "audio", name: "split-audio", summary: "split an audio file (downloads the parts)",
		example: `creative audio split-audio --audio song.wav`,
		flags: func(fs *flag.FlagSet) caller {
			audio := fs.String("audio", "", "audio file to split")
			return func(ctx context.Context, c *creative.Client, p *progress) (any, error) {
				f, done := openFile(*audio, p)
				defer done()
				return c.SplitAudio(ctx, creative.SplitAudioRequest{Audio: f})
			}
		}},
	{area: "image", name: "text-to-image", summary: "make 1 to 10 images from a text",
		example: `creative image text-to-image --prompt "a fox in the snow" --number-of-results 2 --image-size-id 3:2 --style-id anime`,
		flags: func(fs *flag.FlagSet) caller {
			prompt := fs.String("prompt", "", "text to turn into images")
			n := fs.Int("number-of-results", 1, "number of images, 1 to 10")
			size := idVar(fs, "image-size-id", "image-size", "aspect ratio")
			style := idVar(fs, "style-id", "style", "style")
			camera := idVar(fs, "camera-id", "camera", "camera style")
			color := idVar(fs, "color-id", "color", "color style")
			lighting := idVar(fs, "lighting-id", "lighting", "lighting style")
			return func(ctx context.Context, c *creative.Client, _ *progress) (any, error) {
				return c.TextToImage(ctx, creative.TextToImageRequest{
					Prompt: *prompt, NumberOfResults: *n,
					ImageSizeID: ids.ImageSizeID(size.id), StyleID: ids.StyleID(style.id), CameraID: ids.CameraID(camera.id),
					ColorID: ids.ColorID(color.id), LightingID: ids.LightingID(lighting.id),
				})
			}
		}},
	{area: "image", name: "generate-logo", summary: "make 1 to 4 logos from a text",
		example: `creative image generate-logo --prompt "a coffee shop called Bean There" --number-of-results 2`,
		flags: func(fs *flag.FlagSet) caller {
			prompt := fs.String("prompt", "", "text to turn into logos")
			n := fs.Int("number-of-results", 0, "number of logos, 1 to 4 (default: the service's, 1)")
			return func(ctx context.Context, c *creative.Client, _ *progress) (any, error) {
				return c.GenerateLogo(ctx, creative.GenerateLogoRequest{Prompt: *prompt, NumberOfResults: *n})
			}
		}},
	{area: "image", name: "generate-qr", summary: "make a QR code for a link, styled by a text",
		example: `creative image generate-qr --url https://example.com --prompt "spring flowers"`,
		flags: func(fs *flag.FlagSet) caller {
			link := fs.String("url", "", "link the code encodes")
			prompt := fs.String("prompt", "", "text that styles the code")
			return func(ctx context.Context, c *creative.Client, _ *progress) (any, error) {
				return c.GenerateQR(ctx, creative.GenerateQRRequest{URL: *link, Prompt: *prompt})
			}
		}},
	{area: "image", name: "up-scale", summary: "enlarge the image at a link",
		example: `creative image up-scale --url https://example.com/cat.png --scale 2`,
		flags: func(fs *flag.FlagSet) caller {
			link := fs.String("url", "", "link of the image")
			scale := fs.Float64("scale", 0, "size factor (default: the service's)")
			return func(ctx context.Context, c *creative.Client, _ *progress) (any, error) {
				return c.UpScale(ctx, creative.UpScaleRequest{URL: *link, Scale: *scale})
			}
		}},
	{area: "image", name: "re-imagine", summary: "make a new take on an image (PNG, JPEG or WebP, at most 1024x1024)",
		example: `creative image re-imagine --image cat.png`,
		flags: func(fs *flag.FlagSet) caller {
			img := fs.String("image", "", "image file")
			return func(ctx context.Context, c *creative.Client, p *progress) (any, error) {
				f, done := openFile(*img, p)
				defer done()
				return c.ReImagine(ctx, creative.ReImagineRequest{Image: f})
			}
		}},
	linkCommand("image", "remove-background", "remove the background of the image at a link",
		func(ctx context.Context, c *creative.Client, link string) (any, error) {
			return c.RemoveBackground(ctx, creative.RemoveBackgroundRequest{URL: link})
		}),
	linkCommand("image", "color-image", "colorize the image at a link",
		func(ctx context.Context, c *creative.Client, link string) (any, error) {
			return c.ColorImage(ctx, creative.ColorImageRequest{URL: link})
		}),
	linkCommand("image", "enhance", "enhance the image at a link",
		func(ctx context.Context, c *creative.Client, link string) (any, error) {
			return c.EnhanceImage(ctx, creative.EnhanceImageRequest{URL: link})
		}),
	{area: "image", name: "change-background", summary: "replace the background of an image",
		example: `creative image change-background --image cat.png --prompt "a beach at sunset"`,
		flags: func(fs *flag.FlagSet) caller {
			img := fs.String("image", "", "image file (PNG, JPEG or WebP)")
			prompt := fs.String("prompt", "", "the new background")
			return func(ctx context.Context, c *creative.Client, p *progress) (any, error) {
				f, done := openFile(*img, p)
				defer done()
				return c.ChangeBackground(ctx, creative.ChangeBackgroundRequest{Image: f, Prompt: *prompt})
			}
		}},
	{area: "video", name: "infinite-zoom", summary: "make an infinite-zoom video from a text (downloads it)",
		example: `creative video infinite-zoom --prompt "a spiral galaxy" --number-of-iteration 3`,
		flags: func(fs *flag.FlagSet) caller {
			prompt := fs.String("prompt", "", "text to turn into an image to zoom into")
			n := fs.Int("number-of-iteration", 0, "zoom steps (default: the service's, 2)")
			return func(ctx context.Context, c *creative.Client, _ *progress) (any, error) {
				return c.InfiniteZoom(ctx, creative.InfiniteZoomRequest{Prompt: *prompt, NumberOfIteration: *n})
			}
		}},
	linkCommand("video", "remove-background", "remove the background of the video at a link (downloads it)",
		func(ctx context.Context, c *creative.Client, link string) (any, error) {
			return c.RemoveVideoBackground(ctx, creative.RemoveVideoBackgroundRequest{URL: link})
		}),
}

// linkCommand is the shape of the operations that take only a link.
func linkCommand(area, name, summary string, call func(context.Context, *creative.Client, string) (any, error)) command {
	return command{area: area, name: name, summary: summary,
		example: "creative " + area + " " + name + " --url https://example.com/in." + map[string]string{"image": "png", "video": "mp4"}[area],
		flags: func(fs *flag.FlagSet) caller {
			link := fs.String("url", "", "link of the "+area)
			return func(ctx context.Context, c *creative.Client, _ *progress) (any, error) {
				return call(ctx, c, *link)
			}
		}}
}
