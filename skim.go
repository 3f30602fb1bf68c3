package creative

import (
	"bytes"
	"errors"
	"strconv"
	"unicode/utf8"
)

// An image answer is almost all base64: megabytes of one string that the
// JSON walk would scan byte by byte only to hand it to the base64 decoder,
// which reads it again. Skimming walks a skeleton of the body instead, in
// which every long string without escapes is a placeholder; the data decoder
// reads the string itself from the body and decodes it in place, so its
// bytes are read once, by the SIMD decoder. A long string no decoder takes
// is checked after the walk, so the walk accepts no body the whole walk
// would refuse.

// skimMin is the length from which a string is left out of the skeleton.
const skimMin = 4 << 10

// placeholder opens a left-out string in the skeleton, followed by its
// index: U+0000 then '#', which no base64 holds.
const placeholder = `\u0000#`

// A longString is a string of the body left out of the skeleton: its text
// is body[start:end], between the quotes.
type longString struct {
	start, end int
	taken      bool // a data decoder read it
}

// skim returns the skeleton of body, with the left-out strings in bd.long,
// or body itself when nothing is left out.
func (bd *bodyDecoder) skim(body []byte) []byte {
	bd.body, bd.long = body, bd.long[:0]
	skel, last := bd.skel[:0], 0
	for i := 0; ; {
		q := bytes.IndexByte(body[i:], '"')
		if q < 0 {
			break
		}
		start := i + q + 1
		end, escaped := closingQuote(body, start)
		if end < 0 {
			break
		}
		i = end + 1
		if end-start < skimMin || bytes.HasPrefix(body[start:], []byte("data:")) ||
			escaped || isName(body[end+1:]) {
			continue
		}
		if bytes.Contains(body[last:start], []byte(placeholder)) {
			// A string of the body looks like a placeholder: walk it whole.
			bd.long = bd.long[:0]
			return body
		}
		skel = append(skel, body[last:start]...)
		skel = append(skel, placeholder...)
		skel = strconv.AppendInt(skel, int64(len(bd.long)), 10)
		bd.long = append(bd.long, longString{start: start, end: end})
		last = end
	}
	if len(bd.long) == 0 || bytes.Contains(body[last:], []byte(placeholder)) {
		bd.long = bd.long[:0]
		return body
	}
	skel = append(skel, body[last:]...)
	bd.skel = skel
	return skel
}

// isName reports whether the string that rest follows is an object's member
// name: the walk must see names whole, to refuse duplicates.
func isName(rest []byte) bool {
	rest = bytes.TrimLeft(rest, " \t\r\n")
	return len(rest) > 0 && rest[0] == ':'
}

// scanWindow is how much of a string closingQuote looks through at a time:
// its search for a backslash reads again what its search for the quote
// just read, while it is still in the cache.
const scanWindow = 16 << 10

// closingQuote returns the index of the quote that closes the string whose
// text starts at start, or -1, and whether the text holds a backslash.
func closingQuote(body []byte, start int) (int, bool) {
	escaped := false
	for k := start; k < len(body); {
		w := body[k:min(k+scanWindow, len(body))]
		q := bytes.IndexByte(w, '"')
		if q < 0 {
			escaped = escaped || bytes.IndexByte(w, '\\') >= 0
			k += len(w)
			continue
		}
		escaped = escaped || bytes.IndexByte(w[:q], '\\') >= 0
		q += k
		slashes := 0
		for j := q - 1; escaped && j >= start && body[j] == '\\'; j-- {
			slashes++
		}
		if slashes%2 == 0 {
			return q, escaped
		}
		k = q + 1
	}
	return -1, escaped
}

// longString reports whether raw, a value the walk read, is a placeholder,
// and which string of the body it stands for. With take, the caller checks
// the string itself, and checkLeftOut passes it over.
func (bd *bodyDecoder) longString(raw []byte, take bool) (longString, bool) {
	if len(bd.long) == 0 || len(raw) < len(placeholder)+3 || !bytes.HasPrefix(raw[1:], []byte(placeholder)) {
		return longString{}, false
	}
	i, err := strconv.Atoi(string(raw[1+len(placeholder) : len(raw)-1]))
	if err != nil || i < 0 || i >= len(bd.long) {
		return longString{}, false
	}
	if take && !bd.long[i].taken {
		bd.long[i].taken = true
		bd.taken++
	}
	return bd.long[i], true
}

// errControl is the error of a string of the body that JSON does not allow.
var errControl = errors.New("a string holds a control character or invalid UTF-8")

// checkLeftOut checks, after a walk that succeeded, the left-out strings no
// data decoder took (a decoder checks those it takes): they must be JSON
// strings as the whole walk would have read them.
func (bd *bodyDecoder) checkLeftOut() error {
	if bd.taken == len(bd.long) {
		return nil
	}
	for _, ls := range bd.long {
		if ls.taken {
			continue
		}
		text := bd.body[ls.start:ls.end]
		if bytes.ContainsFunc(text, func(r rune) bool { return r < ' ' }) || !utf8.Valid(text) {
			return &envelopeError{msg: "not valid JSON: " + errControl.Error()}
		}
	}
	return nil
}
