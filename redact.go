package creative

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// This file is the redactor: every string from the network passes it before
// it reaches an error, a log line or a caller, and before it is cut, so that
// an access key a server echoes back, in whatever escaped form, never leaves
// the SDK.

// A redactor removes the access keys of one call from text. The zero value
// removes nothing. It works out the forms of its keys once, when first
// needed, and is safe for concurrent use after that.
type redactor struct {
	keys []string // the keys to remove: the call's, and the Client's

	once    sync.Once
	forms   []string // what redact removes; see secrets
	escaped int      // the longest escaped form of a key redactEscaped reads
}

// newRedactor returns a redactor of keys, the call's and then the Client's:
// a server may know the Client's key from earlier calls even when a call
// sends its own.
func newRedactor(keys ...[]string) redactor {
	var all []string
	for _, ks := range keys {
		for _, k := range ks {
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
	}
	return redactor{keys: all}
}

// redact removes the access keys from text that came from the network, in
// case a server echoes them: every string that leaves the SDK passes here,
// before it is truncated.
func (r *redactor) redact(s string) string {
	forms := r.secrets()
	if len(forms) == 0 {
		return s
	}
	folded := foldASCII(s)
	for _, f := range forms {
		if strings.Contains(folded, f) {
			s = replaceFolded(s, folded, f)
			folded = foldASCII(s)
		}
	}
	if strings.ContainsAny(s, `&\%`) {
		s = r.redactEscaped(s)
	}
	return s
}

// holds reports whether s holds one of the access keys, in any form redact
// removes.
func (r *redactor) holds(s string) bool { return r.redact(s) != s }

// secrets are the texts redact removes, in any mix of upper and lower case
// (they are kept folded to lower case): each key as it is and in the forms
// an echo gives it, escaped for a URL's query or path, quoted in Go or
// JSON (%q, \/), in a JSON pointer (jsontext names a member by it), in
// hex, in base64 (standard or URL alphabet, at any offset in what was
// encoded, as in Basic auth) and in base32 (standard or hex alphabet, at
// any offset), longest first. Keys shorter than 4 bytes are not looked
// for. Mixed escapes, whose forms are too many to list, are matched by
// redactEscaped.
func (r *redactor) secrets() []string {
	r.once.Do(func() {
		var forms []string
		add := func(f string) {
			if f = foldASCII(f); f != "" && !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
		for _, k := range r.keys {
			if len(k) < 4 {
				continue
			}
			q, p := url.QueryEscape(k), url.PathEscape(k)
			for _, f := range []string{k, q, p, lowerHex(q), lowerHex(p), strings.ReplaceAll(k, "/", `\/`),
				strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), strconv.Quote(k)[1 : len(strconv.Quote(k))-1]} {
				add(f)
			}
			add(hex.EncodeToString([]byte(k)))
			for _, f := range base64Cores(k) {
				add(f)
			}
			for _, f := range base32Cores(k) {
				add(f)
			}
			// Two layers of escapes at most, each at most maxEscape bytes.
			r.escaped = max(r.escaped, len(k)*2*maxEscape)
		}
		slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
		r.forms = forms
	})
	return r.forms
}

// base64Cores are the parts of base64 texts that encode k whatever came
// before it (0, 1 or 2 bytes past a group of three) and after it: the
// characters that depend on k's bytes alone. Keys shorter than 8 bytes
// have none, so that a short core never matches by chance.
func base64Cores(k string) []string {
	if len(k) < 8 {
		return nil
	}
	var out []string
	for pad := 0; pad < 3; pad++ {
		src := append(make([]byte, pad), k...)
		skip := (pad*8 + 5) / 6  // characters that hold a bit of the bytes before k
		keep := len(src) * 8 / 6 // characters whose bits are all known
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString(src)[skip:keep])
		}
	}
	return out
}

// base32Cores are, as base64Cores, the parts of base32 texts (standard or
// extended hex alphabet) that encode k whatever came before it (0 to 4
// bytes past a group of five) and after it.
func base32Cores(k string) []string {
	if len(k) < 8 {
		return nil
	}
	var out []string
	for pad := 0; pad < 5; pad++ {
		src := append(make([]byte, pad), k...)
		skip := (pad*8 + 4) / 5  // characters that hold a bit of the bytes before k
		keep := len(src) * 8 / 5 // characters whose bits are all known
		for _, enc := range []*base32.Encoding{base32.StdEncoding, base32.HexEncoding} {
			out = append(out, enc.WithPadding(base32.NoPadding).EncodeToString(src)[skip:keep])
		}
	}
	return out
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
		b.WriteString(redacted)
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
// encoder echoes them. The forms are too many to list in secrets.
func (r *redactor) redactEscaped(s string) string {
	r.secrets()
	for _, k := range r.keys {
		if len(k) < 4 {
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
				b.WriteString(redacted)
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
		return hexEscape(s, 1, 2)
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

// keyLen is the length of the longest text redact removes: a cut made this
// far past a limit cannot split a key that redact would have found.
func (r *redactor) keyLen() int {
	f := r.secrets() // works out escaped too, once
	n := r.escaped
	if len(f) > 0 {
		n = max(n, len(f[0]))
	}
	return n
}

// keep returns at most n bytes of s, redacted first (so a key that straddles
// the cut is gone too), cut on a rune boundary.
func (r *redactor) keep(s []byte, n int) []byte {
	window := s[:min(len(s), n+r.keyLen())]
	out := []byte(r.redact(string(window)))
	if len(out) <= n {
		return out
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut]
}

// message bounds a message from the service for an error. Only the part
// that may be kept is copied.
func (r *redactor) message(s string) string {
	if len(s) <= maxMessage {
		return r.redact(s)
	}
	kept := r.keep([]byte(s[:min(len(s), maxMessage+r.keyLen())]), maxMessage)
	return fmt.Sprintf("%s... (%d bytes in all)", kept, len(s))
}

// redactedError is an error whose text held a key: it says the text
// redacted and unwraps to its cause, redacted the same way.
type redactedError struct {
	err  error
	text string
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr returns err without the keys, in its own text and in the text
// of every error it wraps, which a caller reaches with errors.As or Unwrap:
// a *url.Error (whose URL may be a redirect's or a Download's) keeps its
// type with its URL redacted, any other error whose text holds a key
// becomes a redactedError. Errors below the last one that holds a key are
// kept as they are, so errors.Is still finds context.DeadlineExceeded,
// ECONNREFUSED or io.ErrUnexpectedEOF.
func (r *redactor) redactErr(err error) error {
	holds := false
	for e := err; e != nil && !holds; e = errors.Unwrap(e) {
		holds = r.holds(e.Error())
	}
	if !holds {
		return err
	}
	if ue, ok := err.(*url.Error); ok {
		return &url.Error{Op: ue.Op, URL: r.redact(ue.URL), Err: r.redactErr(ue.Err)}
	}
	return &redactedError{err: r.redactErr(errors.Unwrap(err)), text: r.redact(err.Error())}
}

// redactResponse returns the copy of resp a caller may keep (the answer of
// WithResponseInto), with body as its Body: everything the other end wrote
// into it redacted (the status line, header names and values, trailers)
// and so every answer of the redirects before it, which it reaches through
// Request.Response. Each request of the chain keeps its headers but the
// access key. Trailers are those declared when it is handed over: values
// that arrive later stay in the original, never reach the caller.
func (r *redactor) redactResponse(resp *http.Response, body io.ReadCloser) *http.Response {
	out := *resp
	out.Body = body
	out.Status = string(r.keep([]byte(resp.Status), maxMessage))
	out.Header = r.redactHeader(resp.Header)
	if resp.Trailer != nil {
		out.Trailer = r.redactHeader(resp.Trailer)
	}
	if resp.Request != nil {
		req := *resp.Request
		req.Header = r.redactHeader(req.Header)
		req.Header.Del(headerAccessKey)
		if req.Response != nil {
			req.Response = r.redactResponse(req.Response, http.NoBody)
		}
		out.Request = &req
	}
	return &out
}
