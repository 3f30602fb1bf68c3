package batch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func lines(t *testing.T, text string) ([]Job, []error) {
	t.Helper()
	var jobs []Job
	var errs []error
	src := JSONL(func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(text)), nil })
	for j, err := range src {
		jobs = append(jobs, j)
		errs = append(errs, err)
	}
	return jobs, errs
}

func TestJSONLNamesTheLineAndTheField(t *testing.T) {
	jobs, errs := lines(t, "\xef\xbb\xbf{\"op\":\"a/b\",\"id\":\"x\",\"n\":2}\n\n  \n{\"op\":\"a/b\",\"p\":\"\xff\"}\n{\"op\":\"a/b\",\"p\":1,\"p\":2}\n[1]\n{\"op\":\"a/b\",\"p\":null}\n")
	if len(jobs) != 5 {
		t.Fatalf("%d jobs, want 5 (blank lines skipped)", len(jobs))
	}
	if errs[0] != nil || jobs[0].Op != "a/b" || jobs[0].ID != "x" || jobs[0].Fields["n"] != 2.0 || jobs[0].Line != 1 {
		t.Errorf("a line behind a byte order mark: %+v, %v", jobs[0], errs[0])
	}
	want := []string{"", "line 4: p: holds invalid UTF-8", "line 5: p: given twice (which one was meant?)", "line 6: not a JSON object: a job is one object per line, such as {\"op\":\"image/text-to-image\",\"prompt\":\"a fox\"}", ""}
	for i, w := range want {
		got := ""
		if errs[i] != nil {
			got = errs[i].Error()
			var le *LineError
			if !errors.As(errs[i], &le) {
				t.Errorf("line %d: %T is no *LineError", jobs[i].Line, errs[i])
			}
		}
		if got != w {
			t.Errorf("job %d: %q, want %q", i, got, w)
		}
	}
	if v, ok := jobs[4].Fields["p"]; !ok || v != nil {
		t.Errorf("null is kept as nil, for the check to refuse where a default exists: %v %v", v, ok)
	}
}

func TestJSONLSaysWhereALineIsNoJSONAndWhatWasExpected(t *testing.T) {
	for _, tt := range []struct {
		name, line string
		column     int
		want       string
	}{
		{"a trailing comma", `{"op":"image/text-to-image","prompt":"a fox","styleId":"anime",}`, 63,
			`a trailing comma before "}" (JSON allows none): ...a fox","styleId":"anime",}`},
		{"a trailing comma in an array", `{"op":"text/writer-tool","inputs":[{"jobRole":"r"},]}`, 51,
			`a trailing comma before "]" (JSON allows none): ...inputs":[{"jobRole":"r"},]}`},
		{"a missing closing quote", `{"op":"image/text-to-image","prompt":"a fox}`, 38,
			`this string is not closed: a closing " is missing: ...text-to-image","prompt":"a fox}`},
		{"single quotes", `{'op':'image/text-to-image'}`, 2,
			`a single quote: JSON takes double quotes (") around names and text: {'op':'image/...`},
		{"an unclosed brace", `{"op":"image/text-to-image","prompt":"a fox"`, 45,
			`the line ends before the object is closed: "}" is missing: ...-image","prompt":"a fox"`},
		{"a name without quotes", `{"op":"image/text-to-image",prompt:"a fox"}`, 29,
			`a name without quotes: write "prompt": ...":"image/text-to-image",prompt:"a fo...`},
		{"a missing comma", `{"op":"image/text-to-image" "prompt":"a fox"}`, 29,
			`a comma is missing before this: ...":"image/text-to-image" "prompt":"a ...`},
		{"a missing value", `{"op":"image/text-to-image","prompt":}`, 38,
			`a value is missing after the colon: ...text-to-image","prompt":}`},
		{"a word for a value", `{"op":"image/text-to-image","prompt":fox}`, 38,
			`fox is no JSON value: text takes double quotes, "fox" (the bare words are true, false and null): ...text-to-image","prompt":fox}`},
		{"an extra closing brace", `{"op":"image/text-to-image"}}`, 29,
			`an extra "}" after the end of the object: ...":"image/text-to-image"}}`},
		{"a tab inside a string", "{\"op\":\"image/text-to-image\",\"prompt\":\"a\tfox\"}", 40,
			"a tab inside a string: write \\t: ...xt-to-image\",\"prompt\":\"a\tfox\"}"},
		{"columns count characters, and the spaces before the object", `  {"op":"x","prompt":"café",}`, 28,
			`a trailing comma before "}" (JSON allows none): ..."op":"x","prompt":"café",}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := lines(t, `{"op":"a/b"}`+"\n\n"+tt.line+"\n")
			require.Len(t, errs, 2)
			var le *LineError
			require.ErrorAs(t, errs[1], &le)
			assert.Equal(t, 3, le.Line)
			assert.Equal(t, tt.column, le.Column)
			assert.Empty(t, le.Field)
			assert.Equal(t, fmt.Sprintf("line 3: column %d: %s", tt.column, tt.want), le.Error())
		})
	}
	t.Run("a line that holds no object has no column", func(t *testing.T) {
		_, errs := lines(t, "[1]\n")
		var le *LineError
		require.ErrorAs(t, errs[0], &le)
		assert.Zero(t, le.Column)
		assert.True(t, strings.HasPrefix(le.Error(), "line 1: not a JSON object: a job is one object per line, such as {"), le.Error())
	})
	t.Run("a byte order mark is no column", func(t *testing.T) {
		_, errs := lines(t, "\xef\xbb\xbf{\"op\":\"x\",}\n")
		var le *LineError
		require.ErrorAs(t, errs[0], &le)
		assert.Equal(t, 10, le.Column)
	})
}

func TestJSONLRefusesAKeyOrValueThatIsNoText(t *testing.T) {
	_, errs := lines(t, `{"op":"a/b","p":"fox \ud800 snow"}`+"\n"+`{"op":"a/b","\udc00":1}`+"\n"+`{"op":"a/b","p":["\ud83e"]}`+"\n"+`{"op":"a/b","p":"\ud83e\udd8a"}`+"\n"+"{\"op\":\"a/b\",\"\xff\":1}\n")
	want := []string{
		`line 1: p: holds an escape that is no character (a lone UTF-16 surrogate such as \ud800)`,
		`line 2: a key holds an escape that is no character (a lone UTF-16 surrogate such as \ud800)`,
		`line 3: p: holds an escape that is no character (a lone UTF-16 surrogate such as \ud800)`,
		"",
		"line 5: a key holds invalid UTF-8",
	}
	if len(errs) != len(want) {
		t.Fatalf("%d lines, want %d", len(errs), len(want))
	}
	for i, w := range want {
		got := ""
		if errs[i] != nil {
			got = errs[i].Error()
		}
		if got != w {
			t.Errorf("line %d: %q, want %q", i+1, got, w)
		}
	}
}

func TestJSONLStopsAtALineTooLong(t *testing.T) {
	_, errs := lines(t, `{"op":"a/b"}`+"\n"+strings.Repeat("x", maxLine+1)+"\n")
	if len(errs) != 2 || errs[1] == nil || !strings.Contains(errs[1].Error(), "line 2: longer than 4 MiB") {
		t.Fatalf("errors %v", errs)
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{`{"op":"image/text-to-image","prompt":"p","numberOfResults":2}`, `{"inputs":[{"a":"b"}]}`, `{"x":"\ud800"}`, `{}`, `[]`, `{"a":1}{}`, "{\"\xff\":1}",
		`{"a":1,}`, `{'a':1}`, `{"a":[1,2}`, `{"a":"b`, `{a:tru}`, `{"a":01}`, `{"a":{"b":[`, `{"a" 1}`, "{\"a\":\"\t\\q\"}", `{"a":"b\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		j, err := parseLine(jsontext.NewDecoder(bytes.NewReader(nil)), raw)
		var fe *fieldError
		if errors.As(err, &fe) {
			if fe.at < 0 || fe.at > len(raw)+1 {
				t.Fatalf("%q: the fault is placed at byte %d, outside the line", raw, fe.at)
			}
			if fe.at > 0 && !utf8.ValidString(fe.err.Error()) {
				t.Fatalf("%q: a message of invalid UTF-8: %q", raw, fe.err)
			}
		}
		if err != nil {
			return
		}
		if !jsontext.Value(raw).IsValid(jsontext.AllowDuplicateNames(true)) {
			t.Fatalf("a line with a bad escape passed: %q", raw)
		}
		if !utf8.ValidString(j.Op) || !utf8.ValidString(j.ID) {
			t.Fatalf("invalid UTF-8 passed: %q %q", j.Op, j.ID)
		}
		for k, v := range j.Fields {
			if !utf8.ValidString(k) {
				t.Fatalf("invalid UTF-8 key %q passed", k)
			}
			if s, ok := v.(string); ok && !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 value of %q passed", k)
			}
		}
	})
}

func TestJSONLReadsValuesAsJSONDoes(t *testing.T) {
	jobs, errs := lines(t, `{"op":"a\/b","id":"x\u0031","s":"plain","e":"a \"fox\"\n","n":-1.5e3,"i":7,"a":["x",1],"o":{"k":true},"b":false}`+"\n"+`{"op":"a/b","n":1e400}`+"\n")
	require.NoError(t, errs[0])
	assert.Equal(t, Job{Op: "a/b", ID: "x1", Line: 1, Fields: map[string]any{"s": "plain", "e": "a \"fox\"\n", "n": -1500.0, "i": 7.0,
		"a": []any{"x", 1.0}, "o": map[string]any{"k": true}, "b": false}}, jobs[0])
	assert.EqualError(t, errs[1], "line 2: n: not a number that fits")
}
