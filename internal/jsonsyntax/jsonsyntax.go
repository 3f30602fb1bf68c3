// Package jsonsyntax says where a line of JSON that a person wrote stops
// being JSON, and what JSON expected there, in words a person can act on:
// a line of a jobs file, a flag that takes JSON. A decoder that reads the
// line again token by token stops at the fault, knowing the objects and
// arrays open there and how many names and values the innermost holds; the
// words come from the bytes around it.
package jsonsyntax

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Describe reads raw again and returns the byte where it stops being JSON
// and what is wrong there; ok is false when raw holds one JSON value and
// nothing else but spaces, or nothing but spaces. Duplicate names and
// invalid UTF-8 are not its business: it reads past them.
func Describe(raw []byte) (off int, what string, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var err error
	for err == nil {
		// The decoder reads a stream of values; a line holds one.
		if _, err = dec.ReadToken(); err == nil && dec.StackDepth() == 0 {
			break
		}
	}
	s := stop{raw: raw, last: int(dec.InputOffset())}
	var se *jsontext.SyntacticError
	switch {
	case err == nil:
		// One whole value: whatever follows it is a second, or a word the
		// decoder cut after a number ("01").
		if s.off = skipSpace(raw, s.last); s.off == len(raw) {
			return 0, "", false
		}
	case errors.As(err, &se):
		s.off = int(min(max(se.ByteOffset, 0), int64(len(raw))))
	default:
		return 0, "", false
	}
	for i := range dec.StackDepth() {
		k, n := dec.StackIndex(i + 1)
		s.open, s.top, s.length = append(s.open, byte(k)), byte(k), n
	}
	off, what = s.problem(se != nil && errors.Is(se.Err, io.ErrUnexpectedEOF))
	return off, what, true
}

// Column is the column of the byte off of raw: the characters before it,
// plus one.
func Column(raw []byte, off int) int { return len([]rune(string(raw[:off]))) + 1 }

// What the innermost object or array wants where the decoder stopped.
const (
	wantName = iota
	wantColon
	wantValue
	gotValue // a comma or the closing bracket may come
)

// A stop is where a decoder reading a line token by token meets its first
// syntax error.
type stop struct {
	raw    []byte
	off    int    // the byte at fault
	last   int    // where the last token read ends
	open   []byte // the brackets open, outermost first
	top    byte   // the innermost of them, or 0
	length int64  // the names and values the innermost holds
	prev   byte   // the comma or colon after the last token, else its last byte
}

// problem says what is wrong at the stop, and at which byte of the line.
func (s *stop) problem(eof bool) (int, string) {
	raw := s.raw
	if eof || s.off == len(raw) {
		return s.endProblem()
	}
	switch {
	case bytes.IndexByte(raw[s.last:s.off], '"') >= 0:
		return stringProblem(raw, s.off)
	case len(s.open) == 0 && s.last == 0:
		return s.firstProblem()
	case len(s.open) == 0 && isWordByte(raw[s.off]) && isWordByte(raw[s.off-1]):
		return s.valueProblem()
	case len(s.open) == 0 && raw[s.off] == '}':
		return s.off, `an extra "}" after the end of the object`
	case len(s.open) == 0:
		return s.off, "more than one JSON value on the line"
	}
	s.prev = lastByte(raw[:s.last])
	if next := skipSpace(raw, s.last); next < s.off && (raw[next] == ',' || raw[next] == ':') {
		s.prev = raw[next]
	}
	for raw[s.off] != '\'' && s.off > s.last && isWordByte(raw[s.off-1]) {
		s.off-- // the decoder faults a bare word where it stops reading it
	}
	return s.placeProblem()
}

// firstProblem says what is wrong at the stop, in the line's first value
// and outside brackets: the decoder read nothing before it.
func (s *stop) firstProblem() (int, string) {
	for s.off > 0 && isWordByte(s.raw[s.off-1]) {
		s.off--
	}
	switch s.raw[s.off] {
	case ',':
		return s.off, "a comma with nothing before it"
	case '\'':
		return s.off, `a single quote: JSON takes double quotes (") around names and text`
	}
	return s.valueProblem()
}

// placeProblem says what is wrong at the stop, outside strings.
func (s *stop) placeProblem() (int, string) {
	switch c := s.raw[s.off]; {
	case c == ',' && s.state() == gotValue:
		// The decoder stops at a comma after a value when a closing
		// bracket follows it.
		return s.off, fmt.Sprintf("a trailing comma before %q (JSON allows none)", string(s.raw[skipSpace(s.raw, s.off+1)]))
	case c == ',' && (s.prev == ',' || s.prev == '{' || s.prev == '['):
		return s.off, "a comma with nothing before it"
	case c == '\'':
		return s.off, `a single quote: JSON takes double quotes (") around names and text`
	}
	return s.memberProblem()
}

// state says what the innermost object or array wants at the stop.
func (s *stop) state() int {
	inObject, afterName := s.top == '{', s.length%2 == 1
	switch {
	case inObject && afterName && s.prev == ':', !inObject && (s.prev == '[' || s.prev == ','):
		return wantValue
	case inObject && afterName:
		return wantColon
	case inObject && (s.prev == '{' || s.prev == ','):
		return wantName
	}
	return gotValue
}

// memberProblem says what is wrong at the stop, where a name, a colon, a
// value or what follows one belongs.
func (s *stop) memberProblem() (int, string) {
	raw, off, state := s.raw, s.off, s.state()
	c := raw[off]
	switch {
	case state == wantName && isWordByte(c):
		return off, fmt.Sprintf("a name without quotes: write %q", wordAt(raw, off))
	case state == wantName:
		return off, fmt.Sprintf(`%q where a name in double quotes belongs`, string(c))
	case state == wantColon:
		return off, `a ":" is missing after the name`
	case state == wantValue, isWordByte(c) && off > 0 && isWordByte(raw[off-1]):
		// A value, or a word the decoder cut after a whole value ("01").
		return s.valueProblem()
	case c == '"' || c == '{' || c == '[' || isWordByte(c):
		return off, `a comma is missing before this`
	}
	return off, fmt.Sprintf("%q where a comma or %q belongs", string(c), closing(s.top))
}

// valueProblem says what is wrong at the stop, where a value belongs.
func (s *stop) valueProblem() (int, string) {
	raw, off := s.raw, s.off
	if !isWordByte(raw[off]) && (off == 0 || !isWordByte(raw[off-1])) {
		if s.prev == ':' {
			return off, "a value is missing after the colon"
		}
		return off, fmt.Sprintf("%q where a value belongs", string(raw[off]))
	}
	for off > 0 && isWordByte(raw[off-1]) {
		off--
	}
	word := wordAt(raw, off)
	switch lower := strings.ToLower(word); {
	case lower == "true" || lower == "false" || lower == "null":
		return off, fmt.Sprintf("%s is no JSON value: write %s, in lower case", word, lower)
	case strings.HasPrefix(word, "0") && len(word) > 1 && word[1] != '.':
		return off, fmt.Sprintf("%s is no JSON number: a number does not start with 0", word)
	case numberProblem(word) != "":
		return off, fmt.Sprintf("%s is no JSON number: %s", word, numberProblem(word))
	}
	return off, fmt.Sprintf("%s is no JSON value: text takes double quotes, %q (the bare words are true, false and null)", word, word)
}

// numberProblem says why word, which the decoder stopped in, is no JSON
// number, or returns "" when word does not start like one, or is one with
// more after it ("1.5.3", "12px"): text in want of quotes.
func numberProblem(word string) string {
	i := 0
	if word == "" {
		return ""
	}
	if word[0] == '-' || word[0] == '+' {
		i = 1
	}
	switch {
	case word == "-":
		return "a lone minus, with no digits after it"
	case i < len(word) && word[i] == '.' && i+1 < len(word) && isDigit(word[i+1]):
		if word[0] == '+' {
			return "a number takes no plus sign"
		}
		return "a digit must come before the point"
	case i == len(word) || !isDigit(word[i]):
		return ""
	case word[0] == '+':
		return "a number takes no plus sign"
	case word[i] == '0' && i+1 < len(word) && isDigit(word[i+1]):
		return "a number does not start with 0"
	}
	i = digitsEnd(word, i)
	if i < len(word) && word[i] == '.' {
		if i+1 == len(word) || !isDigit(word[i+1]) {
			return "digits must follow the point"
		}
		i = digitsEnd(word, i+1)
	}
	if i < len(word) && (word[i] == 'e' || word[i] == 'E') {
		if i++; i < len(word) && (word[i] == '+' || word[i] == '-') {
			i++
		}
		if i == len(word) || !isDigit(word[i]) {
			return "the exponent needs digits"
		}
	}
	return ""
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digitsEnd returns the offset of the first byte from i of word that is no
// digit.
func digitsEnd(word string, i int) int {
	for i < len(word) && isDigit(word[i]) {
		i++
	}
	return i
}

// stringProblem says what is wrong at raw[off], inside a string.
func stringProblem(raw []byte, off int) (int, string) {
	switch c := raw[off]; {
	case c == '\t':
		return off, `a tab inside a string: write \t`
	case c < 0x20:
		return off, fmt.Sprintf(`a control character inside a string: write \u%04x`, c)
	case c == '\\' && off+1 < len(raw) && raw[off+1] == 'u' && hexDigits(raw[off+2:]) < 4:
		return off, `a \u escape needs four hexadecimal digits, as in \u00e9`
	case c == '\\' && off+1 < len(raw):
		return off, fmt.Sprintf(`an escape JSON does not know, \%c: write \\ for a backslash`, raw[off+1])
	}
	return off, "this string cannot be read"
}

// hexDigits counts the hexadecimal digits b starts with, up to 4.
func hexDigits(b []byte) int {
	n := 0
	for n < min(len(b), 4) && strings.IndexByte("0123456789abcdefABCDEF", b[n]) >= 0 {
		n++
	}
	return n
}

// endProblem says what is missing from a line that ends too soon.
func (s *stop) endProblem() (int, string) {
	raw := s.raw
	if q := bytes.IndexByte(raw[s.last:], '"'); q >= 0 {
		return s.last + q, `this string is not closed: a closing " is missing`
	}
	// A line that ends in a number cut short ("[1.") or in its one bare
	// value ("tru") has that word at fault.
	if end := len(bytes.TrimRight(raw, " \t\r\n")); end > 0 && isWordByte(raw[end-1]) {
		start := end
		for start > s.last && isWordByte(raw[start-1]) {
			start--
		}
		if start < end && (len(s.open) == 0 || numberProblem(string(raw[start:end])) != "") {
			s.off = start
			return s.valueProblem()
		}
	}
	switch lastByte(raw) {
	case ',':
		return len(raw), fmt.Sprintf("the line ends after a comma: a member, or %q, is missing", closing(s.top))
	case ':':
		return len(raw), "the line ends after a colon: a value is missing"
	}
	var missing string
	for _, b := range slices.Backward(s.open) {
		missing += closing(b)
	}
	outer := "object"
	if len(s.open) > 0 && s.open[0] == '[' {
		outer = "array"
	}
	return len(raw), fmt.Sprintf("the line ends before the %s is closed: %q is missing", outer, missing)
}

// closing is the bracket that closes bracket, two code points on.
func closing(bracket byte) string { return string(rune(bracket + 2)) }

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c == '+' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// skipSpace returns the offset of the first byte from i that is no space.
func skipSpace(raw []byte, i int) int { return len(raw) - len(bytes.TrimLeft(raw[i:], " \t\r\n")) }

// lastByte is the last byte of b that is no space, or 0.
func lastByte(b []byte) byte {
	if b = bytes.TrimRight(b, " \t\r\n"); len(b) > 0 {
		return b[len(b)-1]
	}
	return 0
}

// wordAt returns the bare word that starts at raw[i].
func wordAt(raw []byte, i int) string {
	j := i
	for j < len(raw) && isWordByte(raw[j]) {
		j++
	}
	return string(raw[i:j])
}

// Excerpt shows the part of raw around off, at most 24 characters before
// it and 12 from it, "..." marking a cut.
func Excerpt(raw []byte, off int) string {
	before, after := []rune(string(raw[:off])), []rune(string(raw[off:]))
	text := string(before[max(len(before)-24, 0):]) + string(after[:min(len(after), 12)])
	if len(before) > 24 {
		text = "..." + text
	}
	if len(after) > 12 {
		text += "..."
	}
	return text
}
