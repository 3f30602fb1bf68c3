package batch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// A syntax problem of a line is said in a jobs file's words: where it is
// (a byte offset, turned into a column by JSONL) and what JSON expected
// there. The decoder's error gives the offset; the words come from the
// bytes around it, read by a scanner that knows where in an object or an
// array that offset is.

// exampleJob shows what a line holds, for messages about lines that hold
// something else.
const exampleJob = `{"op":"image/text-to-image","prompt":"a fox"}`

// Where the scanner is, in the innermost object or array.
const (
	wantName  = iota // after "{" or a "," in an object
	wantColon        // after a member's name
	wantValue        // after a ":", or "[" or a "," in an array
	gotValue         // after a value: a "," or the closing bracket may come
)

// A frame is an object or an array the scanner is in.
type frame struct {
	bracket byte // '{' or '['
	state   int
}

// A scan is where a line's bytes up to some offset leave the scanner. The
// bytes are valid JSON as far as they go (the decoder read them), so the
// scanner need not check them.
type scan struct {
	stack []frame
	str   int  // where the string open at the end starts, or -1
	prev  byte // the last byte that is no space, or 0
	ended bool // the outermost object was closed
}

func scanTo(raw []byte, off int) scan {
	s := scan{str: -1}
	for i := 0; i < off; i++ {
		if s.str >= 0 {
			i = s.inString(raw, i)
		} else {
			i = s.step(raw, i, off)
		}
	}
	return s
}

// inString moves past raw[i], in a string, and returns the offset of the
// last byte it read.
func (s *scan) inString(raw []byte, i int) int {
	switch raw[i] {
	case '\\':
		i++
	case '"':
		s.str = -1
		s.value()
	}
	s.prev = raw[i]
	return i
}

// step moves past raw[i], outside strings, and returns the offset of the
// last byte it read: a word (a number or a literal) is read whole, up to
// off.
func (s *scan) step(raw []byte, i, off int) int {
	c := raw[i]
	switch c {
	case ' ', '\t', '\r', '\n':
		return i
	case '"':
		s.str = i
	case '{':
		s.stack = append(s.stack, frame{c, wantName})
	case '[':
		s.stack = append(s.stack, frame{c, wantValue})
	case '}', ']':
		s.stack = s.stack[:len(s.stack)-1]
		s.ended = len(s.stack) == 0
		s.value()
	case ':':
		s.top().state = wantValue
	case ',':
		s.top().state = wantValue
		if s.top().bracket == '{' {
			s.top().state = wantName
		}
	default:
		j := i + 1
		for j < off && isWordByte(raw[j]) {
			j++
		}
		// One that off cuts short is a value only when it is whole.
		if j < off || jsontext.Value(raw[i:j]).IsValid() {
			s.value()
		}
		i = j - 1
	}
	s.prev = raw[i]
	return i
}

// top is the innermost frame, or a frame that is none when there is none.
func (s *scan) top() *frame {
	if len(s.stack) == 0 {
		return &frame{}
	}
	return &s.stack[len(s.stack)-1]
}

// value moves past a value, or past a name when a name was wanted.
func (s *scan) value() {
	if t := s.top(); t.state == wantName {
		t.state = wantColon
	} else {
		t.state = gotValue
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c == '+' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// syntaxProblem says what is wrong with raw, a line the decoder failed on
// with err, and where: a byte offset into raw, or -1 when the line as a
// whole is not an object.
func syntaxProblem(raw []byte, err error) (int, string) {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return -1, "not a JSON object: a job is one object per line, such as " + exampleJob
	}
	off := int(min(max(se.ByteOffset, 0), int64(len(raw))))
	if off == len(raw) || errors.Is(se.Err, io.ErrUnexpectedEOF) {
		return endProblem(raw)
	}
	s := scanTo(raw, off)
	if s.str >= 0 {
		return stringProblem(raw, off)
	}
	if s.top().state == gotValue && raw[off] == ',' {
		// The decoder stops at a comma when what follows it is wrong.
		next := skipSpace(raw, off+1)
		if next == len(raw) {
			return next, `the line ends after a comma: a member, or "}", is missing`
		}
		if raw[next] == '}' || raw[next] == ']' {
			return off, fmt.Sprintf("a trailing comma before %q (JSON allows none)", string(raw[next]))
		}
		s = scanTo(raw, next)
		off = next
	}
	return placeProblem(raw, off, s)
}

// placeProblem says what is wrong at raw[off], where the scan s leaves off.
func placeProblem(raw []byte, off int, s scan) (int, string) {
	c := raw[off]
	switch {
	case s.ended && c == '}':
		return off, `an extra "}" after the end of the object`
	case s.ended:
		return off, "more than one JSON value on the line"
	case len(s.stack) == 0:
		return -1, "not a JSON object: a job is one object per line, such as " + exampleJob
	case c == ',' || c == '}' || c == ']':
		if at, msg := commaProblem(raw, off, s); msg != "" {
			return at, msg
		}
	case c == '\'':
		return off, `a single quote: JSON takes double quotes (") around names and text`
	}
	return memberProblem(raw, off, s)
}

// commaProblem says what is wrong with a comma at raw[off], or before the
// bracket there; "" when nothing is.
func commaProblem(raw []byte, off int, s scan) (int, string) {
	c := raw[off]
	switch {
	case c != ',' && s.prev == ',':
		return lastByte(raw, off, ','), fmt.Sprintf("a trailing comma before %q (JSON allows none)", string(c))
	case c == ',' && (s.prev == ',' || s.prev == '{' || s.prev == '['):
		return off, "a comma with nothing before it"
	}
	return 0, ""
}

// nameProblem says what is wrong at raw[off], where a name belongs.
func nameProblem(raw []byte, off int) (int, string) {
	if isWordByte(raw[off]) {
		return off, fmt.Sprintf("a name without quotes: write %q", wordAt(raw, off))
	}
	return off, fmt.Sprintf(`%q where a name in double quotes belongs`, string(raw[off]))
}

// memberProblem says what is wrong at raw[off], where a name, a colon, a
// value or what follows one belongs.
func memberProblem(raw []byte, off int, s scan) (int, string) {
	c := raw[off]
	t := s.top()
	switch {
	case t.state == wantName:
		return nameProblem(raw, off)
	case t.state == wantColon:
		return off, `a ":" is missing after the name`
	case t.state == wantValue, isWordByte(c) && off > 0 && isWordByte(raw[off-1]):
		// A value, or a word the decoder cut after a whole value ("01").
		return valueProblem(raw, off, s)
	case c == '"' || c == '{' || c == '[' || isWordByte(c):
		return off, `a comma is missing before this`
	}
	return off, fmt.Sprintf("%q where a comma or %q belongs", string(c), closing(t.bracket))
}

// valueProblem says what is wrong at raw[off], where a value belongs.
func valueProblem(raw []byte, off int, s scan) (int, string) {
	c := raw[off]
	if isWordByte(raw[off]) || off > 0 && isWordByte(raw[off-1]) {
		start := off
		for start > 0 && isWordByte(raw[start-1]) {
			start--
		}
		word := wordAt(raw, start)
		switch strings.ToLower(word) {
		case "true", "false", "null":
			return start, fmt.Sprintf("%s is no JSON value: write %s, in lower case", word, strings.ToLower(word))
		}
		if strings.HasPrefix(word, "0") && len(word) > 1 && word[1] != '.' {
			return start, fmt.Sprintf("%s is no JSON number: a number does not start with 0", word)
		}
		return start, fmt.Sprintf("%s is no JSON value: text takes double quotes, %q (the bare words are true, false and null)", word, word)
	}
	if s.prev == ':' {
		return off, "a value is missing after the colon"
	}
	return off, fmt.Sprintf("%q where a value belongs", string(c))
}

// stringProblem says what is wrong at raw[off], inside a string.
func stringProblem(raw []byte, off int) (int, string) {
	switch c := raw[off]; {
	case c == '\t':
		return off, `a tab inside a string: write \t`
	case c < 0x20:
		return off, fmt.Sprintf(`a control character inside a string: write \u%04x`, c)
	case c == '\\' && off+1 < len(raw):
		return off, fmt.Sprintf(`an escape JSON does not know, \%c: write \\ for a backslash`, raw[off+1])
	}
	return off, "this string cannot be read"
}

// endProblem says what is missing from a line that ends too soon.
func endProblem(raw []byte) (int, string) {
	s := scanTo(raw, len(raw))
	switch {
	case s.str >= 0:
		return s.str, `this string is not closed: a closing " is missing`
	case s.prev == ',':
		return len(raw), fmt.Sprintf("the line ends after a comma: a member, or %q, is missing", closing(s.top().bracket))
	case s.prev == ':':
		return len(raw), "the line ends after a colon: a value is missing"
	}
	var missing string
	for i := len(s.stack) - 1; i >= 0; i-- {
		missing += closing(s.stack[i].bracket)
	}
	return len(raw), fmt.Sprintf("the line ends before the object is closed: %q is missing", missing)
}

// closing is the bracket that closes bracket.
func closing(bracket byte) string {
	if bracket == '[' {
		return "]"
	}
	return "}"
}

// skipSpace returns the offset of the first byte from i that is no space.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) && bytes.IndexByte([]byte(" \t\r\n"), raw[i]) >= 0 {
		i++
	}
	return i
}

// lastByte returns the offset of the last c before off.
func lastByte(raw []byte, off int, c byte) int {
	if i := bytes.LastIndexByte(raw[:off], c); i >= 0 {
		return i
	}
	return off
}

// wordAt returns the bare word that starts at raw[i].
func wordAt(raw []byte, i int) string {
	j := i
	for j < len(raw) && isWordByte(raw[j]) {
		j++
	}
	return string(raw[i:j])
}

// excerpt shows the part of raw around off, at most 24 characters before
// it and 12 from it, "..." marking a cut.
func excerpt(raw []byte, off int) string {
	start, end := off, off
	for n := 0; start > 0 && n < 24; n++ {
		_, size := utf8.DecodeLastRune(raw[:start])
		start -= size
	}
	for n := 0; end < len(raw) && n < 12; n++ {
		_, size := utf8.DecodeRune(raw[end:])
		end += size
	}
	text := strings.ToValidUTF8(string(raw[start:end]), "\uFFFD")
	if start > 0 {
		text = "..." + text
	}
	if end < len(raw) {
		text += "..."
	}
	return text
}
