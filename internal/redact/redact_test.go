package redact

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
)

const key = "ck_Live/4f9+a&b=Z~q"

// mixCase writes every other letter of s in upper case.
func mixCase(s string) string {
	b := []byte(s)
	for i := range b {
		if i%2 == 0 && 'a' <= b[i] && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

// encodings are the binary-to-text forms a server may echo a key in, each
// given what it encodes (the key, with bytes before and after it).
var encodings = map[string]func([]byte) string{
	"hex":                   hex.EncodeToString,
	"HEX":                   func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) },
	"hex, mixed case":       func(b []byte) string { return mixCase(hex.EncodeToString(b)) },
	"base64":                base64.StdEncoding.EncodeToString,
	"base64, unpadded":      base64.RawStdEncoding.EncodeToString,
	"base64url":             base64.URLEncoding.EncodeToString,
	"base32":                base32.StdEncoding.EncodeToString,
	"base32, unpadded":      base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString,
	"base32, lower case":    func(b []byte) string { return strings.ToLower(base32.StdEncoding.EncodeToString(b)) },
	"base32, mixed case":    func(b []byte) string { return mixCase(strings.ToLower(base32.StdEncoding.EncodeToString(b))) },
	"base32hex":             base32.HexEncoding.EncodeToString,
	"base32hex, unpadded":   base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString,
	"base32hex, lower case": func(b []byte) string { return strings.ToLower(base32.HexEncoding.EncodeToString(b)) },
	"base32hex, unpadded, lc": func(b []byte) string {
		return strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
	},
}

// Every encoding, with the key at every offset in what was encoded (up to
// a group of the widest, base32's five bytes) and text after it: Redact
// takes the key's part out, Forms lists it, and nothing of the encoded key
// is left that would decode back to it.
func TestEveryEncodingOfTheKeyAtEveryOffsetIsRemoved(t *testing.T) {
	r := New([]string{key})
	for name, enc := range encodings {
		for before := 0; before < 5; before++ {
			for _, after := range []string{"", "x", "user:pass@"} {
				t.Run(fmt.Sprintf("%s/%d before/%q after", name, before, after), func(t *testing.T) {
					src := []byte(strings.Repeat("u", before) + key + after)
					encoded := enc(src)
					text := "echo: " + encoded + " end"
					got := r.Redact(text)
					if !strings.Contains(got, Marker) {
						t.Fatalf("Redact(%q) = %q: the encoded key is still there", text, got)
					}
					if !r.Holds(text) {
						t.Fatal("Holds is false")
					}
					folded := string(Fold(nil, []byte(encoded)))
					found := false
					for _, f := range r.Forms() {
						found = found || strings.Contains(folded, f)
					}
					if !found {
						t.Fatalf("no form of Forms is in %q", encoded)
					}
				})
			}
		}
	}
}

// The escaped and quoted forms known before, still removed.
func TestTheEscapedFormsAreRemoved(t *testing.T) {
	r := New([]string{key})
	for name, form := range map[string]string{
		"plain": key, "query": url.QueryEscape(key), "path": url.PathEscape(key),
		"JSON \\/": strings.ReplaceAll(key, "/", `\/`), "JSON \\u": strings.ReplaceAll(key, "&", `\u0026`),
		"HTML": strings.ReplaceAll(key, "&", "&amp;"), "upper case": strings.ToUpper(key),
		"JSON pointer": strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1"),
	} {
		if got := r.Redact("a " + form + " b"); got != "a "+Marker+" b" {
			t.Errorf("%s: Redact = %q", name, got)
		}
	}
}

// Text that holds no key comes back as it is, the same string: hex, base32
// and base64 of other bytes included.
func TestOtherTextIsLeftAlone(t *testing.T) {
	r := New([]string{key}, []string{"second-key-0123456789"})
	for _, text := range []string{
		"", "plain message", hex.EncodeToString([]byte("another secret value")),
		base32.StdEncoding.EncodeToString([]byte("another secret value")),
		base64.StdEncoding.EncodeToString([]byte("another secret value")), "100% &amp; \\u0026",
	} {
		if got := r.Redact(text); got != text {
			t.Errorf("Redact(%q) = %q", text, got)
		}
	}
	var none *Redactor
	if none.Redact("x"+key) != "x"+key || len(none.Forms()) != 0 {
		t.Error("a nil Redactor removed something")
	}
	if short := New([]string{"abc"}); short.Redact("abc 616263") != "abc 616263" {
		t.Error("a key under MinKey bytes was looked for")
	}
}

// The cost of the redaction of an error message that holds no key, as
// every error and log line pays it.
func BenchmarkRedactNoKey(b *testing.B) {
	r := New([]string{"ck_live_0123456789abcdef0123456789abcdef"})
	msg := `creative: image/text-to-image: HTTP 400 (request id 6f1c2a9e-77b1-4c55-9d3e-0a1b2c3d4e5f): styleId: "anime" is not a known style`
	r.Redact(msg)
	b.ReportAllocs()
	for b.Loop() {
		r.Redact(msg)
	}
}

// RedactBytes gives back the same bytes when they hold no key, whatever
// their length, and finds a key across any window's edge in a long body,
// in any form.
func TestRedactBytesFindsTheKeyAnywhereAndCopiesNothingWithout(t *testing.T) {
	r := New([]string{key})
	long := []byte(strings.Repeat("a", 300<<10))
	if got := r.RedactBytes(long); &got[0] != &long[0] {
		t.Error("a body without a key was copied")
	}
	for _, at := range []int{0, 64<<10 - 5, 128 << 10, len(long) - 40} {
		for name, form := range map[string]string{"plain": key, "hex": strings.ToUpper(hex.EncodeToString([]byte(key))), "escaped": url.QueryEscape(key)} {
			b := []byte(string(long[:at]) + form + string(long[at:]))
			got := string(r.RedactBytes(b))
			if !strings.Contains(got, Marker) || strings.Contains(got, form) {
				t.Errorf("%s at %d: not redacted", name, at)
			}
		}
	}
}

// wrap breaks s into lines of n characters, each ended by eol, as MIME
// (76, CRLF) and PEM (64, LF) encoders write base64.
func wrap(s string, n int, eol string) string {
	var b strings.Builder
	for i := 0; i < len(s); i += n {
		b.WriteString(s[i:min(len(s), i+n)])
		b.WriteString(eol)
	}
	return b.String()
}

// inUTF16 writes s in UTF-16, little- or big-endian.
func inUTF16(s string, big bool) string {
	var b []byte
	for _, c := range []byte(s) {
		if big {
			b = append(b, 0, c)
		} else {
			b = append(b, c, 0)
		}
	}
	return string(b)
}

// A key wrapped over lines by an encoder (MIME and PEM base64, hex and
// base32 dumps, quoted-printable's soft line breaks), written in UTF-16
// (a body whose text is UTF-16), or escaped as %uXXXX (JavaScript's
// escape()) is removed, wherever the line breaks fall in it, by Redact
// and by RedactBytes in a long body across a window's edge.
func TestAKeyWrappedOverLinesOrInUTF16IsRemoved(t *testing.T) {
	r := New([]string{key})
	pad := strings.Repeat("y", 50)
	cases := map[string]string{
		"UTF-16LE": inUTF16("message: "+key+" end", false),
		"UTF-16BE": inUTF16("message: "+key+" end", true),
		"%u":       strings.Join(strings.Split(fmt.Sprintf("%U", []rune(key)), " "), ""),
		"%u mixed": key[:3] + "%u" + fmt.Sprintf("%04X", key[3]) + key[4:],
	}
	cases["%u"] = strings.NewReplacer("[", "", "]", "", "U+", "%u").Replace(cases["%u"])
	for before := 0; before < 5; before++ {
		src := []byte(pad[:before+40] + key + pad)
		for n := 60; n < 80; n += 4 {
			cases[fmt.Sprintf("MIME base64/%d before/%d a line", before, n)] = wrap(base64.StdEncoding.EncodeToString(src), n, "\r\n")
			cases[fmt.Sprintf("PEM base64/%d before/%d a line", before, n)] = wrap(base64.StdEncoding.EncodeToString(src), n, "\n")
			cases[fmt.Sprintf("hex/%d before/%d a line", before, n)] = wrap(hex.EncodeToString(src), n, "\n")
			cases[fmt.Sprintf("base32/%d before/%d a line", before, n)] = wrap(base32.StdEncoding.EncodeToString(src), n, "\r\n")
		}
	}
	for n := 1; n < len(key); n++ {
		cases[fmt.Sprintf("quoted-printable/soft break after %d", n)] = "text " + key[:n] + "=\r\n" + key[n:] + " text"
	}
	long := strings.Repeat("z", 64<<10-30)
	for name, text := range cases {
		got := r.Redact(text)
		if !strings.Contains(got, Marker) || r.Holds(got) {
			t.Errorf("%s: Redact(%q) = %q", name, text, got)
		}
		body := []byte(long + text + long)
		if got := r.RedactBytes(body); !strings.Contains(string(got), Marker) || r.Holds(string(got)) {
			t.Errorf("%s: RedactBytes kept the key in a long body", name)
		}
	}
	// A key that ends with "=" before a line break, as it is.
	eq := New([]string{"ck_live_abcdef=="})
	for _, text := range []string{"k: ck_live_abcdef==\r\nnext", "k: ck_live_abcdef==\n"} {
		if got := eq.Redact(text); strings.Contains(got, "abcdef") {
			t.Errorf("Redact(%q) = %q", text, got)
		}
		if got := eq.RedactBytes([]byte(long + text)); strings.Contains(string(got), "abcdef") {
			t.Errorf("RedactBytes kept %q", text)
		}
	}
}

// The cost of the redaction of a body wrapped over lines (base64 at 76
// characters a line, as MIME writes it) that holds no key.
func BenchmarkRedactBytesLinesNoKey(b *testing.B) {
	r := New([]string{"ck_live_0123456789abcdef0123456789abcdef"})
	body := []byte(wrap(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x89PNG image bytes ", 1<<16))), 76, "\r\n"))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r.RedactBytes(body)
	}
}

// Hide writes over every key Redact removes, in every form (literal,
// encoded, escaped, wrapped over lines), and keeps the length and the
// line breaks: what is left holds no key.
func TestHideWritesOverEveryFormAndKeepsTheLength(t *testing.T) {
	r := New([]string{key})
	var pct strings.Builder
	for i := 0; i < len(key); i++ {
		fmt.Fprintf(&pct, "%%%02x", key[i])
	}
	b64 := base64.StdEncoding.EncodeToString([]byte("0123456789" + key))
	for name, form := range map[string]string{
		"plain": key, "upper case": strings.ToUpper(key), "query": url.QueryEscape(key), "every byte escaped": pct.String(),
		"HTML and JSON mixed": strings.ReplaceAll(strings.ReplaceAll(key, "&", `\u0026amp;`), "/", `\/`),
		"hex":                 hex.EncodeToString([]byte(key)), "base64": b64, "base64 wrapped": b64[:20] + "\r\n" + b64[20:],
		"UTF-16": inUTF16(key, false),
	} {
		text := "before " + form + " after\n"
		b := []byte(text)
		if !r.Hide(b) || len(b) != len(text) || r.Holds(string(b)) || strings.Count(string(b), "\n") != strings.Count(text, "\n") {
			t.Errorf("%s: Hide(%q) = %q", name, text, b)
		}
	}
	clean := []byte("nothing to hide here, 100% &amp; \\u0026\r\n")
	if r.Hide(clean) || string(clean) != "nothing to hide here, 100% &amp; \\u0026\r\n" {
		t.Errorf("Hide changed a text without a key: %q", clean)
	}
}

// BenchmarkHoldsURL is the check of each link of an answer: a URL of the
// length the service gives, holding no key.
func BenchmarkHoldsURL(b *testing.B) {
	r := New([]string{"sk-live-0123456789abcdef0123456789abcdef"})
	u := "https://cdn.example.com/files/2026/11/28/3fa9c1d2e4b5a6978f01.png"
	r.Holds(u)
	b.ReportAllocs()
	for b.Loop() {
		if r.Holds(u) {
			b.Fatal("held")
		}
	}
}

// holdsIn, which passes over the offsets where no form starts, finds a
// form exactly where looking for each form at every offset finds one: in
// texts of random bytes with a form, or a form but for one byte, put in at
// random offsets in a random case, with the lookup and without it.
func TestHoldsFindsWhatLookingEverywhereFinds(t *testing.T) {
	r := New([]string{key, "sk-live-0123456789abcdef"})
	forms := r.Forms()
	rng := rand.New(rand.NewPCG(1, 2))
	everywhere := func(s string) bool {
		folded := strings.ToLower(s)
		for _, f := range forms {
			if strings.Contains(folded, f) {
				return true
			}
		}
		return false
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/+=%&~.:"
	held := 0
	for range 20000 {
		b := make([]byte, rng.IntN(120))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if rng.IntN(2) == 0 {
			f := []byte(forms[rng.IntN(len(forms))])
			if rng.IntN(3) == 0 {
				f[rng.IntN(len(f))] ^= 1 // all but one byte of a form
			}
			at := rng.IntN(len(b) + 1)
			b = append(b[:at], append([]byte(mixCase(string(f))), b[at:]...)...)
		}
		s := string(b)
		want := everywhere(s)
		if want {
			held++
		}
		r.short = false
		fast := holdsIn(r, s)
		r.short = true
		slow := holdsIn(r, []byte(s))
		if fast != want || slow != want {
			t.Fatalf("holdsIn(%q) = %v, %v looking everywhere; want %v", s, fast, slow, want)
		}
	}
	if held < 5000 {
		t.Fatalf("only %d texts of 20000 held a form: the test looked at too few", held)
	}
}
