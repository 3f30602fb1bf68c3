package creativeotel

import (
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/creativegen/creative-go/internal/ops"
)

// The GenAI semantic conventions name the operations of a chat or
// completion service and the output types text, json, image and speech;
// they allow custom names where none fits. The names below are the
// package's, one for each of the service's sixteen operations.
const (
	// OperationGenerate is the conventions' generate_content: every
	// operation that makes new content from a prompt.
	OperationGenerate = "generate_content"

	// OutputMusic is the output type of music (text-to-music), a custom
	// value: the conventions have speech but no music.
	OutputMusic = "music"
	// OutputAudio is the output type of audio made from audio (enhance,
	// split-audio), a custom value.
	OutputAudio = "audio"
	// OutputVideo is the output type of video, a custom value.
	OutputVideo = "video"

	// ProviderName is the value of gen_ai.provider.name, a custom value.
	ProviderName = "creative"
)

// An opName is how telemetry names one operation of the service.
type opName struct {
	operation string // gen_ai.operation.name
	output    string // gen_ai.output.type
}

// opNames names each operation. An operation that transforms media the
// caller gives (an image, a recording, a video) has a custom operation
// name, "creative." and its area and verb with underscores, such as
// "creative.image.up_scale"; one that generates from a prompt is
// generate_content. docs/telemetry.md has the table.
var opNames = map[string]opName{
	ops.WriterTool:            {OperationGenerate, semconv.GenAIOutputTypeText.Value.AsString()},
	ops.TextToMusic:           {OperationGenerate, OutputMusic},
	ops.TextToSpeech:          {OperationGenerate, semconv.GenAIOutputTypeSpeech.Value.AsString()},
	ops.EnhanceAudio:          {"creative.audio.enhance", OutputAudio},
	ops.SplitAudio:            {"creative.audio.split_audio", OutputAudio},
	ops.TextToImage:           {OperationGenerate, semconv.GenAIOutputTypeImage.Value.AsString()},
	ops.GenerateLogo:          {OperationGenerate, semconv.GenAIOutputTypeImage.Value.AsString()},
	ops.GenerateQR:            {OperationGenerate, semconv.GenAIOutputTypeImage.Value.AsString()},
	ops.UpScale:               {"creative.image.up_scale", semconv.GenAIOutputTypeImage.Value.AsString()},
	ops.ReImagine:             {"creative.image.re_imagine", semconv.GenAIOutputTypeImage.Value.AsString()},
	ops.RemoveBackground:      {"creative.image.remove_background", semconv.GenAIOutputTypeImage.Value.AsString()},
	ops.ColorImage:            {"creative.image.color_image", semconv.GenAIOutputTypeImage.Value.AsString()},
	ops.EnhanceImage:          {"creative.image.enhance", semconv.GenAIOutputTypeImage.Value.AsString()},
	ops.ChangeBackground:      {"creative.image.change_background", semconv.GenAIOutputTypeImage.Value.AsString()},
	ops.InfiniteZoom:          {OperationGenerate, OutputVideo},
	ops.RemoveVideoBackground: {"creative.video.remove_background", OutputVideo},
}

// OperationName returns gen_ai.operation.name and gen_ai.output.type for
// op, an operation's name ("image/text-to-image"). A raw call (Execute)
// is "creative.raw" with no output type; a Download "creative.download".
func OperationName(op string) (operation, output string) {
	if n, ok := opNames[op]; ok {
		return n.operation, n.output
	}
	if op == "download" {
		return "creative.download", ""
	}
	return "creative.raw", ""
}
