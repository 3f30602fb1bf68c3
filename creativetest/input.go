package creativetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/media"
)

// An input is a parsed request body: JSON fields or form parts. Its getters
// keep the first problem found, as the message of the 400 answer.
type input struct {
	ctx    context.Context
	fields map[string]any    // JSON values (json.Number for numbers), or form text fields
	files  map[string]upload // form file parts
	prefix string            // put before field names in messages, as "inputs[0]."
	bad    string
}

type upload struct {
	name string
	data []byte
}

// mediaType is the lower-case media type of a Content-Type header, without
// parameters.
func mediaType(ct string) string {
	t, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

// readBody reads the body as op expects it and records it in rec. keep says
// whether upload bytes are kept for the operation to use (not when a fault
// or a handler answers). When tap is not nil, every byte read is copied to
// it. The answer is the parsed input, or the message of a 400.
func (s *Server) readBody(r *http.Request, op *operation, rec *Request, keep bool, tap *bytes.Buffer) (*input, string) {
	body := io.Reader(r.Body)
	if tap != nil {
		body = io.TeeReader(body, tap)
	}
	in := &input{ctx: r.Context(), fields: map[string]any{}, files: map[string]upload{}}
	if op.form {
		return in, s.readForm(r, body, op, rec, keep, in)
	}
	raw, err := io.ReadAll(io.LimitReader(body, maxJSON+1))
	rec.JSON = raw[:min(len(raw), maxJSON)]
	switch {
	case err != nil:
		return nil, "body: reading it: " + err.Error()
	case rec.ContentType != "application/json":
		return nil, fmt.Sprintf("Content-Type: %s takes application/json, got %q", op.name, rec.ContentType)
	case len(raw) > maxJSON:
		return nil, fmt.Sprintf("body: larger than the %d bytes allowed", maxJSON)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&in.fields); err != nil || in.fields == nil {
		return nil, "body: not a JSON object"
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "body: more than one JSON value"
	}
	return in, ""
}

// readForm reads a multipart form part by part, hashing each as it goes.
func (s *Server) readForm(r *http.Request, body io.Reader, op *operation, rec *Request, keep bool, in *input) string {
	if rec.ContentType != "multipart/form-data" {
		return fmt.Sprintf("Content-Type: %s takes multipart/form-data, got %q", op.name, rec.ContentType)
	}
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		return "Content-Type: multipart/form-data needs a boundary parameter"
	}
	mr := multipart.NewReader(body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return ""
		}
		if err != nil {
			return "body: not a well-formed multipart form: " + err.Error()
		}
		name, isFile := p.FormName(), p.FileName() != ""
		limit := int64(maxField)
		if isFile {
			limit = s.maxUpload
		}
		h := sha256.New()
		var buf bytes.Buffer
		dst := io.Writer(h)
		if !isFile || keep {
			dst = io.MultiWriter(h, &buf)
		}
		n, err := io.Copy(dst, io.LimitReader(p, limit+1))
		part := Part{Name: name, FileName: p.FileName(), ContentType: p.Header.Get("Content-Type"), Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
		if !isFile {
			part.Value = buf.String()
		}
		rec.Parts = append(rec.Parts, part)
		switch {
		case err != nil:
			return fmt.Sprintf("%s: reading the part: %v", name, err)
		case n > limit:
			return fmt.Sprintf("%s: larger than the %d bytes allowed", name, limit)
		case isFile:
			in.files[name] = upload{name: p.FileName(), data: buf.Bytes()}
		default:
			in.fields[name] = buf.String()
		}
	}
}

func (in *input) fail(field, format string, args ...any) {
	if in.bad == "" {
		in.bad = in.prefix + field + ": " + fmt.Sprintf(format, args...)
	}
}

// str returns a string field; a required one must be present and not blank.
func (in *input) str(field string, required bool) string {
	v, ok := in.fields[field]
	if !ok || v == nil {
		switch _, isFile := in.files[field]; {
		case isFile:
			in.fail(field, "must be a text field, not a file")
		case required:
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

// A numRule says what a number field may hold.
type numRule struct {
	required bool
	def      float64 // the value when absent
	min, max float64 // bounds, both included
	positive bool    // must be above 0 (instead of at least min)
	integer  bool    // must be a whole number
}

// num returns a number field that follows rule.
func (in *input) num(field string, rule numRule) float64 {
	v, ok := in.fields[field]
	if !ok || v == nil {
		if rule.required {
			in.fail(field, "is required")
		}
		return rule.def
	}
	n, ok := v.(json.Number)
	if !ok {
		in.fail(field, "must be a number, got %s", kind(v))
		return rule.def
	}
	f, err := n.Float64()
	switch {
	case err != nil:
		in.fail(field, "must be a number, got %s", n)
	case rule.integer && f != math.Trunc(f):
		in.fail(field, "must be a whole number, got %s", n)
	case rule.positive && (f <= 0 || f > rule.max):
		in.fail(field, "must be above 0 and at most %v, got %s", rule.max, n)
	case !rule.positive && (f < rule.min || f > rule.max):
		in.fail(field, "must be between %v and %v, got %s", rule.min, rule.max, n)
	default:
		return f
	}
	return rule.def
}

// id returns an id field that must be one of known (when known is not nil)
// and in any case shaped as an id.
func (in *input) id(field string, required bool, known []string) string {
	s := in.str(field, required)
	switch {
	case s == "":
		return ""
	case !ids.IsID(s):
		in.fail(field, "must be an id of 24 lower-case hexadecimal characters, got %q", s)
		return ""
	case known != nil && !slices.Contains(known, s):
		in.fail(field, "unknown id %q", s)
		return ""
	}
	return s
}

// link returns a required absolute http(s) URL field.
func (in *input) link(field string) string {
	s := in.str(field, true)
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		in.fail(field, "must be an absolute http or https URL, got %q", s)
		return ""
	}
	return s
}

// file returns a required, non-empty file part.
func (in *input) file(field string) []byte {
	f, ok := in.files[field]
	if !ok {
		if _, isText := in.fields[field]; isText {
			in.fail(field, "must be a file part, not a text field")
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

// image returns a required PNG, JPEG or WebP file part, told by its first
// bytes, of at most maxSide pixels a side (when maxSide > 0).
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

// audio returns a required WAV or MP3 file part, told by its first bytes.
func (in *input) audio(field string) []byte {
	b := in.file(field)
	if b != nil && media.SniffAudio(b) == "" {
		in.fail(field, "must be a WAV or MP3 file (the only audio the fake reads)")
		return nil
	}
	return b
}

// kind names the JSON type of a decoded value.
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
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
