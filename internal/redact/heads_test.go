package redact

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// holdsEverywhere is what holdsForm answers when it looks at every offset
// of the folded text: the reference its set of heads must agree with.
func holdsEverywhere(r *Redactor, s string) bool {
	folded := Fold(nil, []byte(s))
	for _, f := range r.bforms {
		if bytes.Contains(folded, f) {
			return true
		}
	}
	return false
}

// randomCase writes each ASCII letter of s in a case drawn from rng.
func randomCase(rng *rand.Rand, s string) string {
	b := []byte(s)
	for i, c := range b {
		if rng.IntN(2) == 0 {
			continue
		}
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

// TestHoldsAgreesWithLookingAtEveryOffset builds texts of pieces of every
// form of keys of every shape (shorter than the heads, with "=", "/", "~",
// non-ASCII and high bytes, several at once), whole or cut, in any case,
// at the start, the end or overlapping, and checks that the heads find a
// form exactly where a search of the folded text at every offset does,
// and that Redact then removes it.
func TestHoldsAgreesWithLookingAtEveryOffset(t *testing.T) {
	keySets := [][]string{
		{"abcd"}, {"abcde"}, {"k3Y=="}, {"sk-LIVE-0123456789abcdef"},
		{"a/b~c/d~e"}, {"kéy\xffé\x80"}, {"ab", "abcd"}, {"abc"},
		{"aaaaaaaa"}, {"abababab", "bababab4"}, {"KEY1KEY1KEY1", "key2key2"},
		{"p%q&r\\s\"t<u>"}, {"ABCD\x00\x01EFGH"}, {"zzzz", "ZZZZzzzzZZZZ"},
	}
	rng := rand.New(rand.NewPCG(42, 42))
	for _, keys := range keySets {
		r := New(keys)
		forms := r.Forms()
		var pieces []string
		for _, f := range forms {
			pieces = append(pieces, f)
			for cut := 1; cut < len(f); cut++ {
				pieces = append(pieces, f[:cut], f[cut:])
			}
		}
		for _, k := range keys {
			pieces = append(pieces, k, k[:len(k)/2], k[len(k)/2:])
		}
		pieces = append(pieces, "", " ", "\n", "\r\n", "=\n", "&", "\\", "%", "x", "\x00", "é")
		found, checked := 0, 0
		for range 20000 {
			var b strings.Builder
			for n := rng.IntN(6); n >= 0; n-- {
				b.WriteString(randomCase(rng, pieces[rng.IntN(len(pieces))]))
			}
			s := b.String()
			want := holdsEverywhere(r, s)
			if got := r.holdsForm(s); got != want {
				t.Fatalf("keys %q: holdsForm(%q) = %v, a search at every offset says %v", keys, s, got, want)
			}
			if got := r.holdsFolded(Fold(nil, []byte(s))); got != want {
				t.Fatalf("keys %q: holdsFolded(%q) = %v, a search at every offset says %v", keys, s, got, want)
			}
			if lines, escapes := marks(s); lines != strings.ContainsAny(s, "\r\n") || escapes != strings.ContainsAny(s, `&\%`) {
				t.Fatalf("marks(%q) = %v, %v", s, lines, escapes)
			}
			if want {
				found++
				if out := r.Redact(s); holdsEverywhere(r, out) || out == s {
					t.Fatalf("keys %q: Redact(%q) = %q", keys, s, out)
				}
				if out := r.RedactBytes([]byte(s)); holdsEverywhere(r, string(out)) {
					t.Fatalf("keys %q: RedactBytes(%q) = %q", keys, s, out)
				}
			}
			checked++
		}
		if len(forms) > 0 && found == 0 {
			t.Fatalf("keys %q: no text of %d held a form: the test checks nothing", keys, checked)
		}
	}
}
