package fake

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/media"
	"github.com/creativegen/creative-go/internal/opcall"
	"github.com/creativegen/creative-go/internal/ops"
)

// An operation is one endpoint of the fake: a row of the SDK's table of
// operations (internal/ops) and the answer to its checked request.
type operation struct {
	ops.Op
	answer answer
}

// A result is what an operation answers: envelope data, or raw audio.
type result struct {
	data      any
	audio     []byte
	audioType string
}

// An answer makes an operation's result from its request, which the input
// checked. An error's text is the message of a 400, naming the field.
type answer struct {
	req reflect.Type // the request type it takes
	run func(s *Server, in *input, req opcall.Request) (result, error)
}

// answerOf is f as an answer: f takes the operation's request type, so a
// field the SDK renames breaks the fake at compile time.
func answerOf[R opcall.Request](f func(s *Server, in *input, req R) (result, error)) answer {
	return answer{reflect.TypeFor[R](), func(s *Server, in *input, req opcall.Request) (result, error) {
		return f(s, in, req.(R))
	}}
}

// answers are the fake's answer to each operation of the table.
var answers = map[string]answer{
	ops.WriterTool:   answerOf(writerTool),
	ops.TextToMusic:  answerOf(textToMusic),
	ops.TextToImage:  answerOf(textToImage),
	ops.GenerateLogo: answerOf(generateLogo),
	ops.GenerateQR:   answerOf(generateQR),
	ops.UpScale:      answerOf(upScale),
	ops.EnhanceAudio: answerOf(enhanceAudio),
	ops.InfiniteZoom: answerOf(infiniteZoom),
	ops.ReImagine:    answerOf(reImagine),
	ops.SplitAudio:   answerOf(splitAudio),
	ops.RemoveBackground: answerOf(func(s *Server, in *input, r creative.RemoveBackgroundRequest) (result, error) {
		return s.linkedImage(in.ctx, r.URL, media.RemoveBackground)
	}),
	ops.ColorImage: answerOf(func(s *Server, in *input, r creative.ColorImageRequest) (result, error) {
		return s.linkedImage(in.ctx, r.URL, media.Colorize)
	}),
	ops.EnhanceImage: answerOf(func(s *Server, in *input, r creative.EnhanceImageRequest) (result, error) {
		return s.linkedImage(in.ctx, r.URL, media.Enhance)
	}),
	ops.RemoveVideoBackground: answerOf(removeVideoBackground),
	ops.TextToSpeech:          answerOf(textToSpeech),
	ops.ChangeBackground:      answerOf(changeBackground),
}

// operations are the operations of the table, in the specification's
// order, each with its answer, which takes the request type the SDK's
// method of the row takes.
var operations = func() []operation {
	out := make([]operation, len(ops.All))
	for i, o := range ops.All {
		a, ok := answers[o.Name]
		if !ok {
			panic("creativetest: no answer for operation " + o.Name)
		}
		req, err := opcall.Build(o, nil)
		if err != nil {
			panic("creativetest: " + err.Error())
		}
		if reflect.TypeOf(req) != a.req {
			panic(fmt.Sprintf("creativetest: the answer to %s takes a %v, not a %T", o.Name, a.req, req))
		}
		out[i] = operation{Op: o, answer: a}
	}
	return out
}()

// Operations returns the names of the sixteen operations in the order of
// the specification's endpoint list, such as "image/text-to-image": the
// names Requests records and Fail, Handle and Count take.
func Operations() []string {
	out := make([]string, len(operations))
	for i, op := range operations {
		out[i] = op.Name
	}
	return out
}

func opByName(name string) *operation {
	for i := range operations {
		if operations[i].Name == name {
			return &operations[i]
		}
	}
	return nil
}

// opByPath finds the operation served at a path such as
// /image/v1/text-to-image.
func opByPath(p string) *operation {
	area, rest, ok := strings.Cut(strings.TrimPrefix(p, "/"), "/v1/")
	if !ok || strings.Contains(area, "/") || strings.Contains(rest, "/") {
		return nil
	}
	return opByName(area + "/" + rest)
}

// b64 is the data of an image answer.
func b64(b []byte) map[string]string {
	return map[string]string{"base64": base64.StdEncoding.EncodeToString(b)}
}

func b64s(images [][]byte) []map[string]string {
	out := make([]map[string]string, len(images))
	for i, b := range images {
		out[i] = b64(b)
	}
	return out
}

// audioExt is the file name extension for an audio content type.
func audioExt(contentType string) string {
	if contentType == "audio/mpeg" {
		return ".mp3"
	}
	return ".wav"
}

// A writerChoice is one text the writer tool answers.
type writerChoice struct {
	Text      string `json:"text"`
	Index     int    `json:"index"`
	WordCount int    `json:"word_count"`
}

func writerTool(s *Server, in *input, r creative.WriterToolRequest) (result, error) {
	coverLetter := r.UseCase == creative.UseCaseCoverLetter
	var subjects []string
	for _, v := range r.Inputs {
		if obj, ok := v.(map[string]any); ok && coverLetter {
			subjects = append(subjects, fmt.Sprintf("the position of %v, with my experience in %v", obj["jobRole"], obj["jobSkills"]))
			continue
		}
		// The specification shows no other input format: take any value.
		b, _ := json.Marshal(v)
		subjects = append(subjects, string(b))
	}
	openings := []string{"Dear Hiring Manager,", "Dear Hiring Team,", "To whom it may concern,", "Hello,", "Dear Recruiter,"}
	choices := make([]writerChoice, r.Number)
	total := 0
	for i := range choices {
		var text string
		if coverLetter {
			text = fmt.Sprintf("%s\n\nI am writing to apply for %s. It has prepared me to contribute from the first day, and I write in a %s tone, in %s, as you asked. I would welcome the chance to discuss how I can help your team.\n\nSincerely,\nA. Candidate",
				openings[i%len(openings)], strings.Join(subjects, "; and for "), r.Tone, r.Language)
		} else {
			text = fmt.Sprintf("Text %d of %d for %s, in a %s tone, in %s, from: %s.", i+1, r.Number, r.UseCase, r.Tone, r.Language, strings.Join(subjects, ", "))
		}
		wc := len(strings.Fields(text))
		total += wc
		choices[i] = writerChoice{Text: text, Index: i, WordCount: wc}
	}
	return result{data: map[string]any{
		"language": r.Language, "useCase": r.UseCase, "word_count": total,
		"text": map[string]any{"choices": choices},
	}}, nil
}

func textToMusic(s *Server, in *input, r creative.TextToMusicRequest) (result, error) {
	secs := ops.OrDefault(ops.TextToMusic, "duration", r.Duration)
	return result{data: s.store(".wav", "audio/wav", media.Music(r.Prompt, secs))}, nil
}

func textToSpeech(s *Server, in *input, r creative.TextToSpeechRequest) (result, error) {
	return result{audio: media.Speech(r.Prompt, string(r.VoiceID)), audioType: "audio/mpeg"}, nil
}

func enhanceAudio(s *Server, in *input, r creative.EnhanceAudioRequest) (result, error) {
	out, ct, err := media.EnhanceAudio(in.data(r.Audio))
	if err != nil {
		return result{}, fmt.Errorf("audio: %v", err)
	}
	return result{data: s.store(audioExt(ct), ct, out)}, nil
}

func splitAudio(s *Server, in *input, r creative.SplitAudioRequest) (result, error) {
	parts, err := media.SplitAudio(in.data(r.Audio))
	if err != nil {
		return result{}, fmt.Errorf("audio: %v", err)
	}
	urls := make([]string, len(parts))
	for i, p := range parts {
		urls[i] = s.store(".wav", "audio/wav", p)
	}
	return result{data: urls}, nil
}

func textToImage(s *Server, in *input, r creative.TextToImageRequest) (result, error) {
	p := media.ImageParams{
		Prompt: r.Prompt, N: r.NumberOfResults,
		StyleID: string(r.StyleID), CameraID: string(r.CameraID), ColorID: string(r.ColorID), LightingID: string(r.LightingID),
	}
	p.AspectW, p.AspectH, _ = r.ImageSizeID.Aspect()
	return result{data: b64s(media.TextToImage(p))}, nil
}

func generateLogo(s *Server, in *input, r creative.GenerateLogoRequest) (result, error) {
	n := ops.OrDefault(ops.GenerateLogo, "numberOfResults", r.NumberOfResults)
	logos := media.Logo(r.Prompt, n)
	if n == 1 {
		return result{data: b64(logos[0])}, nil
	}
	return result{data: b64s(logos)}, nil
}

func generateQR(s *Server, in *input, r creative.GenerateQRRequest) (result, error) {
	png, err := media.QR(r.URL, r.Prompt)
	if err != nil {
		return result{}, fmt.Errorf("url: %v", err)
	}
	return result{data: b64(png)}, nil
}

// defaultScale is the fake's up-scale factor when none is sent: the
// specification does not show the service's.
const defaultScale = 2

func upScale(s *Server, in *input, r creative.UpScaleRequest) (result, error) {
	img, err := s.fetchImage(in.ctx, r.URL)
	if err != nil {
		return result{}, err
	}
	scale := r.Scale
	if scale == 0 {
		scale = defaultScale
	}
	out, err := media.UpScale(img, scale)
	if err != nil {
		return result{}, fmt.Errorf("scale: %v", err)
	}
	return result{data: b64(out)}, nil
}

// linkedImage answers an operation that transforms the image at link.
func (s *Server) linkedImage(ctx context.Context, link string, transform func([]byte) ([]byte, error)) (result, error) {
	img, err := s.fetchImage(ctx, link)
	if err != nil {
		return result{}, err
	}
	out, err := transform(img)
	if err != nil {
		return result{}, fmt.Errorf("url: %v", err)
	}
	return result{data: b64(out)}, nil
}

func reImagine(s *Server, in *input, r creative.ReImagineRequest) (result, error) {
	out, err := media.ReImagine(in.data(r.Image), r.Image.Name())
	if err != nil {
		return result{}, fmt.Errorf("image: %v", err)
	}
	return result{data: b64(out)}, nil
}

func changeBackground(s *Server, in *input, r creative.ChangeBackgroundRequest) (result, error) {
	out, err := media.ChangeBackground(in.data(r.Image), r.Prompt)
	if err != nil {
		return result{}, fmt.Errorf("image: %v", err)
	}
	return result{data: b64(out)}, nil
}

func infiniteZoom(s *Server, in *input, r creative.InfiniteZoomRequest) (result, error) {
	steps := ops.OrDefault(ops.InfiniteZoom, "numberOfIteration", r.NumberOfIteration)
	return result{data: s.store(".gif", "image/gif", media.Zoom(r.Prompt, steps))}, nil
}

func removeVideoBackground(s *Server, in *input, r creative.RemoveVideoBackgroundRequest) (result, error) {
	video, err := s.fetchBytes(in.ctx, r.URL)
	if err != nil {
		return result{}, err
	}
	return result{data: s.store(".gif", "image/gif", media.VideoRemoveBackground(video, r.URL))}, nil
}
