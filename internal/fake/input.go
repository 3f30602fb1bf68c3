package fake

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"reflect"
	"slices"
	"strings"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/media"
	"github.com/creativegen/creative-go/internal/opcall"
	"github.com/creativegen/creative-go/internal/ops"
)

// An input is a parsed request body: JSON fields or form parts. Its
// request method turns it into the SDK's request of the operation.
type input struct {
	ctx    context.Context
	fields map[string]any    // JSON values (json.Number for numbers), or form text fields
	files  map[string]upload // form file parts
	// uploads are the bytes of the Files that request made of file parts,
	// for the answers to read.
	uploads map[creative.File][]byte
	// sentAs names a field that came under another of its names (see
	// aliases), for messages.
	sentAs map[string]string
}

type upload struct {
	name string
	data []byte
}

// data returns the bytes of an upload of the request.
func (in *input) data(f creative.File) []byte { return in.uploads[f] }

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
	in := &input{ctx: r.Context(), fields: map[string]any{}, files: map[string]upload{}, uploads: map[creative.File][]byte{}, sentAs: map[string]string{}}
	if op.Form {
		return in, s.readForm(r, body, op, rec, keep, in)
	}
	raw, err := io.ReadAll(io.LimitReader(body, maxJSON+1))
	rec.JSON = raw[:min(len(raw), maxJSON)]
	switch {
	case err != nil:
		return nil, "body: reading it: " + err.Error()
	case rec.ContentType != "application/json":
		return nil, fmt.Sprintf("Content-Type: %s takes application/json, got %q", op.Name, rec.ContentType)
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
		return fmt.Sprintf("Content-Type: %s takes multipart/form-data, got %q", op.Name, rec.ContentType)
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

// The fake's own rules. Every other rule a request is held to is the SDK's:
// the Validate method of its request type.
var (
	// openIDKinds are the kinds of id taken without being known, shaped as
	// ids: the specification's list of lighting ids is cut short. Ids of
	// other kinds must be in their list in package ids.
	openIDKinds = []string{"lighting"}
	// maxNumbers are the fake's upper bounds, by operation and field, on
	// numbers the specification leaves unbounded.
	maxNumbers = map[string]map[string]float64{
		ops.WriterTool:   {"number": 5},
		ops.TextToMusic:  {"duration": 300},
		ops.UpScale:      {"scale": 8},
		ops.InfiniteZoom: {"numberOfIteration": 20},
	}
	// aliases are the other names of a field, by operation: the
	// specification names text-to-image's size field both ways. Either is
	// taken, and both must agree when both are sent.
	aliases = map[string]map[string]string{
		ops.TextToImage: {"imageSizeId": "dimensionsId"},
	}
)

// request turns the input into the SDK's request of op and checks it: what
// the wire must carry (each field of the table of its kind, the required
// ones present), then the request's Validate, then the fake's own rules.
// The answer is the request, or the message of a 400 naming the field.
func (in *input) request(op ops.Op) (opcall.Request, string) {
	fields := map[string]any{}
	for _, f := range op.Fields {
		v, bad := in.wireValue(op, f)
		if bad != "" {
			return nil, in.message(f.Name, bad, "")
		}
		if v != nil {
			fields[f.Name] = v
		}
	}
	req, err := opcall.Build(op, fields)
	if err != nil {
		return nil, err.Error() // "field: why"
	}
	if err := req.Validate(); err != nil {
		var ve *creative.ValidationError
		if !errors.As(err, &ve) {
			return nil, err.Error()
		}
		return nil, in.message(ve.Field, ve.Rule, ve.Value)
	}
	return req, in.ownRules(op, fields)
}

// message is a 400's message: the field as it was sent, what it must be,
// and what came.
func (in *input) message(field, rule, got string) string {
	if alias, ok := in.sentAs[field]; ok {
		field = alias
	}
	if got != "" {
		return field + ": " + rule + ", got " + got
	}
	return field + ": " + rule
}

// wireValue reads field f of op as the wire carried it, as opcall.Build
// takes it: a string, a float64, a []any or a creative.File; nil when it
// was not sent. bad says why it cannot be used: a required field missing, a
// value of another kind than the table's, or a number sent as 0.
func (in *input) wireValue(op ops.Op, f ops.Field) (v any, bad string) {
	v, sent := in.fields[f.Name]
	if alias, ok := aliases[op.Name][f.Name]; ok {
		switch av := in.fields[alias]; {
		case av == nil:
		case !sent || v == nil:
			v, sent = av, true
			in.sentAs[f.Name] = alias
		case !reflect.DeepEqual(av, v):
			in.sentAs[f.Name] = alias
			return nil, fmt.Sprintf("must be the same as %s (%s), got %s", f.Name, asJSON(v), asJSON(av))
		}
	}
	up, isFile := in.files[f.Name]
	switch {
	case f.Type == ops.File && sent:
		return nil, "must be a file part, not a text field"
	case f.Type == ops.File && isFile:
		file := creative.FileFromBytes(up.name, up.data)
		in.uploads[file] = up.data
		return file, ""
	case isFile:
		return nil, "must be a text field, not a file"
	case !sent || v == nil:
		if f.Required {
			return nil, "is required"
		}
		return nil, ""
	}
	switch f.Type {
	case ops.Number:
		n, ok := v.(json.Number)
		if !ok {
			return nil, "must be a number, got " + kind(v)
		}
		x, err := n.Float64()
		switch {
		case err != nil:
			return nil, "must be a number, got " + n.String()
		case x == 0:
			// A request of the SDK means "left out" by 0, which
			// Validate takes and the SDK never sends; on the wire 0 is
			// a value, and every number the service takes is above 0.
			return nil, "must be above 0, got 0"
		}
		return x, ""
	case ops.Array:
		if a, ok := v.([]any); ok {
			return a, ""
		}
		return nil, "must be an array, got " + kind(v)
	}
	if s, ok := v.(string); ok {
		return s, ""
	}
	return nil, "must be a string, got " + kind(v)
}

// ownRules checks fields, which the request's Validate passed, against the
// fake's own rules: known ids, the audio the fake reads, its upper bounds.
func (in *input) ownRules(op ops.Op, fields map[string]any) string {
	for _, f := range op.Fields {
		switch v := fields[f.Name].(type) {
		case string:
			if f.Type == ops.ID && !slices.Contains(openIDKinds, f.IDKind) && !known(f.IDKind, v) {
				return in.message(f.Name, "unknown id", fmt.Sprintf("%q", v))
			}
		case float64:
			if limit, ok := maxNumbers[op.Name][f.Name]; ok && v > limit {
				return in.message(f.Name, fmt.Sprintf("must be at most %v", limit), fmt.Sprint(v))
			}
		case creative.File:
			if op.Area() == "audio" && media.SniffAudio(in.data(v)) == "" {
				return in.message(f.Name, "must be a WAV or MP3 file (the only audio the fake reads)", "")
			}
		}
	}
	return ""
}

// known reports whether id is in the list of its kind in package ids.
func known(kind, id string) bool {
	entries, _ := ids.Entries(kind)
	return slices.ContainsFunc(entries, func(e ids.Entry) bool { return e.ID == id })
}

// asJSON shows a decoded value as the JSON it came as.
func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
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
	}
	return fmt.Sprintf("%T", v)
}
