package creative

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/creativegen/creative-go/internal/ops"
)

// This file is what the SDK does not know yet, both ways: a request field
// its request types do not have (WithJSONSet), and the answer as it came,
// with the fields its results do not read (WithRawAnswerInto).

// A jsonSet is one WithJSONSet: the path's names and the value's JSON.
type jsonSet struct {
	path  []string
	value []byte
}

// WithJSONSet sets the field at path of a call's JSON body to value,
// encoded with encoding/json, replacing the field if the request has it
// already and creating the objects on the way: for a field the service
// takes that the request type does not have yet. path is dotted, as in
// openai-go: "a.b.c" is the field c of the object b of the object a; a
// name that holds a dot writes it as `\.`. Arrays are not indexed. A path
// has at most 64 names, each of them UTF-8; anything else is refused.
//
// It applies to every operation sent as JSON and to Execute's body (nil,
// []byte or a value; not an io.Reader). An upload (multipart/form-data) or
// a Download has no JSON body: the call fails with a *ValidationError
// naming the option and the operation, before anything is sent. Several
// WithJSONSet apply in their order. An operation's body, once set, must
// still pass its request type's validation (Validate): a set may replace
// a typed field, never with a value that validation refuses, nor of
// another type, and the call fails with a *ValidationError before
// anything is sent. A field the type does not have, and Execute's body,
// are the caller's word.
func WithJSONSet(path string, value any) Option {
	return func(s *settings) error {
		names, err := splitPath(path)
		if err != nil {
			return fmt.Errorf("creative: WithJSONSet: %w", err)
		}
		v, err := json.Marshal(value)
		if err != nil {
			return fmt.Errorf("creative: WithJSONSet(%q): the value cannot be encoded as JSON: %w", path, err)
		}
		s.jsonSets = append(s.jsonSets[:len(s.jsonSets):len(s.jsonSets)], jsonSet{path: names, value: v})
		return nil
	}
}

// splitPath splits a dotted path into its names; `\.` is a dot within a
// name.
func splitPath(path string) ([]string, error) {
	var (
		names []string
		cur   strings.Builder
	)
	for i := 0; i < len(path); i++ {
		switch {
		case path[i] == '\\' && i+1 < len(path) && path[i+1] == '.':
			cur.WriteByte('.')
			i++
		case path[i] == '.':
			names = append(names, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(path[i])
		}
	}
	names = append(names, cur.String())
	if len(names) > maxPathNames {
		return nil, fmt.Errorf("the path has %d names, more than the %d a request's JSON nests", len(names), maxPathNames)
	}
	for _, n := range names {
		switch {
		case n == "":
			return nil, fmt.Errorf("the path %q has an empty name", path)
		case !utf8.ValidString(n):
			// JSON would write it with U+FFFD in place of its bad bytes:
			// another name, which the object may hold already.
			return nil, fmt.Errorf("the path %q has a name that is not UTF-8", path)
		}
	}
	return names, nil
}

// maxPathNames bounds the names of a path: far more than any request's
// fields nest, far fewer than the depth a JSON decoder refuses (Go's
// encoding/json: 10000).
const maxPathNames = 64

// setJSON applies sets to the JSON body of op, or refuses them when the
// body is not JSON the SDK holds or, with check, when the body they make
// fails the request type's validation.
func setJSON(op string, body requestBody, sets []jsonSet, check func([]byte) error) (requestBody, error) {
	jb, ok := body.(*jsonBody)
	if !ok {
		what := "sends multipart/form-data (an upload), not JSON"
		switch body.(type) {
		case nil:
			what = "sends no body"
		case *readerBody:
			what = "sends the body of an io.Reader, which the client does not read before it goes: give []byte or a value"
		}
		return nil, &ValidationError{Operation: op, Field: "WithJSONSet", Rule: "cannot set a JSON field: the call " + what + "; nothing was sent"}
	}
	data := jb.data
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	for _, set := range sets {
		var err error
		if data, err = setPath(data, set.path, set.value); err != nil {
			return nil, &ValidationError{Operation: op, Field: "WithJSONSet", Rule: fmt.Sprintf("cannot set %s: %v; nothing was sent", strings.Join(set.path, "."), err)}
		}
	}
	if check != nil {
		if err := check(data); err != nil {
			return nil, err
		}
	}
	return &jsonBody{data: data}, nil
}

// revalidate returns the check of a body of R that WithJSONSet changed:
// decoded back into R (its names matched as they are spelt, as the
// service matches them), it must hold values of the types R's fields have
// and pass R's own validation, so that a set never sends a request the
// typed fields' validation would have refused: one that cannot succeed.
// Nor may it change how many results req asks for, which the answer is
// checked against: an answer of more would be paid for and refused.
func revalidate[R any](op string, req R) func([]byte) error {
	return func(data []byte) error {
		var v R
		if err := jsonv2.Unmarshal(data, &v); err != nil {
			return &ValidationError{Operation: op, Field: "WithJSONSet", Rule: "sets a field of the request to a value its type cannot hold; nothing was sent", Err: err}
		}
		if n, ok := any(req).(interface{ results() int }); ok && any(v).(interface{ results() int }).results() != n.results() {
			return &ValidationError{Operation: op, Field: "WithJSONSet", Rule: "changes how many results the call asks for, which its answer is checked against: set the request's own field; nothing was sent"}
		}
		val, ok := any(v).(interface{ Validate() error })
		if !ok {
			return nil
		}
		err := val.Validate()
		var ve *ValidationError
		if errors.As(err, &ve) {
			e := *ve
			e.Rule += " (in the body WithJSONSet made; nothing was sent)"
			return &e
		}
		return err
	}
}

// setPath returns the JSON object obj with the member at path set to val;
// the other members keep their bytes and their order.
func setPath(obj []byte, path []string, val []byte) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, fmt.Errorf("%s is not a JSON object", describeJSON(obj))
	}
	out := make([]byte, 1, len(obj)+len(val)+len(path[0])+4)
	out[0] = '{'
	found := false
	for dec.PeekKind() == '"' {
		name, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(out, name...), ':')
		same := !found && unquote(name) == path[0]
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		switch {
		case !same:
			out = append(out, v...)
		case len(path) == 1:
			out, found = append(out, val...), true
		default:
			sub, err := setPath(v, path[1:], val)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path[0], err)
			}
			out, found = append(out, sub...), true
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	if !found {
		return appendMember(out, path, val), nil
	}
	return append(out, '}'), nil
}

// appendMember ends out, an object's members so far, with a new member at
// path holding val, in objects made on the way, and closes the object.
func appendMember(out []byte, path []string, val []byte) []byte {
	if len(out) > 1 {
		out = append(out, ',')
	}
	out, _ = jsontext.AppendQuote(out, path[0])
	out = append(out, ':')
	if len(path) == 1 {
		out = append(out, val...)
	} else {
		out = append(out, appendMember([]byte{'{'}, path[1:], val)...)
	}
	return append(out, '}')
}

// describeJSON names the kind of a JSON value, for an error.
func describeJSON(v []byte) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	return kindName(jsontext.Value(v).Kind())
}

// A RawAnswer is a call's answer as it came, to read what the SDK does not
// know yet: a field the service added to its envelope or to the data. Give
// it to a call with WithRawAnswerInto; it is filled once the answer was
// read.
//
// For the operations that answer with images, the answer is not kept
// whole: each base64 string of 4 KiB or more, which the SDK decodes in
// place into the Image, is replaced by the string "[N bytes of base64,
// decoded into the result]". So a 10 MiB answer costs a few hundred bytes
// more, not 10 MiB. A speech answer (audio, not JSON) fills nothing. An
// echo of the access key, in any form errors redact, is "[redacted]"
// there too.
type RawAnswer struct {
	json  jsontext.Value
	known []string // the data's members the operation's result reads
}

// WithRawAnswerInto makes *dst the answer of the call, as RawAnswer says,
// once it was read: for every operation but speech, and for Execute
// unless its res is **http.Response (the caller reads that answer
// itself). A Download fills nothing. Given to New, it is refused: an
// answer belongs to one call.
func WithRawAnswerInto(dst *RawAnswer) Option {
	return func(s *settings) error {
		if dst == nil {
			return fmt.Errorf("creative: WithRawAnswerInto: nil destination")
		}
		s.rawInto = dst
		return nil
	}
}

// JSON returns the answer's JSON, as RawAnswer says; nil when no answer
// was kept.
func (a *RawAnswer) JSON() jsontext.Value {
	if a == nil {
		return nil
	}
	return a.json
}

// RawJSON returns the answer's JSON as text, as openai-go's results do.
func (a *RawAnswer) RawJSON() string { return string(a.JSON()) }

// Get returns the value at a dotted path of the answer ("data.credits",
// "requestInfo.region"), as WithJSONSet names fields, and whether there is
// one. Arrays are not indexed.
func (a *RawAnswer) Get(path string) (jsontext.Value, bool) {
	names, err := splitPath(path)
	if err != nil {
		return nil, false
	}
	v := a.JSON()
	for _, n := range names {
		m := members(v)
		var ok bool
		if v, ok = m[n]; !ok {
			return nil, false
		}
	}
	return v, true
}

// ExtraFields returns the members of the answer the SDK does not read:
// those of the envelope other than success, message and data, by their
// names, and those of an object data other than the ones the operation's
// result reads, as "data.<name>". It is nil when there are none.
func (a *RawAnswer) ExtraFields() map[string]jsontext.Value {
	var out map[string]jsontext.Value
	add := func(k string, v jsontext.Value) {
		if out == nil {
			out = map[string]jsontext.Value{}
		}
		out[k] = v
	}
	if a == nil {
		return nil
	}
	for k, v := range members(a.json) {
		switch k {
		case "success", "message":
		case "data":
			for dk, dv := range members(v) {
				if !containsName(a.known, dk) {
					add("data."+dk, dv)
				}
			}
		default:
			add(k, v)
		}
	}
	return out
}

func containsName(names []string, n string) bool {
	for _, k := range names {
		if k == n {
			return true
		}
	}
	return false
}

// members returns the members of a JSON object by name; nil for anything
// else.
func members(v jsontext.Value) map[string]jsontext.Value {
	if v.Kind() != '{' {
		return nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	if _, err := dec.ReadToken(); err != nil {
		return nil
	}
	out := map[string]jsontext.Value{}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil
		}
		n := name.String()
		val, err := dec.ReadValue()
		if err != nil {
			return nil
		}
		out[n] = bytes.Clone(val)
	}
	return out
}

// knownData are the members of an object data each kind of result reads.
var knownData = map[ops.Result][]string{
	ops.Writer: {"language", "useCase", "word_count", "text"},
	ops.Images: {"base64"},
	ops.Image:  {"base64"},
}

// keepRaw fills WithRawAnswerInto's destination with body, the answer
// read whole. With skim (an image answer, decoded in place), each string
// the skim leaves out of its skeleton is replaced by a note of its length,
// so the copy is small.
func (rs *response) keepRaw(body []byte, skim bool) {
	dst := rs.cl.s.rawInto
	*dst = RawAnswer{}
	defer func() { dst.json = rs.cl.redactBytes(dst.json) }() // a copy of the answer's text, so through the redactor
	if o, ok := ops.Lookup(rs.cl.op); ok {
		dst.known = knownData[o.Result]
	}
	if !skim {
		dst.json = bytes.Clone(body)
		return
	}
	bd := decoders.Get().(*bodyDecoder)
	defer func() {
		bd.body, bd.long = nil, bd.long[:0]
		if cap(bd.skel) > 64<<10 {
			bd.skel = nil
		}
		decoders.Put(bd)
	}()
	skel := bd.skim(body)
	if len(bd.long) == 0 {
		dst.json = bytes.Clone(body)
		return
	}
	out := make([]byte, 0, len(skel)+len(bd.long)*40)
	last := 0
	for _, ls := range bd.long {
		text := int(ls.at) + 1 // the placeholder's text, up to its closing quote
		out = append(out, skel[last:text]...)
		out = append(out, '[')
		out = strconv.AppendInt(out, int64(ls.end-ls.start), 10)
		out = append(out, " bytes of base64, decoded into the result]"...)
		last = text + bytes.IndexByte(skel[text:], '"')
	}
	dst.json = append(out, skel[last:]...)
}
