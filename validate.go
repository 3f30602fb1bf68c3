package creative

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/go-querystring/query"

	"github.com/creativegen/creative-go/ids"
)

// A checker validates one request before anything is sent and keeps the
// first failure as a *ValidationError.
type checker struct {
	op    string
	first *ValidationError
}

func (v *checker) fail(field, rule, value string) { v.failErr(field, rule, value, nil) }

// failErr is fail with the cause, which the error unwraps to.
func (v *checker) failErr(field, rule, value string, cause error) {
	if v.first == nil {
		v.first = &ValidationError{Operation: v.op, Field: field, Rule: rule, Value: value, Err: cause}
	}
}

// err returns the first failure, or nil.
func (v *checker) err() error {
	if v.first == nil {
		return nil
	}
	return v.first
}

// text requires a string of valid UTF-8 (encoding/json would send other
// bytes as U+FFFD, a text the user did not write) that is not blank: a
// prompt of spaces alone would be paid for and answered with nothing the
// user asked for.
func (v *checker) text(field, s string) {
	switch {
	case s == "":
		v.fail(field, "is required", "")
	case strings.TrimSpace(s) == "":
		v.fail(field, "must not be blank", quoteShort(s))
	case !utf8.ValidString(s):
		v.fail(field, "must be valid UTF-8 text", quoteShort(s))
	}
}

// quoteShort quotes s for an error message, cut to its first 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}

// count requires lo <= n <= hi, or 0: a count left at 0 is its default
// (see ops.OrDefault).
func (v *checker) count(field string, n, lo, hi int) {
	if n == 0 {
		return
	}
	if n < lo || n > hi {
		if hi == maxInt {
			v.fail(field, fmt.Sprintf("must be at least %d", lo), strconv.Itoa(n))
			return
		}
		v.fail(field, fmt.Sprintf("must be between %d and %d", lo, hi), strconv.Itoa(n))
	}
}

// positive requires an optional number to be unset (0) or above zero.
func (v *checker) positive(field string, f float64) {
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		v.fail(field, "must be a positive number", strconv.FormatFloat(f, 'g', -1, 64))
	}
}

// id requires an id shaped as ids.IsID wants it (24 lower-case hexadecimal
// characters, the rule the fake service and the generator share); an
// optional one may be empty. Membership in today's lists is not checked: the
// service may add ids.
func (v *checker) id(field, s string, required bool) {
	if s == "" {
		if required {
			v.fail(field, "is required", "")
		}
		return
	}
	if !ids.IsID(s) {
		v.fail(field, "must be an id of 24 lower-case hexadecimal characters", strconv.Quote(s))
	}
}

const maxInt = int(^uint(0) >> 1)

// link requires an absolute http or https URL with a host and, if it has
// one, a port from 1 to 65535.
func (v *checker) link(field, s string) {
	if s == "" {
		v.fail(field, "is required", "")
		return
	}
	if !utf8.ValidString(s) {
		v.fail(field, "must be valid UTF-8 text", quoteShort(s))
		return
	}
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
		v.fail(field, "must be an absolute http or https URL", quoteShort(s))
		return
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			v.fail(field, "must have a port from 1 to 65535", quoteShort(s))
		}
	}
}

// A checkedFile is an upload as a call's validation found it: the facts
// the form declares and every attempt must match.
type checkedFile struct {
	field string
	file  File
	info  fileInfo
}

// upload requires a readable, non-empty file and returns what it is.
func (v *checker) upload(field string, f File) checkedFile {
	info, _ := v.inspect(field, f)
	return checkedFile{field: field, file: f, info: info}
}

func (v *checker) inspect(field string, f File) (fileInfo, bool) {
	if f.src == nil {
		v.fail(field, "is required", "")
		return fileInfo{}, false
	}
	info, err := f.inspect()
	if err != nil {
		v.failErr(field, readRule(err), "", err)
		return info, false
	}
	if info.size == 0 {
		v.fail(field, "is empty", "")
		return info, false
	}
	return info, true
}

// image requires a PNG, JPEG or WebP upload (by its first bytes, not its
// name) and, when maxSide > 0, width and height of at most maxSide pixels;
// it returns what the upload is.
func (v *checker) image(field string, f File, maxSide int) checkedFile {
	info, ok := v.inspect(field, f)
	up := checkedFile{field: field, file: f, info: info}
	if !ok {
		return up
	}
	switch info.contentType {
	case "image/png", "image/jpeg", "image/webp":
	default:
		v.fail(field, "must be a PNG, JPEG or WebP image", info.contentType)
		return up
	}
	if maxSide > 0 {
		if info.width == 0 || info.height == 0 {
			v.fail(field, "must have a readable image header (width and height)", info.contentType)
		} else if info.width > maxSide || info.height > maxSide {
			v.fail(field, fmt.Sprintf("must be at most %dx%d pixels", maxSide, maxSide), fmt.Sprintf("%dx%d", info.width, info.height))
		}
	}
	return up
}

// form lays out a multipart body: the text fields of req (its `url` tags,
// through go-querystring) and the file part up, declaring what the call's
// validation found the file to be.
func form(op string, req any, up checkedFile) (*multipartBody, error) {
	fields, err := query.Values(req)
	if err != nil {
		return nil, fmt.Errorf("creative: %s: encoding the form: %w", op, err)
	}
	return newMultipart(op, fields, up.field, up.file, up.info)
}

// writerInputs checks the writer tool's inputs: each must encode as JSON,
// with valid UTF-8 text, and for cover letters be an object (a
// CoverLetterInput, a map or a struct that encodes like one) whose jobRole
// and jobSkills are non-empty strings.
func (v *checker) writerInputs(useCase UseCase, inputs []any) {
	if len(inputs) == 0 {
		v.fail("inputs", "must hold at least one input", "")
	}
	for i, in := range inputs {
		field := fmt.Sprintf("inputs[%d]", i)
		b, err := json.Marshal(in)
		switch {
		case err != nil:
			v.failErr(field, "cannot be encoded as JSON: "+err.Error(), fmt.Sprintf("%T", in), err)
			continue
		case string(b) == "null":
			v.fail(field, "must not be null", "")
			continue
		}
		if useCase == UseCaseCoverLetter || isCoverLetterInput(in) {
			v.coverLetterInput(field, in, b)
		}
		if !utf8.Valid(b) || replacedUTF8(b) {
			v.fail(field, "must hold only valid UTF-8 text", "")
		}
	}
}

// coverLetterInput checks the JSON b of a cover letter's input: an object
// whose jobRole and jobSkills are non-empty strings of valid UTF-8.
func (v *checker) coverLetterInput(field string, in any, b []byte) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		v.fail(field, "must be a CoverLetterInput with jobRole and jobSkills for useCase CoverLetter", fmt.Sprintf("%T", in))
		return
	}
	for _, key := range []string{"jobRole", "jobSkills"} {
		var s string
		raw, ok := obj[key]
		switch {
		case !ok || string(raw) == `""` || string(raw) == "null":
			v.fail(field+"."+key, "is required", "")
		case json.Unmarshal(raw, &s) != nil:
			v.fail(field+"."+key, "must be a string", string(raw))
		case replacedUTF8(raw):
			v.fail(field+"."+key, "must be valid UTF-8 text", "")
		}
	}
}

func isCoverLetterInput(in any) bool {
	switch in.(type) {
	case CoverLetterInput, *CoverLetterInput:
		return true
	}
	return false
}

// replacedUTF8 reports whether encoding/json output b holds the escape
// \ufffd, which it writes in place of bytes that are not valid UTF-8 (a
// real U+FFFD in valid text is written as itself, not escaped).
func replacedUTF8(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if bytes.HasPrefix(b[i:], []byte(`\ufffd`)) {
			return true
		}
		i++ // the escaped character, which may be a backslash
	}
	return false
}

// validHeaderValue reports whether s may be sent as an HTTP header value
// (RFC 9110, section 5.5): no control character but horizontal tab, so no
// NUL, CR or LF. Bytes above 0x7f pass, as net/http sends them.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
