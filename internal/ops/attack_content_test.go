package ops

import (
	"math"
	"testing"

	"github.com/go-json-experiment/json"
)

// contentPair is what Content writes for canon and what json.Marshal with
// Deterministic writes for it.
func contentPair(t *testing.T, canon map[string]any) (got string, gotErr error, want string, wantErr error) {
	t.Helper()
	canon["op"] = "op"
	b, wantErr := json.Marshal(canon, json.Deterministic(true))
	got, gotErr = Content("op", canon)
	return got, gotErr, string(b), wantErr
}

func TestAttackContentMatchesMarshal(t *testing.T) {
	deep := func(n int) any {
		var v any = "x"
		for range n {
			v = []any{v}
		}
		return v
	}
	deepObj := func(n int) any {
		var v any = 1.0
		for range n {
			v = map[string]any{"k": v}
		}
		return v
	}
	cases := map[string]map[string]any{
		"floats":    {"a": []any{0.0, math.Copysign(0, -1), 1e21, 1e-7, 5e-324, math.MaxFloat64, 123456789012345678.0, 0.1, -1.5e300}},
		"strings":   {"s": "<>&\u2028\u2029\u007f\x00\x1f\"\\/é😀\ufffd"},
		"keys":      {"\u2028": 1.0, "é": 2.0, "e": 3.0, "E": 4.0, "": 5.0, "😀": 6.0, "\uffff": 7.0},
		"invalid":   {"s": "a\xffb"},
		"badkey":    {"a\xffb": 1.0},
		"nilmap":    {"m": map[string]any(nil), "s": []any(nil), "n": nil},
		"typednil":  {"p": (*int)(nil)},
		"ints":      {"i": 3, "u": uint8(4)},
		"nan":       {"f": math.NaN()},
		"nested":    {"o": map[string]any{"b": []any{map[string]any{"z": true, "a": false}}, "a": nil}},
		"deepArray": {"d": deep(10001)},
		"deepObj":   {"d": deepObj(10001)},
	}
	cyclic := []any{nil}
	cyclic[0] = cyclic
	cases["cycle"] = map[string]any{"c": cyclic}
	self := map[string]any{}
	self["self"] = self
	cases["selfMap"] = map[string]any{"m": self}
	cases["deep999"] = map[string]any{"d": deep(998)}
	cases["deep9998"] = map[string]any{"d": deep(9998)}
	for name, canon := range cases {
		got, gotErr, want, wantErr := contentPair(t, canon)
		if (gotErr == nil) != (wantErr == nil) || got != want && wantErr == nil {
			g, w := got, want
			if len(g) > 80 {
				g = g[:80]
			}
			if len(w) > 80 {
				w = w[:80]
			}
			t.Errorf("%s: Content wrote %q (%v), Marshal %q (%v)", name, g, gotErr, w, wantErr)
		}
	}
}
