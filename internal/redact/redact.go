// Package redact removes access keys from text that came from the network,
// in every form a server may echo them in. It is the one redactor of the
// module: the SDK runs every string of an answer through it before the
// string reaches an error, a log line or a caller, and creativetest/cassette
// runs every byte it writes to disk through it, and looks for its Forms
// when it checks a cassette.
//
// Start with New and Redactor.Redact; Redactor.Hide writes over the keys
// in bytes that must keep their length, and Forms lists the literal forms.
package redact

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"html"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Marker is what a key is replaced with.
const Marker = "[redacted]"

// MinKey is the length below which a key is not looked for: a shorter one
// would match ordinary text by chance.
const MinKey = 4

// A Redactor removes a set of access keys from text. A nil or zero
// Redactor removes nothing. It works out the forms of its keys once, when
// first needed, and is safe for concurrent use.
type Redactor struct {
	keys []string

	once     sync.Once
	forms    []string // what Redact looks for literally, folded; see Forms
	bforms   [][]byte // the same, as bytes
	escaped  int      // the longest escaped form of a key redactEscaped reads
	eq       bool     // a form holds "=", which joinLines may take out
	shortest int      // the shortest key looked for: no shorter text holds one in any form
	heads    heads    // the first headLen bytes of each form (holdsIn)
	short    bool     // a form is shorter than headLen: holdsIn looks at every offset
}

// New returns the Redactor of the keys of every list, each once, in the
// order given: a call's keys first, then the Client's.
func New(keys ...[]string) *Redactor {
	var all []string
	for _, ks := range keys {
		for _, k := range ks {
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
	}
	return &Redactor{keys: all}
}

// Keys returns the keys r removes.
func (r *Redactor) Keys() []string {
	if r == nil {
		return nil
	}
	return r.keys
}

// Redact returns s without the keys, in every form r knows (see Forms), and
// written with HTML, JSON, Go or URL escapes in any mix.
func (r *Redactor) Redact(s string) string {
	forms := r.Forms()
	if len(forms) == 0 || len(s) < r.shortest {
		return s
	}
	// A text with line breaks is looked through with its lines joined:
	// what holds a form then holds it as it is too, or across a line
	// break, unless a form holds a "=" (see joinLines), when both are
	// looked through.
	lines, escapes := marks(s)
	var plain, joined bool
	if lines && !r.eq {
		joined = r.holdsJoined(s)
		plain = joined
	} else {
		plain = r.holdsForm(s)
		joined = lines && r.holdsJoined(s)
	}
	if plain {
		folded := foldASCII(s)
		for _, f := range forms {
			if strings.Contains(folded, f) {
				s = replaceFolded(s, folded, f)
				folded = foldASCII(s)
			}
		}
	}
	if joined {
		s = r.redactJoined(s)
	}
	if plain || joined {
		escapes = strings.ContainsAny(s, `&\%`) // of what is left
	}
	if escapes {
		s = r.redactEscaped(s)
	}
	return s
}

// marks reports whether s holds a line break (CR or LF), and whether it
// holds a byte that may start an escape (& \ %), in one pass.
func marks(s string) (lines, escapes bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\r', '\n':
			lines = true
		case '&', '\\', '%':
			escapes = true
		}
	}
	return lines, escapes
}

// holdsForm reports whether s holds one of the forms, in any case,
// without copying it.
func (r *Redactor) holdsForm(s string) bool { return holdsIn(r, s) }

// holdsFolded reports whether folded, folded text, holds one of the forms.
func (r *Redactor) holdsFolded(folded []byte) bool { return holdsIn(r, folded) }

// headLen is the length of the start of a form that heads holds.
const headLen = 4

// heads is the set of the first headLen bytes of the forms, each hashed to
// one of 4096 bits. A form starts in a text only at an offset whose
// headLen bytes, folded, are in the set; at almost every offset of a text
// that holds no key they are not, and one lookup passes the offset over.
type heads [4096 / 64]uint64

// headBit is the bit of heads that the headLen bytes w hash to.
func headBit(w uint32) uint32 { return (w * 0x9e3779b1) >> (32 - 12) }

func (h *heads) add(w uint32)      { b := headBit(w); h[b/64] |= 1 << (b % 64) }
func (h *heads) has(w uint32) bool { b := headBit(w); return h[b/64]&(1<<(b%64)) != 0 }

// holdsIn reports whether s holds one of the forms, in any case: its bytes
// are folded as they are read (folded text reads the same), each offset's
// headLen bytes looked up in heads, and the forms compared whole only at
// an offset they may start at.
func holdsIn[T string | []byte](r *Redactor, s T) bool {
	if r.short {
		for at := range len(s) {
			if formAt(r, s, at) {
				return true
			}
		}
		return false
	}
	var w uint32 // the last headLen bytes read, folded, the first of them highest
	for i := 0; i < len(s); i++ {
		w = w<<8 | uint32(lowerASCII(s[i]))
		if i >= headLen-1 && r.heads.has(w) && formAt(r, s, i-(headLen-1)) {
			return true
		}
	}
	return false
}

// formAt reports whether one of the forms starts at offset at of s, in any
// case.
func formAt[T string | []byte](r *Redactor, s T, at int) bool {
	rest := s[at:]
forms:
	for _, f := range r.forms {
		if len(f) > len(rest) {
			continue
		}
		for j := 0; j < len(f); j++ {
			if lowerASCII(rest[j]) != f[j] {
				continue forms
			}
		}
		return true
	}
	return false
}

// holdsJoined reports whether s, its lines joined (see joinLines), holds
// one of the forms, in any case: a text of up to 1 KiB is joined on the
// stack.
func (r *Redactor) holdsJoined(s string) bool {
	var buf [1 << 10]byte
	joined := buf[:0]
	if len(s) > len(buf) {
		joined = make([]byte, 0, len(s))
	}
	joined, _ = joinLines(joined, s, nil)
	return r.holdsFolded(joined)
}

// joinLines appends s to dst folded (see Fold) and with its lines joined:
// without its CR and LF bytes, and without the "=" that ends a line of
// quoted-printable text (a soft line break), so that a form a MIME or PEM
// encoder wrapped over lines (base64 at 76 or 64 characters a line, hex,
// base32) or a quoted-printable one split is whole again. When at is not
// nil, the offset in s of each byte kept is appended to it.
func joinLines[T string | []byte](dst []byte, s T, at []int) ([]byte, []int) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' || (c == '=' && i+1 < len(s) && (s[i+1] == '\r' || s[i+1] == '\n')) {
			continue
		}
		dst = append(dst, lowerASCII(c))
		if at != nil {
			at = append(at, i)
		}
	}
	return dst, at
}

// redactJoined replaces each form that the lines of s hold once joined
// (see joinLines), with the line breaks inside it, by the Marker.
func (r *Redactor) redactJoined(s string) string {
	joined, at := joinLines(make([]byte, 0, len(s)), s, make([]int, 0, len(s)))
	var spans [][2]int // in s, in order, not overlapping
	for _, f := range r.bforms {
		for i := 0; ; {
			j := bytes.Index(joined[i:], f)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(f)
			spans = append(spans, [2]int{at[start], at[end-1] + 1})
			for k := start; k < end; k++ {
				joined[k] = 0 // found once, by the longest form
			}
			i = end
		}
	}
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		if sp[0] < last {
			sp[0] = last
		}
		if sp[1] <= sp[0] {
			continue
		}
		b.WriteString(s[last:sp[0]])
		b.WriteString(Marker)
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// RedactBytes returns b without the keys, as Redact does: b itself when it
// holds none, found without copying it (its literal forms are looked for
// a window at a time), so that a long answer costs no copy; a copy when it
// holds one, or when it holds escapes (& \ %) and a key may hide in them.
func (r *Redactor) RedactBytes(b []byte) []byte {
	forms := r.Forms()
	if len(forms) == 0 || len(b) < r.shortest {
		return b
	}
	if !r.holdsFormBytes(b) && !bytes.ContainsAny(b, `&\%`) {
		return b
	}
	if s := string(b); r.Redact(s) != s {
		return []byte(r.Redact(s))
	}
	return b
}

// holdsFormBytes reports whether b holds one of the forms, in any case,
// folding it a window at a time into a buffer of 64 KiB and the longest
// form, each window overlapping the one before by that form's length.
func (r *Redactor) holdsFormBytes(b []byte) bool {
	const window = 64 << 10
	// A form wrapped over lines (see joinLines) spans at most three times
	// its length: a line break after each of its bytes.
	overlap := 3*len(r.forms[0]) - 1
	folded := make([]byte, 0, min(len(b), window+overlap))
	for start := 0; start < len(b); start += window {
		w := b[start:min(len(b), start+window+overlap)]
		lines := bytes.ContainsAny(w, "\r\n")
		if !lines || r.eq {
			if folded = Fold(folded, w); r.holdsFolded(folded) {
				return true
			}
		}
		if lines {
			if folded, _ = joinLines(folded[:0], w, nil); r.holdsFolded(folded) {
				return true
			}
		}
		if start+window+overlap >= len(b) {
			break
		}
	}
	return false
}

// Hide writes 'x' over every byte of b that is part of a key Redact would
// remove (in a literal form, across line breaks, or escaped), keeping b's
// length, and reports whether it wrote any: for bytes that must keep their
// length, such as a long body written over a window at a time, whose
// windows overlap by KeyLen. The line breaks inside a wrapped form are
// kept.
func (r *Redactor) Hide(b []byte) bool {
	if len(r.Forms()) == 0 || len(b) < r.shortest {
		return false
	}
	folded := Fold(make([]byte, 0, len(b)), b)
	hid := r.hideForms(b, folded, nil)
	if bytes.ContainsAny(b, "\r\n") {
		joined, at := joinLines(folded[:0], b, make([]int, 0, len(b)))
		hid = r.hideForms(b, joined, at) || hid
	}
	if bytes.ContainsAny(b, `&\%`) {
		hid = r.hideEscaped(b) || hid
	}
	return hid
}

// hideForms writes 'x' over each form that folded (b folded, or its lines
// joined, when at gives the offset in b of each of its bytes) holds, in b
// and in folded alike, and reports whether it found one.
func (r *Redactor) hideForms(b, folded []byte, at []int) bool {
	hid := false
	for _, f := range r.bforms {
		for i := 0; ; {
			j := bytes.Index(folded[i:], f)
			if j < 0 {
				break
			}
			for k := i + j; k < i+j+len(f); k++ {
				if at != nil {
					b[at[k]] = 'x'
				} else {
					b[k] = 'x'
				}
				folded[k] = 'x'
			}
			hid, i = true, i+j+len(f)
		}
	}
	return hid
}

// hideEscaped writes 'x' over each key b holds escaped (see
// redactEscaped), and reports whether it found one.
func (r *Redactor) hideEscaped(b []byte) bool {
	hid := false
	s := string(b)
	for _, k := range r.keys {
		if len(k) < MinKey {
			continue
		}
		for i := 0; i < len(s); i++ {
			if c := s[i]; c != k[0] && c != '&' && c != '\\' && c != '%' {
				continue
			}
			if n := matchEscaped(s[i:], k); n > 0 {
				for j := i; j < i+n; j++ {
					b[j] = 'x'
				}
				hid, i = true, i+n-1
			}
		}
	}
	return hid
}

// Holds reports whether s holds one of the keys, in any form Redact
// removes.
func (r *Redactor) Holds(s string) bool { return r.Redact(s) != s }

// Forms returns the texts Redact looks for literally, folded to lower case
// (see Fold) and longest first, so that bytes that are not text can be
// searched for them: each key as it is and in the forms an echo gives it,
// escaped for a URL's query or path, quoted in Go or JSON (%q, \/), in a
// JSON pointer (jsontext names a member by it), in hex (either case, any
// mix), and in base64 (standard or URL alphabet) and base32 (standard or
// hex alphabet, padded or not, either case) at any offset in what was
// encoded, as in Basic auth, and in UTF-16 (either byte order). Mixed
// escapes, whose forms are too many to list, and forms wrapped over lines
// are matched by Redact and Hide alone. The slice is shared: do not
// change it.
func (r *Redactor) Forms() []string {
	if r == nil {
		return nil
	}
	r.once.Do(r.workOut)
	return r.forms
}

// formsOf returns the literal forms of one key, unfolded.
func formsOf(k string) []string {
	q, p := url.QueryEscape(k), url.PathEscape(k)
	out := []string{k, q, p, lowerHex(q), lowerHex(p), strings.ReplaceAll(k, "/", `\/`),
		strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), strconv.Quote(k)[1 : len(strconv.Quote(k))-1],
		hex.EncodeToString([]byte(k))}
	out = append(out, utf16Forms(k)...)
	out = append(out, cores(k, 3, 4, base64.RawStdEncoding.EncodeToString, base64.RawURLEncoding.EncodeToString)...)
	out = append(out, cores(k, 5, 8,
		base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString,
		base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString)...)
	return out
}

// utf16Forms are k in UTF-16, little- and big-endian, as a body whose
// text is UTF-16 (an error page of some servers) holds it. Each is of even
// length, so the Marker (also even) keeps the text's code units aligned.
func utf16Forms(k string) []string {
	var le, be []byte
	for _, u := range utf16.Encode([]rune(k)) {
		le = append(le, byte(u), byte(u>>8))
		be = append(be, byte(u>>8), byte(u))
	}
	return []string{string(le), string(be)}
}

func (r *Redactor) workOut() {
	var forms []string
	for _, k := range r.keys {
		if len(k) < MinKey {
			continue
		}
		for _, f := range formsOf(k) {
			if f = foldASCII(f); f != "" && !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
		// Two layers of escapes at most, each at most maxEscape bytes.
		r.escaped = max(r.escaped, len(k)*2*maxEscape)
		if r.shortest == 0 || len(k) < r.shortest {
			r.shortest = len(k) // every form is at least as long as its key
		}
	}
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	r.forms = forms
	for _, f := range forms {
		r.eq = r.eq || strings.Contains(f, "=")
		r.bforms = append(r.bforms, []byte(f))
		if len(f) < headLen {
			r.short = true
			continue
		}
		r.heads.add(uint32(f[0])<<24 | uint32(f[1])<<16 | uint32(f[2])<<8 | uint32(f[3]))
	}
}

// cores are the parts of the encodings of k (by each of encs, whose groups
// are of in bytes and out characters) that encode k whatever came before
// it (0 to in-1 bytes past a group) and after it: the characters that
// depend on k's bytes alone. Padding, which follows the last group, is no
// part of them, so padded and unpadded texts both hold them. Keys shorter
// than 8 bytes have none, so that a short core never matches by chance.
func cores(k string, in, out int, encs ...func([]byte) string) []string {
	if len(k) < 8 {
		return nil
	}
	var res []string
	bits := 8 * in / out // bits a character holds
	for pad := 0; pad < in; pad++ {
		src := append(make([]byte, pad), k...)
		skip := (pad*8 + bits - 1) / bits // characters that hold a bit of the bytes before k
		keep := len(src) * 8 / bits       // characters whose bits are all known
		for _, enc := range encs {
			res = append(res, enc(src)[skip:keep])
		}
	}
	return res
}

// Fold appends b to dst[:0] with ASCII letters in lower case: the Forms
// are folded so, since a server may echo a key in another case, and bytes
// are looked through for them once folded alike.
func Fold(dst, b []byte) []byte {
	dst = append(dst[:0], b...)
	for i, c := range dst {
		dst[i] = lowerASCII(c)
	}
	return dst
}

// foldASCII is s with its ASCII letters in lower case: the same length, so
// that an offset in one is an offset in the other.
func foldASCII(s string) string {
	i := strings.IndexFunc(s, func(c rune) bool { return 'A' <= c && c <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		b[i] = lowerASCII(b[i])
	}
	return string(b)
}

// replaceFolded replaces in s every place where folded, s folded, holds f.
func replaceFolded(s, folded, f string) string {
	var b strings.Builder
	last := 0
	for {
		i := strings.Index(folded[last:], f)
		if i < 0 {
			break
		}
		b.WriteString(s[last : last+i])
		b.WriteString(Marker)
		last += i + len(f)
	}
	b.WriteString(s[last:])
	return b.String()
}

// maxEscape is the longest escape redactEscaped reads for one byte of a
// key, an HTML character reference such as "&#x00000027;".
const maxEscape = 12

// redactEscaped removes the keys written with some or all of their
// characters escaped, in any mix: HTML character references (&amp; &quot;
// &#39; &#x27; ...), JSON and Go escapes (\u0026 \" \/ \x41) and URL
// percent escapes, as an HTML error page, an escaping template or a JSON
// encoder echoes them. The forms are too many to list in Forms.
func (r *Redactor) redactEscaped(s string) string {
	for _, k := range r.keys {
		if len(k) < MinKey {
			continue
		}
		var b strings.Builder
		last := 0
		for i := 0; i < len(s); i++ {
			if c := s[i]; c != k[0] && c != '&' && c != '\\' && c != '%' {
				continue
			}
			if n := matchEscaped(s[i:], k); n > 0 {
				b.WriteString(s[last:i])
				b.WriteString(Marker)
				last = i + n
				i += n - 1
			}
		}
		if last > 0 {
			b.WriteString(s[last:])
			s = b.String()
		}
	}
	return s
}

// matchEscaped returns the length of the prefix of s that reads as key once
// its escapes are decoded, or 0. Where a character of s both is the key's
// next byte and starts an escape ("&" of "&amp;"), both readings are tried.
func matchEscaped(s, key string) int {
	if key == "" {
		return 0
	}
	p := 0
	for j := 0; j < len(key); {
		if p >= len(s) {
			return 0
		}
		for _, e := range escapesAt(s[p:]) {
			if !strings.HasPrefix(key[j:], e.dec) {
				continue
			}
			if j+len(e.dec) == len(key) {
				return p + e.n
			}
			if m := matchEscaped(s[p+e.n:], key[j+len(e.dec):]); m > 0 {
				return p + e.n + m
			}
		}
		if s[p] != key[j] {
			return 0
		}
		p, j = p+1, j+1
	}
	return p
}

// An escape is what an escape at the start of a text stands for, and how
// many bytes of the text it takes.
type escape struct {
	dec string
	n   int
}

// escapesAt returns the readings of the escape at the start of s: the
// escape itself and, when what it stands for starts another escape, the two
// layers together ("\u0026amp;" is a JSON-escaped "&amp;", so "&").
func escapesAt(s string) []escape {
	dec, n := unescapeOne(s)
	if n == 0 {
		return nil
	}
	out := []escape{{dec, n}}
	if strings.ContainsAny(dec[:1], `&\%`) {
		t := dec + s[n:min(len(s), n+maxEscape)]
		if dec2, n2 := unescapeOne(t); n2 > len(dec) {
			out = append(out, escape{dec2, n + n2 - len(dec)})
		}
	}
	return out
}

// unescapeOne decodes the escape at the start of s and returns what it
// stands for and its length, or 0 when s starts with no escape.
func unescapeOne(s string) (string, int) {
	switch {
	case s[0] == '&':
		end := strings.IndexByte(s[:min(len(s), maxEscape)], ';')
		if end > 0 {
			if d := html.UnescapeString(s[:end+1]); d != s[:end+1] && d != "" {
				return d, end + 1
			}
		}
	case s[0] == '%' && len(s) >= 3:
		return percentEscape(s)
	case s[0] == '\\' && len(s) >= 2:
		switch s[1] {
		case 'u':
			return hexEscape(s, 2, 4)
		case 'x':
			return hexEscape(s, 2, 2)
		case '"', '\\', '/', '\'':
			return s[1:2], 2
		}
	}
	return "", 0
}

// percentEscape decodes the percent escape at the start of s: %XX, or
// %uXXXX (a UTF-16 unit, as JavaScript's escape() and some servers write
// it).
func percentEscape(s string) (string, int) {
	if s[1] == 'u' || s[1] == 'U' {
		return hexEscape(s, 2, 4)
	}
	return hexEscape(s, 1, 2)
}

// hexEscape decodes the digits hex digits after the prefix of length skip
// at the start of s: two make a byte, four a character.
func hexEscape(s string, skip, digits int) (string, int) {
	n := skip + digits
	if len(s) < n {
		return "", 0
	}
	v, err := strconv.ParseUint(s[skip:n], 16, 4*digits)
	switch {
	case err != nil:
		return "", 0
	case digits == 2:
		return string([]byte{byte(v)}), n
	}
	return string(rune(v)), n
}

// lowerHex writes the %XX escapes of s in lower case.
func lowerHex(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerASCII(b[i+1]), lowerASCII(b[i+2])
		}
	}
	return string(b)
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// KeyLen is the length of the longest text Redact removes: a cut made this
// far past a limit cannot split a key that Redact would have found.
func (r *Redactor) KeyLen() int {
	f := r.Forms() // works out escaped too, once
	if len(f) == 0 {
		return 0
	}
	return max(r.escaped, len(f[0]))
}

// Keep returns at most n bytes of s, redacted first (so a key that
// straddles the cut is gone too), cut on a rune boundary.
func (r *Redactor) Keep(s []byte, n int) []byte {
	window := s[:min(len(s), n+r.KeyLen())]
	out := []byte(r.Redact(string(window)))
	if len(out) <= n {
		return out
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut]
}

// A redactedError is an error whose text held a key: it says the text
// redacted and unwraps to its cause, redacted the same way.
type redactedError struct {
	err  error
	text string
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }

// Err returns err without the keys, in its own text and in the text of
// every error it wraps, which a caller reaches with errors.As or Unwrap: a
// *url.Error (whose URL may be a redirect's or a download's) keeps its
// type with its URL redacted, any other error whose text holds a key
// becomes one that says its text redacted. Errors below the last one that
// holds a key are kept as they are, so errors.Is still finds
// context.DeadlineExceeded, ECONNREFUSED or io.ErrUnexpectedEOF.
func (r *Redactor) Err(err error) error {
	holds := false
	for e := err; e != nil && !holds; e = errors.Unwrap(e) {
		holds = r.Holds(e.Error())
	}
	if !holds {
		return err
	}
	if ue, ok := err.(*url.Error); ok {
		return &url.Error{Op: ue.Op, URL: r.Redact(ue.URL), Err: r.Err(ue.Err)}
	}
	return &redactedError{err: r.Err(errors.Unwrap(err)), text: r.Redact(err.Error())}
}
