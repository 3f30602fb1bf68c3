package batch

import (
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
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
	want := []string{"", "line 4: p: holds invalid UTF-8", "line 5: p: given twice (which one was meant?)", "line 6: not a JSON object", ""}
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
	for _, s := range []string{`{"op":"image/text-to-image","prompt":"p","numberOfResults":2}`, `{"inputs":[{"a":"b"}]}`, `{"x":"\ud800"}`, `{}`, `[]`, `{"a":1}{}`, "{\"\xff\":1}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		j, err := parseLine(raw)
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
