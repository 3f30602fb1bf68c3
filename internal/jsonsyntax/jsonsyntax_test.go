package jsonsyntax

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDescribeSaysWhereAndWhat(t *testing.T) {
	tests := []struct {
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
	}
	for _, tt := range tests {
		off, what, ok := Describe([]byte(tt.raw))
		if assert.True(t, ok, tt.raw) {
			assert.Equal(t, tt.what, what, tt.raw)
			assert.Equal(t, tt.col, Column([]byte(tt.raw), off), tt.raw)
		}
	}
}

func TestDescribeFindsNothingInValidJSON(t *testing.T) {
	for _, raw := range []string{`[]`, `{"a":[1,{"b":null}]}`, `{"a":1,"a":2}`, "\"\xff\""} {
		_, _, ok := Describe([]byte(raw))
		assert.False(t, ok, raw)
	}
}

func TestExcerptCutsLongText(t *testing.T) {
	raw := []byte(`{"prompt":"a fox in the snow at night","style":oops}`)
	off := len(`{"prompt":"a fox in the snow at night","style":`)
	assert.Equal(t, `... snow at night","style":oops}`, Excerpt(raw, off))
	assert.Equal(t, `[1,]`, Excerpt([]byte(`[1,]`), 2))
	assert.Equal(t, `ééé`, Excerpt([]byte(`ééé`), len(`é`)), "cut by characters, not bytes")
}
