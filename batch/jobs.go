package batch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/creativegen/creative-go/internal/jsonsyntax"
)

// A Job is one call to make: an operation and its fields, named as in the
// API. A Job's identity is its ID when it has one, else its operation and
// fields (a file field by the file's content) and its occurrence among
// identical jobs: reordering, inserting or deleting jobs never pays for one
// again, and an edited job is a new one.
type Job struct {
	// Op names the operation, such as "image/text-to-image".
	Op string
	// ID optionally names the job and its files: letters, digits, ".", "_"
	// and "-", starting with a letter or a digit, not digits only.
	ID string
	// Fields are the operation's fields by their API names: strings (ids
	// may be given by label, files by a path in the Runner's FS), numbers
	// (any Go number) and, for the writer's inputs, a slice.
	Fields map[string]any
	// Line is where the job was read from, for messages and file names:
	// its line in a JSON Lines file, or its place in a sequence (from 1).
	Line int
}

// A LineError reports a job that cannot run: its line, the field at fault
// (empty when the line as a whole is) and why. Nothing is sent for it.
type LineError struct {
	Line int
	// Column is where on the line a line that is no JSON object goes
	// wrong, in characters from 1; 0 when the fault has no one place.
	Column int
	Field  string
	Err    error
}

// Error says where and why.
func (e *LineError) Error() string {
	where := fmt.Sprintf("line %d: ", e.Line)
	if e.Column > 0 {
		where += fmt.Sprintf("column %d: ", e.Column)
	}
	if e.Field != "" {
		where += e.Field + ": "
	}
	return where + e.Err.Error()
}

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// A Source yields the jobs of a batch, each with the error that makes it
// unusable (a *LineError), or a final error that stops the reading (an I/O
// error). A Runner ranges over it twice: once to check every job before
// anything is sent, once to run them; a Source must yield the same jobs
// each time.
type Source = iter.Seq2[Job, error]

// maxLine bounds the length of one line of a jobs file.
const maxLine = 4 << 20

// JSONL reads jobs from a JSON Lines stream that open returns anew for each
// pass: one JSON object per line, "op" naming the operation, an optional
// "id", and the operation's fields. Blank lines are skipped, and so is a
// byte order mark at the start. A line is refused, naming it and the field,
// when it holds invalid UTF-8 or a key given twice; one that is not a JSON
// object is refused with the column where it goes wrong and what JSON
// wanted there (a trailing comma, a quote missing, single quotes, a brace
// not closed, ...).
func JSONL(open func() (io.ReadCloser, error)) Source {
	return func(yield func(Job, error) bool) {
		r, err := open()
		if err != nil {
			yield(Job{}, fmt.Errorf("batch: %w", err))
			return
		}
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), maxLine)
		line, dec := 0, jsontext.NewDecoder(bytes.NewReader(nil))
		for sc.Scan() {
			line++
			text := sc.Bytes()
			if line == 1 {
				text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf"))
			}
			raw := bytes.TrimSpace(text)
			if len(raw) == 0 {
				continue
			}
			j, err := parseLine(dec, raw)
			j.Line = line
			if err != nil {
				err = lineErrorOf(line, text, err)
			}
			if !yield(j, err) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				err = fmt.Errorf("longer than %d MiB", maxLine>>20)
			}
			yield(Job{}, fmt.Errorf("batch: line %d: %w", line+1, err))
		}
	}
}

// File reads the jobs of the JSON Lines file at path; see JSONL.
func File(path string) Source {
	return JSONL(func() (io.ReadCloser, error) { return os.Open(path) })
}

// Values yields the given jobs; a job without a Line gets its place in the
// sequence, from 1. seq is ranged over once for each pass.
func Values(seq iter.Seq[Job]) Source {
	return func(yield func(Job, error) bool) {
		n := 0
		for j := range seq {
			n++
			if j.Line == 0 {
				j.Line = n
			}
			if !yield(j, nil) {
				return
			}
		}
	}
}

// lineErrorOf is err, from parseLine on text trimmed, as a *LineError.
func lineErrorOf(line int, text []byte, err error) *LineError {
	fe := err.(*fieldError) // parseLine's every error
	le := &LineError{Line: line, Field: fe.field, Err: fe.err}
	if fe.at > 0 {
		lead := len(text) - len(bytes.TrimLeftFunc(text, unicode.IsSpace))
		le.Column = jsonsyntax.Column(text, lead+fe.at-1)
	}
	return le
}

// A fieldError is a parse error about one field, or about the line at one
// place, before the line's number is known.
type fieldError struct {
	field string
	err   error
	at    int // the byte of the line at fault, from 1; 0 for none
}

func (e *fieldError) Error() string { return e.field + ": " + e.err.Error() }

// lineOptions read a line as it is: duplicate names and invalid UTF-8 are
// found by parseLine, which names the field.
var lineOptions = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// parseLine reads one line into a Job with dec, reset to it. Numbers
// become float64, null stays nil (so that a default is not taken
// silently).
func parseLine(dec *jsontext.Decoder, raw []byte) (Job, error) {
	var j Job
	dec.Reset(bytes.NewReader(raw), lineOptions)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return j, &fieldError{err: errors.New(notAnObject)}
	}
	j.Fields = map[string]any{}
	var op, id bool // given
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return j, syntaxError(raw)
		}
		name := tok.String()
		_, twice := j.Fields[name]
		switch name {
		case "op":
			twice, op = op, true
		case "id":
			twice, id = id, true
		}
		if twice {
			return j, &fieldError{field: name, err: errors.New("given twice (which one was meant?)")}
		}
		val, err := dec.ReadValue()
		if err != nil {
			return j, syntaxError(raw)
		}
		if !utf8.Valid(val) {
			return j, &fieldError{field: name, err: errors.New("holds invalid UTF-8")}
		}
		if bytes.Contains(val, []byte(`\u`)) && !val.IsValid(jsontext.AllowDuplicateNames(true)) {
			return j, &fieldError{field: name, err: errLoneSurrogate}
		}
		if err := j.set(name, val); err != nil {
			return j, &fieldError{field: name, err: err}
		}
	}
	if err := lineEnd(dec, raw); err != nil {
		return j, err
	}
	// Every value passed; a key can still hold invalid UTF-8 or a bad
	// escape, which its token read as U+FFFD.
	if !utf8.Valid(raw) {
		return j, &fieldError{err: errors.New("a key holds invalid UTF-8")}
	}
	if bytes.Contains(raw, []byte(`\u`)) && !jsontext.Value(raw).IsValid(jsontext.AllowDuplicateNames(true)) {
		return j, &fieldError{err: errors.New("a key " + errLoneSurrogate.Error())}
	}
	return j, nil
}

// lineEnd reads the end of the object and checks that nothing follows it.
func lineEnd(dec *jsontext.Decoder, raw []byte) *fieldError {
	if _, err := dec.ReadToken(); err != nil {
		return syntaxError(raw)
	}
	end := int(dec.InputOffset())
	switch _, err := dec.ReadToken(); {
	case err == nil:
		return &fieldError{err: errors.New("more than one JSON value on the line"), at: len(raw) - len(bytes.TrimLeft(raw[end:], " \t\r\n")) + 1}
	case err != io.EOF:
		return syntaxError(raw)
	}
	return nil
}

// errLoneSurrogate refuses an escape such as \ud800 that names half of a
// UTF-16 pair: no character, so no text the service could be sent.
var errLoneSurrogate = errors.New(`holds an escape that is no character (a lone UTF-16 surrogate such as \ud800)`)

// set stores one member of a line.
func (j *Job) set(name string, val jsontext.Value) error {
	switch name {
	case "op", "id":
		dst := &j.Op
		if name == "id" {
			dst = &j.ID
		}
		if val.Kind() != '"' || json.Unmarshal(val, dst) != nil {
			return errors.New("must be a string")
		}
		return nil
	}
	v, plain := plainString(val)
	if !plain {
		if err := json.Unmarshal(val, &v); err != nil {
			if val.Kind() == '0' {
				return errors.New("not a number that fits")
			}
			return fmt.Errorf("cannot be read: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	j.Fields[name] = v
	return nil
}

// plainString is val, a JSON string without escapes (its UTF-8 checked),
// as Go reads it.
func plainString(val jsontext.Value) (any, bool) {
	if val.Kind() != '"' || bytes.IndexByte(val, '\\') >= 0 {
		return nil, false
	}
	return string(val[1 : len(val)-1]), true
}

// notAnObject refuses a line that holds something else than a job.
const notAnObject = `not a JSON object: a job is one object per line, such as {"op":"image/text-to-image","prompt":"a fox"}`

// syntaxError is raw, a line that starts an object and is no JSON, as a
// fieldError that says where, what JSON expected there, and shows it.
func syntaxError(raw []byte) *fieldError {
	off, what, ok := jsonsyntax.Describe(raw)
	if !ok {
		return &fieldError{err: errors.New(notAnObject)}
	}
	return &fieldError{err: errors.New(what + ": " + jsonsyntax.Excerpt(raw, off)), at: off + 1}
}
