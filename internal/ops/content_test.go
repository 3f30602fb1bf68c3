package ops

import (
	"fmt"
	"maps"
	"math"
	mathrand "math/rand/v2"
	"testing"

	"github.com/go-json-experiment/json"
)

// marshalled is Content as json.Marshal alone writes it: the bytes every
// job identity of a ledger was made of before.
func marshalled(op string, canon map[string]any) (string, error) {
	canon["op"] = op
	b, err := json.Marshal(canon, json.Deterministic(true))
	return string(b), err
}

// same fails unless Content and marshalled agree on canon: the same
// bytes, or both an error.
func same(t *testing.T, canon map[string]any) {
	t.Helper()
	got, gerr := Content("image/text-to-image", maps.Clone(canon))
	want, werr := marshalled("image/text-to-image", maps.Clone(canon))
	if (gerr != nil) != (werr != nil) || got != want {
		t.Fatalf("Content(%#v)\n = %q, %v\nMarshal: %q, %v", canon, got, gerr, want, werr)
	}
}

// Content writes the bytes json.Marshal writes, for hostile values of
// every kind: escapes, control characters, invalid UTF-8, U+2028, HTML's
// characters, keys that sort differently in bytes and in UTF-16, numbers
// at the edges of their formats, NaN and infinities, nesting, types a
// decoded value never holds, nil and empty lists and objects.
func TestContentIsByteForByteWhatMarshalWrites(t *testing.T) {
	strs := []string{"", "a fox", `"quoted" \ back`, "line\nbreak\ttab\r\x00\x1f\x7f", "<script>&amp;</script>",
		"\u2028\u2029", "é ü 日本 🦊", "\xff\xfe invalid", "a\xc3", "\ufeffbom", "\U0001F600", "\ud7ff\ue000\uffff"}
	nums := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e20, 1e21, 1e-6, 1e-7, 123456789012345678, math.MaxFloat64,
		math.SmallestNonzeroFloat64, 2.5e-324, math.NaN(), math.Inf(1), math.Inf(-1), 1 << 53, 1<<53 + 1, 0.30000000000000004}
	for _, s := range strs {
		same(t, map[string]any{"prompt": s})
		same(t, map[string]any{s: "key"})
	}
	for _, n := range nums {
		same(t, map[string]any{"n": n})
	}
	same(t, map[string]any{"\uffff": 1.0, "\U0001F600": 2.0, "z": 3.0, "Z": 4.0, "é": 5.0, "e": 6.0})
	same(t, map[string]any{"l": []any(nil), "m": map[string]any(nil), "e": []any{}, "o": map[string]any{}, "x": nil, "b": true, "f": false})
	same(t, map[string]any{"deep": []any{map[string]any{"b": []any{1.0, "x", nil}, "a": map[string]any{"c": "\x01"}}}})
	same(t, map[string]any{"int": 7, "strs": []string{"a"}, "i64": int64(-3), "f32": float32(0.1)})
	same(t, map[string]any{"bad": []any{1.0, math.NaN()}})
	same(t, map[string]any{"bad": map[string]any{"\xff": 1.0}})
}

// Random values of a decoded JSON object's kinds, seeded and replayable:
// Content and Marshal agree on each.
func TestContentAgreesWithMarshalOnRandomValues(t *testing.T) {
	for seed := range uint64(2000) {
		r := mathrand.New(mathrand.NewPCG(seed, 42))
		var value func(depth int) any
		value = func(depth int) any {
			switch k := r.IntN(8); {
			case k == 0:
				return nil
			case k == 1:
				return r.IntN(2) == 0
			case k == 2:
				return math.Float64frombits(r.Uint64())
			case k == 3:
				return float64(r.IntN(1e6)) / float64(1+r.IntN(1000))
			case k == 4 && depth < 3:
				l := make([]any, r.IntN(4))
				for i := range l {
					l[i] = value(depth + 1)
				}
				return l
			case k == 5 && depth < 3:
				m := map[string]any{}
				for range r.IntN(4) {
					m[randString(r)] = value(depth + 1)
				}
				return m
			}
			return randString(r)
		}
		canon := map[string]any{}
		for range 1 + r.IntN(6) {
			canon[randString(r)] = value(0)
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) { same(t, canon) })
	}
}

// randString is a short string of bytes and runes a prompt may hold,
// invalid UTF-8 among them.
func randString(r *mathrand.Rand) string {
	alphabet := []string{"a", "Z", "0", " ", "\"", "\\", "\n", "\x00", "\x1f", "<", "&", "é", "日", "🦊", "\u2028", "\xff", "\xc3", "\ufffd"}
	b := make([]byte, 0, 16)
	for range r.IntN(8) {
		b = append(b, alphabet[r.IntN(len(alphabet))]...)
	}
	return string(b)
}

func FuzzContent(f *testing.F) {
	f.Add("a fox", "prompt", 1.5, true)
	f.Add("\xff<>&\u2028", "\x00", math.Inf(1), false)
	f.Fuzz(func(t *testing.T, s, k string, n float64, b bool) {
		same(t, map[string]any{k: s, "n": n, "b": b, "l": []any{s, n, map[string]any{s: k}}})
	})
}
