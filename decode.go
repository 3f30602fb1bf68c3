package creative

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/segmentio/asm/base64"
)

// This file holds the decoders of an envelope's data, one per result kind
// (URL, URLs, images, the writer's object), and the check that a speech
// answer is audio.

// dataURL decodes a URL string and checks that it is an absolute http(s)
// URL that holds none of the call's access keys, in any form the redactor
// finds: a caller stores, logs and fetches the URLs it gets, and the file's
// host may be another's.
func dataURL(d *bodyDecoder, where string) (URL, error) {
	if k := d.PeekKind(); k != '"' {
		return "", fmt.Errorf("%s is %s, want a non-empty URL string", where, kindName(k))
	}
	v, err := d.ReadValue()
	if err != nil {
		return "", fmt.Errorf("%w: %v", errSyntax, err)
	}
	s := stringOf(v)
	if !plainHTTPURL(s) {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			// Not cut here: the message is bounded once redacted.
			return "", fmt.Errorf("%s is %q, not an absolute http(s) URL", where, s)
		}
	}
	if d.keys.holds(s) {
		return "", fmt.Errorf("%s is %q, a URL that holds the access key: refused so that the key goes no further (the service answered, so the work was done)",
			where, d.keys.redact(s))
	}
	return URL(s), nil
}

// stringOf returns the text of v, a JSON string the decoder read and
// checked whole: the bytes between its quotes when it holds no escape, as
// jsontext's Token.String gives them without scanning them again.
func stringOf(v jsontext.Value) string {
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	return unquote(v)
}

// plainHTTPURL reports whether s is an absolute http(s) URL in a shape
// url.Parse accepts, with a host, so that dataURL need not parse it: the
// scheme in lower case, then a host of letters, digits, dots and hyphens,
// with a port of digits or none, then nothing, or a "/" and printable ASCII
// without "%" (no escape to check) up to the end. It says nothing of any
// other string: url.Parse judges those.
func plainHTTPURL(s string) bool {
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "http://"); !ok {
			return false
		}
	}
	host, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	name, port, withPort := strings.Cut(host, ":")
	if name == "" || (withPort && !allDigits(port)) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isAlnum(c) && c != '.' && c != '-' {
			return false
		}
	}
	for i := 0; i < len(path); i++ {
		if c := path[i]; c <= ' ' || c >= 0x7f || c == '%' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// dataURLs decodes an array of URL strings, or a lone URL string as a list
// of one.
func dataURLs(d *bodyDecoder) ([]URL, error) {
	if d.PeekKind() == '"' {
		u, err := dataURL(d, "data")
		if err != nil {
			return nil, err
		}
		return []URL{u}, nil
	}
	if k := d.PeekKind(); k != '[' {
		return nil, fmt.Errorf("data is %s, want an array of URL strings", kindName(k))
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	var out []URL
	for d.PeekKind() != ']' {
		if len(out) == d.maxLinks && d.maxLinks > 0 {
			return nil, fmt.Errorf("data holds more than the %d links the client accepts (raise it with WithMaxLinks)", d.maxLinks)
		}
		u, err := dataURL(d, fmt.Sprintf("data[%d]", len(out)))
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	if len(out) == 0 {
		return nil, errors.New("data is an empty array, want URL strings")
	}
	return out, nil
}

// dataImages decodes image data of every shape the spec allows (an object
// with base64, an array of them, a bare string) and arrays of bare strings,
// at most max images. Each base64 string is decoded in place, in the body's
// own bytes, and validated in the same pass.
func dataImages(d *bodyDecoder, max int) ([]Image, error) {
	if d.PeekKind() != '[' {
		im, err := dataImage(d, "data")
		if err != nil {
			return nil, err
		}
		return []Image{im}, nil
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	var out []Image
	for d.PeekKind() != ']' {
		if len(out) == max {
			return nil, fmt.Errorf("data holds more than the %d image(s) asked for", max)
		}
		im, err := dataImage(d, fmt.Sprintf("data[%d]", len(out)))
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	if len(out) == 0 {
		return nil, errors.New("data is an empty array, want images")
	}
	return out, nil
}

// dataImage decodes one image: an object with a base64 string, or the
// string itself.
func dataImage(d *bodyDecoder, where string) (Image, error) {
	switch k := d.PeekKind(); k {
	case '"':
		return base64Image(d, where)
	case '{':
	default:
		return Image{}, fmt.Errorf("%s is %s, want an object with base64 or a base64 string", where, kindName(k))
	}
	if _, err := d.ReadToken(); err != nil {
		return Image{}, fmt.Errorf("%w: %v", errSyntax, err)
	}
	var (
		im    Image
		found bool
	)
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil {
			return Image{}, fmt.Errorf("%w: %v", errSyntax, err)
		}
		if string(name) != `"base64"` {
			if err := d.SkipValue(); err != nil {
				return Image{}, fmt.Errorf("%w: %v", errSyntax, err)
			}
			continue
		}
		if d.PeekKind() != '"' {
			return Image{}, fmt.Errorf("%s.base64 is %s, want a base64 string", where, kindName(d.PeekKind()))
		}
		if im, err = base64Image(d, where+".base64"); err != nil {
			return Image{}, err
		}
		found = true
	}
	if _, err := d.ReadToken(); err != nil {
		return Image{}, fmt.Errorf("%w: %v", errSyntax, err)
	}
	if !found {
		return Image{}, fmt.Errorf("%s is an object without a base64 string", where)
	}
	return im, nil
}

// base64Image decodes the base64 string at the decoder, in place: padded
// or not, wrapped in lines (\n or \r\n) or not, bare or as a data URL.
func base64Image(d *bodyDecoder, where string) (Image, error) {
	raw, err := d.ReadValue()
	if err != nil {
		return Image{}, fmt.Errorf("%w: %v", errSyntax, err)
	}
	if ls, ok := d.longString(raw, true); ok {
		return base64Long(d.body[ls.start:ls.end], where)
	}
	s := raw[1 : len(raw)-1]
	switch {
	case bytes.IndexByte(s, '\\') >= 0:
		// Escapes (\n line breaks, \/) are rare: unescape into a copy.
		s, err = jsontext.AppendUnquote(nil, raw)
		if err != nil {
			return Image{}, fmt.Errorf("%w: %v", errSyntax, err)
		}
	case d.skimming:
		// The walk reads the skeleton (skim.go) through a buffer that its
		// later reads overwrite: a short image is decoded in a copy of its
		// own, not in place.
		s = bytes.Clone(s)
	}
	if bytes.HasPrefix(s, []byte("data:")) {
		i := bytes.Index(s, []byte(";base64,"))
		if i < 0 || bytes.ContainsFunc(s[:i], func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return Image{}, fmt.Errorf("%s is a data URL without a clean ;base64, prefix", where)
		}
		s = s[i+len(";base64,"):]
	}
	enc := base64.StdEncoding
	if n := len(s) - bytes.Count(s, []byte{'\n'}) - bytes.Count(s, []byte{'\r'}); n%4 != 0 {
		enc = base64.RawStdEncoding
	}
	n, err := enc.Decode(s, s)
	if err != nil {
		return Image{}, fmt.Errorf("%s is not valid base64: %v", where, err)
	}
	if n == 0 {
		return Image{}, fmt.Errorf("%s is empty", where)
	}
	return Image{Data: s[:n:n]}, nil
}

// base64Long decodes in place a long string of the body that the walk left
// out (skim.go): no escapes, no data URL. The decoder rejects every byte
// outside base64, control characters and invalid UTF-8 among them, but
// passes over line breaks, which a JSON string may not hold raw: the
// decoded bytes encode to exactly the string's length only when it holds
// none (a length compared after rounding let one break through).
func base64Long(s []byte, where string) (Image, error) {
	enc := base64.StdEncoding
	if len(s)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	n, err := enc.Decode(s, s)
	switch {
	case err != nil:
		return Image{}, fmt.Errorf("%s is not valid base64: %v", where, err)
	case enc.EncodedLen(n) != len(s):
		return Image{}, fmt.Errorf("%w: %s holds a raw line break", errSyntax, where)
	}
	return Image{Data: s[:n:n]}, nil
}

// dataWriter decodes the writer tool's object.
func dataWriter(d *bodyDecoder) (*WriterResult, error) {
	if k := d.PeekKind(); k != '{' {
		return nil, fmt.Errorf("data is %s, want the writer object (language, useCase, word_count, text.choices)", kindName(k))
	}
	raw, err := d.ReadValue()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	var w struct {
		Language  string   `json:"language"`
		UseCase   string   `json:"useCase"`
		WordCount *float64 `json:"word_count"`
		Text      *struct {
			Choices []struct {
				Text      *string `json:"text"`
				Index     float64 `json:"index"`
				WordCount float64 `json:"word_count"`
			} `json:"choices"`
		} `json:"text"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("data is not the writer object (language, useCase, word_count, text.choices): %v", err)
	}
	if w.Text == nil || len(w.Text.Choices) == 0 {
		return nil, errors.New("data has no text.choices")
	}
	// Every text of the answer passes the redactor, the written texts too.
	res := &WriterResult{Language: d.keys.redact(w.Language), UseCase: d.keys.redact(w.UseCase), Choices: make([]WriterChoice, len(w.Text.Choices))}
	total := 0
	for i, ch := range w.Text.Choices {
		if ch.Text == nil {
			return nil, fmt.Errorf("data.text.choices[%d] has no text", i)
		}
		res.Choices[i] = WriterChoice{Text: d.keys.redact(*ch.Text), Index: int(ch.Index), WordCount: int(ch.WordCount)}
		total += int(ch.WordCount)
	}
	res.WordCount = total
	if w.WordCount != nil {
		res.WordCount = int(*w.WordCount)
	}
	return res, nil
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '0':
		return "a number"
	}
	return "not valid JSON"
}

// audio checks that a 2xx answer to text-to-speech is audio, whatever its
// Content-Type says: a body that starts as JSON, HTML or XML, or a JSON or
// text type, is read (bounded) and reported instead.
func (rs *response) audio() (*Audio, error) {
	head, err := readHead(rs.Body, 512)
	if err != nil {
		return nil, rs.readFailed(err)
	}
	ct := rs.Header.Get("Content-Type")
	if notAudio(ct, head) {
		return nil, rs.notAudio(ct, head)
	}
	return &Audio{
		ContentType:   string(rs.cl.keep([]byte(ct), maxMessage)), // a header's text, echoes and all
		ContentLength: rs.ContentLength,
		body:          &capped{r: io.MultiReader(bytes.NewReader(head), rs.Body), left: rs.cl.s.maxBytes, rs: rs},
		closer:        rs,
	}, nil
}

// readHead reads up to n bytes of r, stopping at the first read that brings
// a byte other than white space.
func readHead(r io.Reader, n int) ([]byte, error) {
	head := make([]byte, 0, n)
	for len(head) < cap(head) {
		m, err := r.Read(head[len(head):cap(head)])
		head = head[:len(head)+m]
		if err == io.EOF {
			return head, nil
		}
		if err != nil {
			return nil, err
		}
		if len(textStart(head)) > 0 {
			break
		}
	}
	return head, nil
}

// notAudio reports whether an answer with content type ct whose body starts
// with head is not audio: empty, JSON, HTML or XML, or typed as text or JSON.
func notAudio(ct string, head []byte) bool {
	first := textStart(head)
	return len(first) == 0 || strings.Contains(ct, "json") || strings.HasPrefix(ct, "text/") ||
		first[0] == '{' || first[0] == '[' || first[0] == '<'
}

// notAudio reads (bounded) an answer that is not audio and says what it is:
// the service's failure when it is an envelope with success false.
func (rs *response) notAudio(ct string, head []byte) error {
	body, err := io.ReadAll(io.MultiReader(bytes.NewReader(head), io.LimitReader(rs.Body, int64(maxErrorBody+rs.cl.keyLen()))))
	if err != nil {
		return rs.readFailed(err)
	}
	if len(textStart(body)) == 0 {
		return rs.unexpected(body, "an empty body where audio was promised")
	}
	var ee *envelopeError
	switch err := envelope(body, false, rs.cl.redactor, func(d *bodyDecoder) error { return d.SkipValue() }); {
	case errors.As(err, &ee) && ee.failed:
		return rs.serviceFailure(body, ee.msg)
	case err != nil:
		return rs.unexpected(body, fmt.Sprintf("%s where audio was promised: %s", rs.cl.describeBody(ct, body), err))
	}
	return rs.unexpected(body, "a JSON envelope where audio was promised")
}

// textStart is where the text of a body starts, after a UTF-8 byte order
// mark (which some servers write before JSON) and blank space.
func textStart(b []byte) []byte {
	return bytes.TrimLeft(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), " \t\r\n")
}

// capped reads a stream up to the call's cap; past it, reading fails with
// the *APIError that says so, instead of stopping quietly.
type capped struct {
	r    io.Reader
	left int64
	rs   *response
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, c.rs.tooLarge(-1)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n - int(-c.left), c.rs.tooLarge(-1)
	}
	if err != nil && err != io.EOF {
		err = c.rs.readFailed(err)
	}
	return n, err
}

// dataURLOf decodes the URL string that is the whole data.
func dataURLOf(d *bodyDecoder) (URL, error) { return dataURL(d, "data") }

// images returns the data decoder of an operation that asked for up to max
// images.
func images(max int) func(*bodyDecoder) ([]Image, error) {
	return func(d *bodyDecoder) ([]Image, error) { return dataImages(d, max) }
}

// oneImage decodes the data of an operation that returns one image.
func oneImage(d *bodyDecoder) (Image, error) {
	ims, err := dataImages(d, 1)
	if err != nil {
		return Image{}, err
	}
	return ims[0], nil
}
