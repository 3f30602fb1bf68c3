package creative

import (
	"bytes"
	"encoding/base64"
)

// The fast path for image answers. A text-to-image answer of ten 1 MiB
// images is 13 MiB of base64 inside JSON; encoding/json would hold the body,
// a copy of every string and the decoded bytes at once. fastImages instead
// walks the body it is given, checks that it is the envelope with success
// true, and decodes each base64 string in place: the images end up as
// sub-slices of the body, so decoding allocates nothing beyond the body.
//
// Anything it does not fully understand (keys in another case or escaped,
// duplicate keys, an escape other than \/ in the base64, success false, a
// missing data, a shape other than the three the spec allows, invalid JSON
// anywhere) makes it report !ok, and the caller decodes the same body with
// encoding/json, which also produces the errors. FuzzFastImages holds the
// two paths to the same result.

// span is where one base64 string lies in the body.
type span struct {
	start, end int // the string's contents, quotes excluded
	escaped    bool
}

// fastImages decodes the images of a whole success body, overwriting the
// body. It reports ok only when the body is an envelope with success true
// and image data of a shape it knows, with valid base64.
func fastImages(body []byte) ([]Image, bool) {
	p := jsonScan{b: body}
	spans, ok := p.envelope()
	if !ok || len(spans) == 0 {
		return nil, false
	}
	// Check every string before writing anything, so that a failure leaves
	// the body intact for the encoding/json path.
	for i := range spans {
		if !checkBase64(body, &spans[i]) {
			return nil, false
		}
	}
	ims := make([]Image, len(spans))
	w := 0
	for i, sp := range spans {
		if sp.escaped {
			unescape(body, &sp)
		}
		n, ok := decodeInPlace(body, w, sp)
		if !ok {
			return nil, false // unreachable after checkBase64; kept as a guard
		}
		ims[i] = Image{Data: body[w : w+n : w+n]}
		w += n
	}
	return ims, true
}

// fastOneImage is fastImages for operations that return one image.
func fastOneImage(body []byte) (Image, bool) {
	// Count first: a body with several images must reach encoding/json
	// intact, for its error.
	p := jsonScan{b: body}
	if spans, ok := p.envelope(); !ok || len(spans) != 1 {
		return Image{}, false
	}
	ims, ok := fastImages(body)
	if !ok {
		return Image{}, false
	}
	return ims[0], true
}

// checkBase64 reports whether a string is base64 that decodes, padded or
// not, reading \/ as / and skipping a data URL prefix (which it records in
// sp). It writes nothing, so a failure leaves the body for encoding/json.
func checkBase64(body []byte, sp *span) bool {
	s := body[sp.start:sp.end]
	if bytes.HasPrefix(s, []byte("data:")) {
		i := bytes.Index(s, []byte(";base64,"))
		if i < 0 || bytes.IndexByte(s[:i], '\\') >= 0 {
			return false
		}
		for _, c := range s[:i] {
			if c < 0x20 { // not allowed raw in a JSON string
				return false
			}
		}
		sp.start += i + len(";base64,")
		s = body[sp.start:sp.end]
	}
	if !sp.escaped {
		// The common case, kept to one table lookup per byte.
		body := bytes.TrimSuffix(bytes.TrimSuffix(s, []byte("=")), []byte("="))
		if len(body) == 0 || len(body)%4 == 1 || (len(body) != len(s) && len(s)%4 != 0) {
			return false
		}
		for _, c := range body {
			if !base64Alphabet[c] {
				return false
			}
		}
		return true
	}
	n, pad := 0, -1 // decoded length in characters; index of the first '='
	for r := 0; r < len(s); r++ {
		c := s[r]
		if c == '\\' {
			if r+1 >= len(s) || s[r+1] != '/' {
				return false
			}
			r++
			c = '/'
		}
		switch {
		case c == '=':
			if pad < 0 {
				pad = n
			}
		case pad >= 0 || !isBase64Char(c):
			return false
		}
		n++
	}
	switch {
	case n == 0 || n%4 == 1:
		return false
	case pad >= 0:
		// Padding only ends a padded string: "xx==" or "xxx=".
		return n%4 == 0 && pad >= n-2 && pad > 0
	}
	return true
}

func isBase64Char(c byte) bool { return base64Alphabet[c] }

// base64Alphabet marks the characters of standard base64, padding aside.
var base64Alphabet = func() (t [256]bool) {
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" {
		t[c] = true
	}
	return t
}()

// unescape removes the \/ escapes of a checked string in place.
func unescape(body []byte, sp *span) {
	w := sp.start
	for r := sp.start; r < sp.end; r++ {
		c := body[r]
		if c == '\\' {
			r++
			c = '/'
		}
		body[w] = c
		w++
	}
	sp.end = w
}

// decodeInPlace decodes the base64 of sp into body at w (w <= sp.start), in
// chunks through a small buffer, so that no byte is written before it was
// read. It returns the decoded length.
func decodeInPlace(body []byte, w int, sp span) (int, bool) {
	src := body[sp.start:sp.end]
	enc := base64.StdEncoding
	if len(src)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	var tmp [3 * 1024]byte
	const chunk = 4 * 1024 // decodes to len(tmp)
	n := 0
	for r := 0; r < len(src); r += chunk {
		end := min(r+chunk, len(src))
		part := src[r:end]
		e := base64.RawStdEncoding
		if end == len(src) {
			e = enc
		}
		k, err := e.Decode(tmp[:], part)
		if err != nil {
			return 0, false
		}
		copy(body[w+n:], tmp[:k])
		n += k
	}
	return n, true
}

// jsonScan walks a JSON text, checking its grammar as it goes.
type jsonScan struct {
	b     []byte
	i     int
	depth int
}

func (p *jsonScan) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonScan) peek() byte {
	p.ws()
	if p.i >= len(p.b) {
		return 0
	}
	return p.b[p.i]
}

func (p *jsonScan) eat(c byte) bool {
	if p.peek() != c {
		return false
	}
	p.i++
	return true
}

// envelope reads {"success":true, "message":..., "data":...} with any
// other keys, and returns the base64 strings of data.
func (p *jsonScan) envelope() ([]span, bool) {
	if !p.eat('{') {
		return nil, false
	}
	var spans []span
	var success, message, data bool
	for first := true; ; first = false {
		if p.eat('}') {
			if !first && p.b[p.i-2] == ',' {
				return nil, false
			}
			break
		}
		if !first && !p.eat(',') {
			return nil, false
		}
		key, ok := p.key()
		if !ok {
			return nil, false
		}
		switch string(key) {
		case "success":
			if success || !p.literal("true") {
				return nil, false
			}
			success = true
		case "message":
			// A string, or null, as encoding/json reads into a string.
			if message || !(p.peek() == '"' && p.str() || p.peek() == 'n' && p.literal("null")) {
				return nil, false
			}
			message = true
		case "data":
			if data {
				return nil, false
			}
			data = true
			if spans, ok = p.imageData(); !ok {
				return nil, false
			}
		default:
			if !p.value() {
				return nil, false
			}
		}
	}
	p.ws()
	if p.i != len(p.b) || !success || !data {
		return nil, false
	}
	return spans, true
}

// key reads an object key and its colon. A key with an escape, or one that
// matches a known key only when case is ignored (as encoding/json would
// match it), is not for the fast path.
func (p *jsonScan) key() ([]byte, bool) {
	if p.peek() != '"' {
		return nil, false
	}
	start := p.i + 1
	if !p.str() {
		return nil, false
	}
	k := p.b[start : p.i-1]
	if bytes.IndexByte(k, '\\') >= 0 {
		return nil, false
	}
	for _, known := range knownKeys {
		if string(k) != known && bytes.EqualFold(k, []byte(known)) {
			return nil, false
		}
	}
	if !p.eat(':') {
		return nil, false
	}
	return k, true
}

var knownKeys = [...]string{"success", "message", "data", "base64"}

// imageData reads data as {"base64":...}, a list of such objects, or a
// bare string.
func (p *jsonScan) imageData() ([]span, bool) {
	switch p.peek() {
	case '"':
		sp, ok := p.base64Str()
		return []span{sp}, ok
	case '{':
		sp, ok := p.imageObject()
		return []span{sp}, ok
	case '[':
		p.i++
		spans := make([]span, 0, 10)
		if p.eat(']') {
			return nil, false // no images: let encoding/json say so
		}
		for {
			sp, ok := p.imageObject()
			if !ok {
				return nil, false
			}
			spans = append(spans, sp)
			if p.eat(']') {
				return spans, true
			}
			if !p.eat(',') {
				return nil, false
			}
		}
	}
	return nil, false
}

// imageObject reads an object with one base64 string among other keys.
func (p *jsonScan) imageObject() (span, bool) {
	if !p.eat('{') {
		return span{}, false
	}
	var sp span
	found := false
	for first := true; ; first = false {
		if p.eat('}') {
			if !first && p.b[p.i-2] == ',' {
				return span{}, false
			}
			return sp, found
		}
		if !first && !p.eat(',') {
			return span{}, false
		}
		key, ok := p.key()
		if !ok {
			return span{}, false
		}
		if string(key) == "base64" {
			if found || p.peek() != '"' {
				return span{}, false
			}
			if sp, ok = p.base64Str(); !ok {
				return span{}, false
			}
			found = true
			continue
		}
		if !p.value() {
			return span{}, false
		}
	}
}

// base64Str finds a string's end quickly: base64 needs no escapes but \/.
func (p *jsonScan) base64Str() (span, bool) {
	if p.peek() != '"' {
		return span{}, false
	}
	start := p.i + 1
	q := bytes.IndexByte(p.b[start:], '"')
	if q < 0 {
		return span{}, false
	}
	end := start + q
	sp := span{start: start, end: end}
	if bytes.IndexByte(p.b[start:end], '\\') >= 0 {
		// An escaped quote would end the string later: only \/ is allowed,
		// and a backslash right before the quote means something else.
		if p.b[end-1] == '\\' {
			return span{}, false
		}
		sp.escaped = true
	}
	p.i = end + 1
	return sp, true
}

// value skips any JSON value, checking its grammar.
func (p *jsonScan) value() bool {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 512 {
		return false
	}
	switch c := p.peek(); {
	case c == '"':
		return p.str()
	case c == '{':
		p.i++
		for first := true; ; first = false {
			if p.eat('}') {
				return first || p.b[p.i-2] != ','
			}
			if !first && !p.eat(',') {
				return false
			}
			if p.peek() != '"' || !p.str() || !p.eat(':') || !p.value() {
				return false
			}
		}
	case c == '[':
		p.i++
		for first := true; ; first = false {
			if p.eat(']') {
				return first || p.b[p.i-2] != ','
			}
			if !first && !p.eat(',') {
				return false
			}
			if !p.value() {
				return false
			}
		}
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	}
	return false
}

func (p *jsonScan) literal(lit string) bool {
	p.ws()
	if !bytes.HasPrefix(p.b[p.i:], []byte(lit)) {
		return false
	}
	p.i += len(lit)
	return true
}

// str skips a string at p.i (which is a quote), checking its escapes and
// that it holds no control characters.
func (p *jsonScan) str() bool {
	p.i++
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return false
			}
			switch p.b[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.b) {
					return false
				}
				for _, h := range p.b[p.i+2 : p.i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				p.i += 6
			default:
				return false
			}
		default:
			p.i++
		}
	}
	return false
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *jsonScan) number() bool {
	b, i := p.b, p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	p.i = i
	return true
}
