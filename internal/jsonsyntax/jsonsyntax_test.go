package jsonsyntax

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// describeTests are lines that are no JSON, the column where each stops
// being JSON and what Describe says is wrong there.
var describeTests = []struct {
	raw  string
	col  int
	what string
}{
	{`[`, 2, `the line ends before the array is closed: "]" is missing`},
	{`{"a":[1`, 8, `the line ends before the object is closed: "]}" is missing`},
	{`[1,]`, 3, `a trailing comma before "]" (JSON allows none)`},
	{`[{'a':1}]`, 3, `a single quote: JSON takes double quotes (") around names and text`},
	{`{a:1}`, 2, `a name without quotes: write "a"`},
	{`{"a" 1}`, 6, `a ":" is missing after the name`},
	{`{"a":}`, 6, `a value is missing after the colon`},
	{`["é", True]`, 7, `True is no JSON value: write true, in lower case`},
	{`[1 2]`, 4, `a comma is missing before this`},
	{`{"a":"x` + "\t" + `"}`, 8, `a tab inside a string: write \t`},
	{`{"a":"x`, 6, `this string is not closed: a closing " is missing`},
	{`{} }`, 4, `an extra "}" after the end of the object`},
	{`{"a":"\u12"}`, 7, `a \u escape needs four hexadecimal digits, as in \u00e9`},
	{`1.`, 1, `1. is no JSON number: digits must follow the point`},
	{`[1.]`, 2, `1. is no JSON number: digits must follow the point`},
	{`{"a":1.`, 6, `1. is no JSON number: digits must follow the point`},
	{`1e`, 1, `1e is no JSON number: the exponent needs digits`},
	{`{"a":1e+}`, 6, `1e+ is no JSON number: the exponent needs digits`},
	{`.5`, 1, `.5 is no JSON number: a digit must come before the point`},
	{`{"a":-.5}`, 6, `-.5 is no JSON number: a digit must come before the point`},
	{`+1`, 1, `+1 is no JSON number: a number takes no plus sign`},
	{`[+1]`, 2, `+1 is no JSON number: a number takes no plus sign`},
	{`-`, 1, `- is no JSON number: a lone minus, with no digits after it`},
	{`{"a":-}`, 6, `- is no JSON number: a lone minus, with no digits after it`},
	{`,`, 1, `a comma with nothing before it`},
	{`01`, 1, `01 is no JSON number: a number does not start with 0`},
	{`{}{}`, 3, `more than one JSON value on the line`},
	{`1 2`, 3, `more than one JSON value on the line`},
	{`}`, 1, `"}" where a value belongs`},
	{`tru`, 1, `tru is no JSON value: text takes double quotes, "tru" (the bare words are true, false and null)`},
}

func TestDescribeSaysWhereAndWhat(t *testing.T) {
	for _, tt := range describeTests {
		off, what, ok := Describe([]byte(tt.raw))
		if assert.True(t, ok, tt.raw) {
			assert.Equal(t, tt.what, what, tt.raw)
			assert.Equal(t, tt.col, Column([]byte(tt.raw), off), tt.raw)
		}
	}
}

// validLines are JSON, or nothing but spaces: Describe finds nothing in
// them.
var validLines = []string{`[]`, `{"a":[1,{"b":null}]}`, `{"a":1,"a":2}`, "\"\xff\"", ``, " \t"}

func TestDescribeFindsNothingInValidJSON(t *testing.T) {
	for _, raw := range validLines {
		_, _, ok := Describe([]byte(raw))
		assert.False(t, ok, raw)
	}
}

// FuzzDescribe holds Describe to its word on any line: a syntax error is
// found exactly when the line is no JSON, once invalid UTF-8 (which it reads
// past) is mended; it is found at a byte of the line, and said in words.
func FuzzDescribe(f *testing.F) {
	for _, tt := range describeTests {
		f.Add([]byte(tt.raw))
	}
	for _, raw := range validLines {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		off, what, ok := Describe(raw)
		blank := len(bytes.TrimLeft(raw, " \t\r\n")) == 0
		if want := !blank && !json.Valid(bytes.ToValidUTF8(raw, []byte("\uFFFD"))); ok != want {
			t.Fatalf("Describe(%q): ok = %v, want %v (%q)", raw, ok, want, what)
		}
		if !ok {
			if off != 0 || what != "" {
				t.Fatalf("Describe(%q) = %d, %q, false: want 0, \"\"", raw, off, what)
			}
			return
		}
		if off < 0 || off > len(raw) {
			t.Fatalf("Describe(%q): offset %d is outside the line's %d bytes", raw, off, len(raw))
		}
		if what == "" || strings.Contains(what, `"" is missing`) {
			t.Fatalf("Describe(%q) says %q", raw, what)
		}
		Column(raw, off)
		Excerpt(raw, off)
	})
}

func TestExcerptCutsLongText(t *testing.T) {
	raw := []byte(`{"prompt":"a fox in the snow at night","style":oops}`)
	off := len(`{"prompt":"a fox in the snow at night","style":`)
	assert.Equal(t, `... snow at night","style":oops}`, Excerpt(raw, off))
	assert.Equal(t, `[1,]`, Excerpt([]byte(`[1,]`), 2))
	assert.Equal(t, `ééé`, Excerpt([]byte(`ééé`), len(`é`)), "cut by characters, not bytes")
}
