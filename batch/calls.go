package batch

import (
	"context"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/ops"
)

// args are a checked job's fields, ready for its call: strings (ids
// resolved), float64 numbers (whole where the request wants an int),
// arrays, and the job's files opened as uploads.
type args struct {
	v     map[string]any
	files map[string]creative.File
}

func (a args) str(f string) string         { s, _ := a.v[f].(string); return s }
func (a args) num(f string) float64        { n, _ := a.v[f].(float64); return n }
func (a args) whole(f string) int          { return int(a.num(f)) }
func (a args) array(f string) []any        { l, _ := a.v[f].([]any); return l }
func (a args) file(f string) creative.File { return a.files[f] }

// caller makes one operation's call from its args.
type caller func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error)

// calls holds the call of every operation of internal/ops, by name. The
// fields, their types and which are required come from that table; this one
// only maps them onto the SDK's request structs.
var calls = map[string]caller{
	ops.WriterTool: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		req := creative.WriterToolRequest{
			Inputs: a.array("inputs"), Language: creative.Language(a.str("language")), Number: a.whole("number"),
			UseCase: creative.UseCase(a.str("useCase")), Action: creative.Action(a.str("action")), Tone: creative.Tone(a.str("tone")),
		}
		if req.UseCase == creative.UseCaseCoverLetter && req.Action == "" {
			req.Action = creative.ActionGenerateWriteNow
		}
		return c.WriterTool(ctx, req, opts...)
	},
	ops.TextToMusic: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: a.str("prompt"), Duration: a.num("duration")}, opts...)
	},
	ops.TextToImage: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.TextToImage(ctx, creative.TextToImageRequest{
			Prompt: a.str("prompt"), NumberOfResults: a.whole("numberOfResults"),
			ImageSizeID: ids.ImageSizeID(a.str("imageSizeId")), StyleID: ids.StyleID(a.str("styleId")),
			CameraID: ids.CameraID(a.str("cameraId")), ColorID: ids.ColorID(a.str("colorId")), LightingID: ids.LightingID(a.str("lightingId")),
		}, opts...)
	},
	ops.GenerateLogo: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.GenerateLogo(ctx, creative.GenerateLogoRequest{Prompt: a.str("prompt"), NumberOfResults: a.whole("numberOfResults")}, opts...)
	},
	ops.GenerateQR: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.GenerateQR(ctx, creative.GenerateQRRequest{URL: a.str("url"), Prompt: a.str("prompt")}, opts...)
	},
	ops.UpScale: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.UpScale(ctx, creative.UpScaleRequest{URL: a.str("url"), Scale: a.num("scale")}, opts...)
	},
	ops.EnhanceAudio: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.EnhanceAudio(ctx, creative.EnhanceAudioRequest{Audio: a.file("audio"), TypeID: ids.EnhanceTypeID(a.str("typeId"))}, opts...)
	},
	ops.InfiniteZoom: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.InfiniteZoom(ctx, creative.InfiniteZoomRequest{Prompt: a.str("prompt"), NumberOfIteration: a.whole("numberOfIteration")}, opts...)
	},
	ops.ReImagine: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.ReImagine(ctx, creative.ReImagineRequest{Image: a.file("image")}, opts...)
	},
	ops.SplitAudio: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.SplitAudio(ctx, creative.SplitAudioRequest{Audio: a.file("audio")}, opts...)
	},
	ops.RemoveBackground: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.RemoveBackground(ctx, creative.RemoveBackgroundRequest{URL: a.str("url")}, opts...)
	},
	ops.ColorImage: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.ColorImage(ctx, creative.ColorImageRequest{URL: a.str("url")}, opts...)
	},
	ops.EnhanceImage: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.EnhanceImage(ctx, creative.EnhanceImageRequest{URL: a.str("url")}, opts...)
	},
	ops.RemoveVideoBackground: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.RemoveVideoBackground(ctx, creative.RemoveVideoBackgroundRequest{URL: a.str("url")}, opts...)
	},
	ops.TextToSpeech: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.TextToSpeech(ctx, creative.TextToSpeechRequest{Prompt: a.str("prompt"), VoiceID: ids.VoiceID(a.str("voiceId"))}, opts...)
	},
	ops.ChangeBackground: func(ctx context.Context, c *creative.Client, a args, opts []creative.Option) (any, error) {
		return c.ChangeBackground(ctx, creative.ChangeBackgroundRequest{Image: a.file("image"), Prompt: a.str("prompt")}, opts...)
	},
}

// defaults are the values a job gets for fields the wire requires but a
// user need not give: one image, one text.
var defaults = map[string]map[string]float64{
	"image/text-to-image": {"numberOfResults": 1},
	"text/writer-tool":    {"number": 1},
}

// specDefaults are the numbers for which the spec names a default the
// service applies when the field is left out. A job that gives 0 or null
// for one is refused: it would silently get the default.
var specDefaults = map[string]map[string]float64{
	"audio/text-to-music": {"duration": 8},
	"image/generate-logo": {"numberOfResults": 1},
	"video/infinite-zoom": {"numberOfIteration": 2},
}

// wholeFields are the numbers the SDK's requests hold as int.
var wholeFields = map[string]bool{"numberOfResults": true, "number": true, "numberOfIteration": true}
