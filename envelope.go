package creative

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// This file is the envelope walker: one pass of jsontext over a success
// body, checking the envelope (success, message, data) and handing the
// decoder to the operation's data decoder (decode.go) at the data value.
//
// JSON is read with jsontext from github.com/go-json-experiment/json, the
// upstream of the standard library's encoding/json/v2 (behind GOEXPERIMENT
// in Go 1.26); it moves to encoding/json/jsontext when that lands.

// decoders are reused: a jsontext.Decoder reading a bytes.Buffer parses the
// buffer's own bytes, so values it returns alias the body.
var decoders = sync.Pool{New: func() any { return &bodyDecoder{} }}

// A bodyDecoder walks one body. With skim, the walk reads a skeleton of the
// body in which each long string is a placeholder, and a data decoder reads
// the string itself from the body (see skim.go).
type bodyDecoder struct {
	jsontext.Decoder
	buf   bytes.Buffer
	body  []byte       // the body as it came
	skel  []byte       // the skeleton, reused
	sk    skeleton     // the skeleton's reader (skim.go)
	long  []longString // the strings the skeleton leaves out
	taken int          // how many of them a decoder has read
	// skimming: the walk reads the skeleton, through a buffer of the
	// decoder's that later reads overwrite: a value kept is a copy.
	skimming bool
	keys     *redactor // the call's: data that holds a key is refused
	// maxLinks bounds the URLs of a list (WithMaxLinks); 0 for none.
	maxLinks int
}

// An envelopeError is a body that is not the envelope, or an envelope that
// says it failed.
type envelopeError struct {
	msg    string
	failed bool // success is false: the service's own failure
}

func (e *envelopeError) Error() string { return e.msg }

// envelope walks an envelope in body and calls data with the decoder placed
// at the data value, whose kind it may check with PeekKind. It fails when
// the body is not one JSON object with a boolean success that is true and a
// data that is not null. With skim, long strings are read by the data
// decoder from the body, unscanned by the walk (see skim.go): it is for
// image answers, whose base64 is almost the whole body. keys is the call's
// redactor, which data decoders reach as d.keys.
func envelope(body []byte, skim bool, keys *redactor, data func(d *bodyDecoder) error) error {
	bd := decoders.Get().(*bodyDecoder)
	bd.keys = keys
	defer func() {
		bd.buf = bytes.Buffer{}
		bd.Reset(&bd.buf)
		// Again: a decoder reset from a reader keeps its buffer, which a
		// lazy walk grew to the longest value it read (a data URL's
		// megabytes), and the next walk, reset from a bytes.Buffer, drops
		// it anyway.
		bd.Reset(&bd.buf)
		bd.body, bd.long, bd.taken, bd.keys, bd.maxLinks, bd.skimming = nil, bd.long[:0], 0, nil, 0, false
		bd.sk = skeleton{pend: bd.sk.pend[:0]}
		if cap(bd.skel) > 64<<10 {
			bd.skel = nil
		}
		decoders.Put(bd)
	}()
	var err error
	if skim {
		bd.sk.reset(bd, body, true)
		bd.skimming = true
		bd.Reset(&bd.sk)
		err = bd.walkDecoder(data)
		if bd.sk.gaveUp {
			src := bd.skim(body)
			bd.skimming = len(bd.long) > 0
			err = bd.walk(src, data)
		}
		bd.skimming = false
	} else {
		err = bd.walk(body, data)
	}
	if err != nil && bd.taken == 0 && len(bd.long) > 0 {
		// The body is as it came: walk it whole, for an error that speaks
		// of the body rather than the skeleton.
		bd.long = bd.long[:0]
		err = bd.walk(body, data)
	}
	if err == nil {
		err = bd.checkLeftOut()
	}
	return err
}

// walk reads the envelope in src.
func (bd *bodyDecoder) walk(src []byte, data func(d *bodyDecoder) error) error {
	bd.buf = *bytes.NewBuffer(src)
	bd.Reset(&bd.buf)
	return bd.walkDecoder(data)
}

// walkDecoder reads the envelope from the decoder, as reset.
func (bd *bodyDecoder) walkDecoder(data func(d *bodyDecoder) error) error {
	if tok, err := bd.ReadToken(); err != nil || tok.Kind() != '{' {
		return &envelopeError{msg: "not a JSON object"}
	}
	var w envelopeWalk
	for bd.PeekKind() == '"' {
		if err := w.member(bd, data); err != nil {
			return &envelopeError{msg: "not valid JSON: " + bd.inBody(err).Error()}
		}
	}
	if _, err := bd.ReadToken(); err != nil {
		return &envelopeError{msg: "not valid JSON: " + bd.inBody(err).Error()}
	}
	if _, err := bd.ReadToken(); err != io.EOF {
		return &envelopeError{msg: "not one JSON value: more follows the envelope"}
	}
	return w.verdict()
}

// envelopeWalk is what envelope has seen of the object so far.
type envelopeWalk struct {
	success, sawSuccess, sawData bool
	msg                          jsontext.Value
	dataErr                      error
}

// member reads one name and its value.
func (w *envelopeWalk) member(d *bodyDecoder, data func(d *bodyDecoder) error) error {
	name, err := d.ReadValue()
	if err != nil {
		return err
	}
	switch string(name) {
	case `"success"`:
		tok, err := d.ReadToken()
		if err != nil || (tok.Kind() != 't' && tok.Kind() != 'f') {
			return errors.New("success is not a boolean")
		}
		w.success, w.sawSuccess = tok.Bool(), true
	case `"message"`:
		w.msg, err = d.ReadValue()
		if ls, ok := d.longString(w.msg, false); ok {
			w.msg = d.body[ls.start-1 : ls.end+1]
		} else if d.skimming {
			w.msg = bytes.Clone(w.msg)
		}
	case `"data"`:
		depth := d.StackDepth()
		_, before := d.StackIndex(depth)
		if d.PeekKind() != 'n' {
			w.sawData = true
			w.dataErr = data(d)
		}
		err = finishValue(d, depth, before)
	default:
		err = d.SkipValue()
	}
	return err
}

// verdict says what a well-formed envelope holds: nil for a success with
// data, or the error that says what is missing or what failed.
func (w *envelopeWalk) verdict() error {
	switch {
	case !w.sawSuccess:
		return &envelopeError{msg: "the answer has no success field"}
	case !w.success:
		text := unquoteBounded(w.msg, 4*maxMessage)
		if text == "" {
			text = "success is false and no message was given"
		}
		return &envelopeError{msg: text, failed: true}
	case !w.sawData:
		return &envelopeError{msg: "the envelope says success but carries no data"}
	}
	return w.dataErr
}

// errSyntax marks a data decoder's error as invalid JSON rather than an
// unexpected shape.
var errSyntax = errors.New("invalid JSON")

// finishValue moves d past the value that follows the name it read last in
// the object at depth (holding before tokens then), however much of it a data
// decoder read before it stopped.
func finishValue(d *bodyDecoder, depth int, before int64) error {
	for d.StackDepth() > depth {
		if _, err := d.ReadToken(); err != nil {
			return err
		}
	}
	if _, n := d.StackIndex(depth); n == before {
		return d.SkipValue()
	}
	return nil
}

// unquote returns the text of a raw JSON string, "" for anything else.
func unquote(v jsontext.Value) string {
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	// Sized once: the text is at most as long as its quoted form.
	b, err := jsontext.AppendUnquote(make([]byte, 0, len(v)), v)
	if err != nil {
		return ""
	}
	return string(b)
}

// unquoteBounded returns the text of at most the first n bytes of a raw JSON
// string, "" for anything else: a message is cut for errors anyway, and a
// 50 MiB one must not be copied whole first. A cut text ends with "...".
func unquoteBounded(v jsontext.Value, n int) string {
	if len(v) <= n {
		return unquote(v)
	}
	// Cut before any escape the limit would split, then close the string.
	cut := n
	if i := bytes.LastIndexByte(v[:cut], '\\'); i >= cut-6 {
		cut = i
	}
	b, err := jsontext.AppendUnquote(nil, append(bytes.Clone(v[:cut]), '"'))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s... (%d bytes in all)", b, len(v))
}

// envelopeMessage returns the message of an error body that is an envelope.
func envelopeMessage(body []byte) (string, bool) {
	if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '{' {
		return "", false
	}
	var env struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &env, json.MatchCaseInsensitiveNames(true)) != nil {
		return "", false
	}
	return env.Message, true
}

// unexpected is the *APIError of a 2xx answer that is not what the
// operation promises. msg may be as long as the body: message bounds it.
func (rs *response) unexpected(body []byte, msg string) *APIError {
	e := rs.serviceFailure(body, msg)
	e.unexpected = true
	return e
}

// serviceFailure is the *APIError of a 2xx answer whose envelope says the
// service failed (success false), with its message.
func (rs *response) serviceFailure(body []byte, msg string) *APIError {
	e := rs.apiError()
	e.Message = rs.cl.message(msg)
	e.Body = rs.cl.keep(body, maxErrorBody)
	return e
}

// decodeEnvelope reads the body of rs and decodes its data with data,
// turning every failure into the *APIError a caller gets.
func (rs *response) decodeEnvelope(inPlace bool, data func(d *bodyDecoder) error) error {
	body, held, err := rs.readBody()
	if err != nil {
		return err
	}
	defer held.release()
	if rs.endedByClose() && jsonCut(body) {
		// The connection ended the answer before its JSON did: cut short,
		// as a chunked answer whose last chunk never came.
		return rs.readFailed(fmt.Errorf("the connection closed before the end of the answer's JSON: %w", io.ErrUnexpectedEOF))
	}
	if rs.cl.s.rawInto != nil {
		rs.keepRaw(body, inPlace)
	}
	head := body
	if inPlace {
		// Image data is decoded over the body: keep its start for an
		// error's Body, and a key's length more, so that a key across the
		// cut is whole when it is redacted (below, only on failure).
		head = bytes.Clone(body[:min(len(body), 1<<10+rs.cl.keyLen())])
	}
	err = envelope(body, inPlace, rs.cl.redactor, func(d *bodyDecoder) error {
		d.maxLinks = rs.cl.s.links()
		return data(d)
	})
	if err == nil {
		return nil
	}
	if inPlace {
		head = rs.cl.keep(head, 1<<10) // redacted, then cut
	}
	var ee *envelopeError
	if errors.As(err, &ee) {
		if ee.failed {
			return rs.serviceFailure(head, ee.msg)
		}
		return rs.unexpected(head, ee.msg+": "+rs.cl.describeBody(rs.Header.Get("Content-Type"), head))
	}
	return rs.unexpected(head, err.Error())
}

// endedByClose reports whether the answer's body ends where the connection
// closed (HTTP/1 without a Content-Length or chunks): a body cut short
// there reads as a whole one, and only what it holds tells them apart.
func (rs *response) endedByClose() bool {
	return rs.ProtoMajor == 1 && rs.ContentLength < 0 && len(rs.TransferEncoding) == 0 && !rs.Uncompressed
}

// jsonCut reports whether body is the start of a JSON value that ends
// before its end.
func jsonCut(body []byte) bool {
	err := jsontext.NewDecoder(bytes.NewReader(body)).SkipValue()
	return errors.Is(err, io.ErrUnexpectedEOF)
}
