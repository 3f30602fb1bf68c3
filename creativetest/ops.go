package creativetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/media"
)

// An operation is one endpoint of the fake.
type operation struct {
	name string // "image/text-to-image"
	form bool   // takes multipart/form-data instead of JSON
	run  func(s *Server, in *input) (result, string)
}

// A result is what an operation answers: envelope data, or raw audio.
type result struct {
	data      any
	audio     []byte
	audioType string
}

// operations maps each path to its operation.
var operations = map[string]operation{}

func init() {
	for _, op := range []operation{
		{"text/writer-tool", false, writerTool},
		{"audio/text-to-music", false, textToMusic},
		{"audio/text-to-speech", false, textToSpeech},
		{"audio/enhance", true, enhanceAudio},
		{"audio/split-audio", true, splitAudio},
		{"image/text-to-image", false, textToImage},
		{"image/generate-logo", false, generateLogo},
		{"image/generate-qr", false, generateQR},
		{"image/up-scale", false, upScale},
		{"image/re-imagine", true, reImagine},
		{"image/remove-background", false, linkedImage(media.RemoveBackground)},
		{"image/color-image", false, linkedImage(media.Colorize)},
		{"image/enhance", false, linkedImage(media.Enhance)},
		{"image/change-background", true, changeBackground},
		{"video/infinite-zoom", false, infiniteZoom},
		{"video/remove-background", false, removeVideoBackground},
	} {
		area, name, _ := strings.Cut(op.name, "/")
		operations["/"+area+"/v1/"+name] = op
	}
}

// An input is a parsed request body: JSON fields or form parts. Its getters
// keep the first problem found, as the message of the 400 answer.
type input struct {
	fields map[string]any
	files  map[string]upload
	bad    string
}

type upload struct {
	name string
	data []byte
}

func (in *input) fail(field, format string, args ...any) {
	if in.bad == "" {
		in.bad = field + ": " + fmt.Sprintf(format, args...)
	}
}

// str returns a string field; a required one must be present and non-empty.
func (in *input) str(field string, required bool) string {
	v, ok := in.fields[field]
	if !ok || v == nil {
		if required {
			in.fail(field, "is required")
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		in.fail(field, "must be a string, got %s", kind(v))
		return ""
	}
	if required && strings.TrimSpace(s) == "" {
		in.fail(field, "must not be empty")
	}
	return s
}

// num returns a number field within [lo, hi], or def when it is absent.
// Form fields arrive as text and are parsed.
func (in *input) num(field string, required bool, def, lo, hi float64, integer bool) float64 {
	v, ok := in.fields[field]
	if !ok || v == nil {
		if required {
			in.fail(field, "is required")
		}
		return def
	}
	var f float64
	switch x := v.(type) {
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			in.fail(field, "must be a number, got %s", x)
			return def
		}
	default:
		in.fail(field, "must be a number, got %s", kind(v))
		return def
	}
	if integer && f != math.Trunc(f) {
		in.fail(field, "must be a whole number, got %v", f)
		return def
	}
	if f < lo || f > hi {
		in.fail(field, "must be between %v and %v, got %v", lo, hi, f)
		return def
	}
	return f
}

// id returns an id field that must be one of known (when known is not nil)
// or at least shaped as an id.
func (in *input) id(field string, required bool, known []string) string {
	s := in.str(field, required)
	if s == "" {
		return ""
	}
	if !ids.IsID(s) {
		in.fail(field, "must be an id of 24 lower-case hexadecimal characters, got %q", s)
		return ""
	}
	if known != nil && !slices.Contains(known, s) {
		in.fail(field, "unknown id %q", s)
		return ""
	}
	return s
}

// link returns a required http(s) URL field.
func (in *input) link(field string) string {
	s := in.str(field, true)
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		in.fail(field, "must be an http or https URL, got %q", s)
		return ""
	}
	return s
}

// file returns a required, non-empty file part.
func (in *input) file(field string) []byte {
	f, ok := in.files[field]
	if !ok {
		if _, isText := in.fields[field]; isText {
			in.fail(field, "must be a file part")
		} else {
			in.fail(field, "is required")
		}
		return nil
	}
	if len(f.data) == 0 {
		in.fail(field, "is empty")
		return nil
	}
	return f.data
}

// image returns a required PNG, JPEG or WebP file part of at most maxSide
// pixels a side (when maxSide > 0).
func (in *input) image(field string, maxSide int) []byte {
	b := in.file(field)
	if b == nil {
		return nil
	}
	w, h, format, err := media.ImageSize(b)
	if err != nil || (format != "png" && format != "jpeg" && format != "webp") {
		in.fail(field, "must be a PNG, JPEG or WebP image")
		return nil
	}
	if maxSide > 0 && (w > maxSide || h > maxSide) {
		in.fail(field, "must be at most %dx%d pixels, got %dx%d", maxSide, maxSide, w, h)
		return nil
	}
	return b
}

func kind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// readInput parses the body as the operation expects, recording it.
func (s *Server) readInput(r *http.Request, op operation, rec *Request) (*input, string) {
	in := &input{fields: map[string]any{}, files: map[string]upload{}}
	if op.form {
		if rec.ContentType != "multipart/form-data" {
			return nil, fmt.Sprintf("Content-Type: %s takes multipart/form-data, got %q", op.name, rec.ContentType)
		}
		mr, err := r.MultipartReader()
		if err != nil {
			return nil, "body: not a multipart form: " + err.Error()
		}
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, "body: broken multipart form: " + err.Error()
			}
			h := sha256.New()
			var buf bytes.Buffer
			n, err := io.Copy(io.MultiWriter(h, &buf), io.LimitReader(p, s.maxUpload+1))
			if err != nil {
				return nil, p.FormName() + ": reading the part: " + err.Error()
			}
			part := Part{Name: p.FormName(), FileName: p.FileName(), ContentType: p.Header.Get("Content-Type"), Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
			if n > s.maxUpload {
				rec.Parts = append(rec.Parts, part)
				return nil, fmt.Sprintf("%s: larger than the %d bytes allowed", p.FormName(), s.maxUpload)
			}
			if p.FileName() != "" {
				in.files[p.FormName()] = upload{name: p.FileName(), data: buf.Bytes()}
			} else {
				part.Value = buf.String()
				in.fields[p.FormName()] = buf.String()
			}
			rec.Parts = append(rec.Parts, part)
		}
		return in, ""
	}
	if rec.ContentType != "application/json" {
		return nil, fmt.Sprintf("Content-Type: %s takes application/json, got %q", op.name, rec.ContentType)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
	if err != nil {
		return nil, "body: " + err.Error()
	}
	rec.JSON = body
	if len(body) > 1<<20 {
		return nil, "body: larger than 1 MiB"
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&in.fields); err != nil || in.fields == nil {
		return nil, "body: not a JSON object"
	}
	return in, ""
}

// answer returns the first problem of in, or the result.
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

func b64(b []byte) map[string]string {
	return map[string]string{"base64": base64.StdEncoding.EncodeToString(b)}
}

func idsOf[T ~string](list []T) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = string(v)
	}
	return out
}

func writerTool(s *Server, in *input) (result, string) {
	raw, ok := in.fields["inputs"]
	inputs, isList := raw.([]any)
	switch {
	case !ok:
		in.fail("inputs", "is required")
	case !isList:
		in.fail("inputs", "must be an array, got %s", kind(raw))
	case len(inputs) == 0:
		in.fail("inputs", "must not be empty")
	}
	language := in.str("language", true)
	number := int(in.num("number", true, 1, 1, 5, true))
	useCase := in.str("useCase", true)
	in.str("action", true)
	tone := in.str("tone", true)
	var roles, skills []string
	for i, v := range inputs {
		obj, ok := v.(map[string]any)
		if !ok {
			in.fail(fmt.Sprintf("inputs[%d]", i), "must be an object, got %s", kind(v))
			break
		}
		if useCase == "CoverLetter" {
			sub := &input{fields: obj}
			roles = append(roles, sub.str("jobRole", true))
			skills = append(skills, sub.str("jobSkills", true))
			if sub.bad != "" {
				in.fail(fmt.Sprintf("inputs[%d].%s", i, strings.SplitN(sub.bad, ":", 2)[0]), "%s", strings.TrimSpace(strings.SplitN(sub.bad, ":", 2)[1]))
			}
		}
	}
	return answer(in, func() (any, error) {
		if len(roles) == 0 {
			roles, skills = []string{"the role"}, []string{"the skills it needs"}
		}
		type choice struct {
			Text      string `json:"text"`
			Index     int    `json:"index"`
			WordCount int    `json:"word_count"`
		}
		var choices []choice
		total := 0
		openings := []string{"Dear Hiring Manager,", "Dear Hiring Team,", "To whom it may concern,", "Hello,", "Dear Recruiter,"}
		for i := 0; i < number; i++ {
			text := fmt.Sprintf("%s\n\nI am writing to apply for the position of %s. My experience with %s has prepared me to contribute from the first day, and I write in a %s tone as you asked. I would welcome the chance to discuss how I can help your team.\n\nSincerely,\nA. Candidate",
				openings[i%len(openings)], strings.Join(roles, " and "), strings.Join(skills, "; "), tone)
			wc := len(strings.Fields(text))
			total += wc
			choices = append(choices, choice{Text: text, Index: i, WordCount: wc})
		}
		return map[string]any{
			"language": language, "useCase": useCase, "word_count": total,
			"text": map[string]any{"choices": choices},
		}, nil
	})
}

func textToMusic(s *Server, in *input) (result, string) {
	prompt := in.str("prompt", true)
	secs := in.num("duration", false, 8, math.SmallestNonzeroFloat64, 300, false)
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
	audio := in.file("audio")
	in.id("typeId", true, idsOf(ids.EnhanceTypes()))
	return answer(in, func() (any, error) {
		out, ct, err := media.EnhanceAudio(audio)
		if err != nil {
			return nil, fmt.Errorf("audio: %v", err)
		}
		return s.store(".wav", ct, out), nil
	})
}

func splitAudio(s *Server, in *input) (result, string) {
	audio := in.file("audio")
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
	p.N = int(in.num("numberOfResults", true, 1, 1, 10, true))
	sizes := idsOf(ids.ImageSizes())
	size := in.id("imageSizeId", false, sizes)
	if dim := in.id("dimensionsId", false, sizes); dim != "" {
		if size != "" && size != dim {
			in.fail("dimensionsId", "names another size than imageSizeId")
		}
		size = dim
	}
	if size != "" {
		p.AspectW, p.AspectH, _ = ids.ImageSizeID(size).Aspect()
	}
	p.StyleID = in.id("styleId", false, idsOf(ids.Styles()))
	p.CameraID = in.id("cameraId", false, idsOf(ids.Cameras()))
	p.ColorID = in.id("colorId", false, idsOf(ids.Colors()))
	p.LightingID = in.id("lightingId", false, nil) // the spec's list is cut: any id
	return answer(in, func() (any, error) {
		var out []map[string]string
		for _, png := range media.TextToImage(p) {
			out = append(out, b64(png))
		}
		return out, nil
	})
}

func generateLogo(s *Server, in *input) (result, string) {
	prompt := in.str("prompt", true)
	n := int(in.num("numberOfResults", false, 1, 1, 4, true))
	return answer(in, func() (any, error) {
		logos := media.Logo(prompt, n)
		if n == 1 {
			return b64(logos[0]), nil
		}
		var out []map[string]string
		for _, l := range logos {
			out = append(out, b64(l))
		}
		return out, nil
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
	scale := in.num("scale", false, 2, math.SmallestNonzeroFloat64, 8, false)
	return answer(in, func() (any, error) {
		img, err := s.fetchImage(link)
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
			img, err := s.fetchImage(link)
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
	steps := int(in.num("numberOfIteration", false, 2, 1, 20, true))
	return answer(in, func() (any, error) { return s.store(".gif", "image/gif", media.Zoom(prompt, steps)), nil })
}

func removeVideoBackground(s *Server, in *input) (result, string) {
	link := in.link("url")
	return answer(in, func() (any, error) {
		video, _ := s.fetchBytes(link)
		return s.store(".gif", "image/gif", media.VideoRemoveBackground(video, link)), nil
	})
}

// fetchImage returns the image at link when the fake may fetch it (its own
// files and loopback hosts), or a stand-in for any other host.
func (s *Server) fetchImage(link string) ([]byte, error) {
	b, err := s.fetchBytes(link)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return media.StandIn(link), nil
	}
	if _, _, _, err := media.ImageSize(b); err != nil {
		return nil, fmt.Errorf("url: the linked file is not a PNG, JPEG, WebP or GIF image")
	}
	return b, nil
}

// fetchBytes GETs link if its host is loopback, and returns nil, nil for
// any other host: the fake never reaches out to the network.
func (s *Server) fetchBytes(link string) ([]byte, error) {
	u, err := url.Parse(link)
	if err != nil {
		return nil, fmt.Errorf("url: %v", err)
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
		return nil, nil
	}
	resp, err := s.fetch.Get(link)
	if err != nil {
		return nil, fmt.Errorf("url: cannot fetch it: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("url: fetching it answered HTTP %d", resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, s.maxUpload+1))
	if err != nil {
		return nil, fmt.Errorf("url: reading it: %v", err)
	}
	if int64(len(b)) > s.maxUpload {
		return nil, fmt.Errorf("url: larger than the %d bytes allowed", s.maxUpload)
	}
	return b, nil
}
