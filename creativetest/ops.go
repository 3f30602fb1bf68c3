package creativetest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/media"
	"github.com/creativegen/creative-go/internal/ops"
)

// The names of the operations, as Requests records them and as Fail, Handle
// and Count take them: the path without the version segment.
const (
	OpWriterTool            = ops.WriterTool            // POST /text/v1/writer-tool
	OpTextToMusic           = ops.TextToMusic           // POST /audio/v1/text-to-music
	OpTextToSpeech          = ops.TextToSpeech          // POST /audio/v1/text-to-speech
	OpEnhanceAudio          = ops.EnhanceAudio          // POST /audio/v1/enhance (form)
	OpSplitAudio            = ops.SplitAudio            // POST /audio/v1/split-audio (form)
	OpTextToImage           = ops.TextToImage           // POST /image/v1/text-to-image
	OpGenerateLogo          = ops.GenerateLogo          // POST /image/v1/generate-logo
	OpGenerateQR            = ops.GenerateQR            // POST /image/v1/generate-qr
	OpUpScale               = ops.UpScale               // POST /image/v1/up-scale
	OpReImagine             = ops.ReImagine             // POST /image/v1/re-imagine (form)
	OpRemoveBackground      = ops.RemoveBackground      // POST /image/v1/remove-background
	OpColorImage            = ops.ColorImage            // POST /image/v1/color-image
	OpEnhanceImage          = ops.EnhanceImage          // POST /image/v1/enhance
	OpChangeBackground      = ops.ChangeBackground      // POST /image/v1/change-background (form)
	OpInfiniteZoom          = ops.InfiniteZoom          // POST /video/v1/infinite-zoom
	OpRemoveVideoBackground = ops.RemoveVideoBackground // POST /video/v1/remove-background
)

// An operation is one endpoint of the fake: a row of the SDK's table of
// operations (internal/ops) and the code that answers it.
type operation struct {
	name string // such as "image/text-to-image"
	form bool   // takes multipart/form-data instead of JSON
	run  func(s *Server, in *input) (result, string)
}

// A result is what an operation answers: envelope data, or raw audio.
type result struct {
	data      any
	audio     []byte
	audioType string
}

// answers are the fake's answer to each operation of the table.
var answers = map[string]func(s *Server, in *input) (result, string){
	OpWriterTool:            writerTool,
	OpTextToMusic:           textToMusic,
	OpTextToImage:           textToImage,
	OpGenerateLogo:          generateLogo,
	OpGenerateQR:            generateQR,
	OpUpScale:               upScale,
	OpEnhanceAudio:          enhanceAudio,
	OpInfiniteZoom:          infiniteZoom,
	OpReImagine:             reImagine,
	OpSplitAudio:            splitAudio,
	OpRemoveBackground:      linkedImage(media.RemoveBackground),
	OpColorImage:            linkedImage(media.Colorize),
	OpEnhanceImage:          linkedImage(media.Enhance),
	OpRemoveVideoBackground: removeVideoBackground,
	OpTextToSpeech:          textToSpeech,
	OpChangeBackground:      changeBackground,
}

// operations are the operations of the table, in the specification's
// order, each with its answer.
var operations = func() []operation {
	out := make([]operation, len(ops.All))
	for i, o := range ops.All {
		run, ok := answers[o.Name]
		if !ok {
			panic("creativetest: no answer for operation " + o.Name)
		}
		out[i] = operation{name: o.Name, form: o.Form, run: run}
	}
	return out
}()

// Operations returns the names of the sixteen operations in the order of
// the specification's endpoint list, such as "image/text-to-image": the
// names Requests records and Fail, Handle and Count take.
func Operations() []string {
	out := make([]string, len(operations))
	for i, op := range operations {
		out[i] = op.name
	}
	return out
}

func opByName(name string) *operation {
	for i := range operations {
		if operations[i].name == name {
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

// answer returns the first problem of in, or the result data makes.
func answer(in *input, data func() (any, error)) (result, string) {
	if in.bad != "" {
		return result{}, in.bad
	}
	d, err := data()
	if err != nil {
		return result{}, err.Error()
	}
	return result{data: d}, ""
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

func idsOf[T ~string](list []T) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = string(v)
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

func writerTool(s *Server, in *input) (result, string) {
	raw, present := in.fields["inputs"]
	inputs, isList := raw.([]any)
	switch {
	case !present || raw == nil:
		in.fail("inputs", "is required")
	case !isList:
		in.fail("inputs", "must be an array, got %s", kind(raw))
	case len(inputs) == 0:
		in.fail("inputs", "must not be empty")
	}
	language := in.str("language", true)
	number := int(in.num("number", numRule{required: true, min: 1, max: 5, integer: true}))
	useCase := in.str("useCase", true)
	in.str("action", true)
	tone := in.str("tone", true)
	var subjects []string
	for i, v := range inputs {
		field := fmt.Sprintf("inputs[%d]", i)
		if useCase != "CoverLetter" {
			// The specification shows no other input format: take any value.
			if v == nil {
				in.fail(field, "must not be null")
			}
			b, _ := json.Marshal(v)
			subjects = append(subjects, string(b))
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			in.fail(field, "must be an object with jobRole and jobSkills, got %s", kind(v))
			continue
		}
		sub := &input{fields: obj, prefix: field + "."}
		role, skills := sub.str("jobRole", true), sub.str("jobSkills", true)
		if sub.bad != "" && in.bad == "" {
			in.bad = sub.bad
		}
		subjects = append(subjects, fmt.Sprintf("the position of %s, with my experience in %s", role, skills))
	}
	return answer(in, func() (any, error) {
		openings := []string{"Dear Hiring Manager,", "Dear Hiring Team,", "To whom it may concern,", "Hello,", "Dear Recruiter,"}
		choices := make([]writerChoice, number)
		total := 0
		for i := range choices {
			var text string
			if useCase == "CoverLetter" {
				text = fmt.Sprintf("%s\n\nI am writing to apply for %s. It has prepared me to contribute from the first day, and I write in a %s tone, in %s, as you asked. I would welcome the chance to discuss how I can help your team.\n\nSincerely,\nA. Candidate",
					openings[i%len(openings)], strings.Join(subjects, "; and for "), tone, language)
			} else {
				text = fmt.Sprintf("Text %d of %d for %s, in a %s tone, in %s, from: %s.", i+1, number, useCase, tone, language, strings.Join(subjects, ", "))
			}
			wc := len(strings.Fields(text))
			total += wc
			choices[i] = writerChoice{Text: text, Index: i, WordCount: wc}
		}
		return map[string]any{
			"language": language, "useCase": useCase, "word_count": total,
			"text": map[string]any{"choices": choices},
		}, nil
	})
}

func textToMusic(s *Server, in *input) (result, string) {
	prompt := in.str("prompt", true)
	secs := in.num("duration", numRule{def: 8, positive: true, max: 300})
	return answer(in, func() (any, error) { return s.store(".wav", "audio/wav", media.Music(prompt, secs)), nil })
}

func textToSpeech(s *Server, in *input) (result, string) {
	prompt := in.str("prompt", true)
	voice := in.id("voiceId", true, idsOf(ids.Voices()))
	if in.bad != "" {
		return result{}, in.bad
	}
	return result{audio: media.Speech(prompt, voice), audioType: "audio/mpeg"}, ""
}

func enhanceAudio(s *Server, in *input) (result, string) {
	audio := in.audio("audio")
	in.id("typeId", true, idsOf(ids.EnhanceTypes()))
	return answer(in, func() (any, error) {
		out, ct, err := media.EnhanceAudio(audio)
		if err != nil {
			return nil, fmt.Errorf("audio: %v", err)
		}
		return s.store(audioExt(ct), ct, out), nil
	})
}

func splitAudio(s *Server, in *input) (result, string) {
	audio := in.audio("audio")
	return answer(in, func() (any, error) {
		parts, err := media.SplitAudio(audio)
		if err != nil {
			return nil, fmt.Errorf("audio: %v", err)
		}
		urls := make([]string, len(parts))
		for i, p := range parts {
			urls[i] = s.store(".wav", "audio/wav", p)
		}
		return urls, nil
	})
}

func textToImage(s *Server, in *input) (result, string) {
	p := media.ImageParams{Prompt: in.str("prompt", true)}
	p.N = int(in.num("numberOfResults", numRule{required: true, min: 1, max: 10, integer: true}))
	// The specification names the size field both ways; either is taken,
	// and both must agree when both are sent.
	sizes := idsOf(ids.ImageSizes())
	size := in.id("imageSizeId", false, sizes)
	if dim := in.id("dimensionsId", false, sizes); dim != "" {
		if size != "" && size != dim {
			in.fail("dimensionsId", "names another size (%s) than imageSizeId (%s)", dim, size)
		}
		size = dim
	}
	if size != "" {
		p.AspectW, p.AspectH, _ = ids.ImageSizeID(size).Aspect()
	}
	p.StyleID = in.id("styleId", false, idsOf(ids.Styles()))
	p.CameraID = in.id("cameraId", false, idsOf(ids.Cameras()))
	p.ColorID = in.id("colorId", false, idsOf(ids.Colors()))
	p.LightingID = in.id("lightingId", false, nil) // the specification's list is cut short
	return answer(in, func() (any, error) { return b64s(media.TextToImage(p)), nil })
}

func generateLogo(s *Server, in *input) (result, string) {
	prompt := in.str("prompt", true)
	n := int(in.num("numberOfResults", numRule{def: 1, min: 1, max: 4, integer: true}))
	return answer(in, func() (any, error) {
		logos := media.Logo(prompt, n)
		if n == 1 {
			return b64(logos[0]), nil
		}
		return b64s(logos), nil
	})
}

func generateQR(s *Server, in *input) (result, string) {
	link := in.link("url")
	prompt := in.str("prompt", true)
	return answer(in, func() (any, error) {
		png, err := media.QR(link, prompt)
		if err != nil {
			return nil, fmt.Errorf("url: %v", err)
		}
		return b64(png), nil
	})
}

func upScale(s *Server, in *input) (result, string) {
	link := in.link("url")
	scale := in.num("scale", numRule{def: 2, positive: true, max: 8})
	return answer(in, func() (any, error) {
		img, err := s.fetchImage(in.ctx, link)
		if err != nil {
			return nil, err
		}
		out, err := media.UpScale(img, scale)
		if err != nil {
			return nil, fmt.Errorf("scale: %v", err)
		}
		return b64(out), nil
	})
}

// linkedImage is an operation that transforms the image at url.
func linkedImage(transform func([]byte) ([]byte, error)) func(*Server, *input) (result, string) {
	return func(s *Server, in *input) (result, string) {
		link := in.link("url")
		return answer(in, func() (any, error) {
			img, err := s.fetchImage(in.ctx, link)
			if err != nil {
				return nil, err
			}
			out, err := transform(img)
			if err != nil {
				return nil, fmt.Errorf("url: %v", err)
			}
			return b64(out), nil
		})
	}
}

func reImagine(s *Server, in *input) (result, string) {
	img := in.image("image", 1024)
	return answer(in, func() (any, error) {
		out, err := media.ReImagine(img, in.files["image"].name)
		if err != nil {
			return nil, fmt.Errorf("image: %v", err)
		}
		return b64(out), nil
	})
}

func changeBackground(s *Server, in *input) (result, string) {
	img := in.image("image", 0)
	prompt := in.str("prompt", true)
	return answer(in, func() (any, error) {
		out, err := media.ChangeBackground(img, prompt)
		if err != nil {
			return nil, fmt.Errorf("image: %v", err)
		}
		return b64(out), nil
	})
}

func infiniteZoom(s *Server, in *input) (result, string) {
	prompt := in.str("prompt", true)
	steps := int(in.num("numberOfIteration", numRule{def: 2, min: 1, max: 20, integer: true}))
	return answer(in, func() (any, error) { return s.store(".gif", "image/gif", media.Zoom(prompt, steps)), nil })
}

func removeVideoBackground(s *Server, in *input) (result, string) {
	link := in.link("url")
	return answer(in, func() (any, error) {
		video, err := s.fetchBytes(in.ctx, link)
		if err != nil {
			return nil, err
		}
		return s.store(".gif", "image/gif", media.VideoRemoveBackground(video, link)), nil
	})
}
