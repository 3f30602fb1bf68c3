package cmdutil

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable is the one way a field from a ledger or the service (an
// error, a message, a request id, a link, an id, a file name) reaches the
// terminal: its control characters (C0 but tab, DEL, C1), the Unicode
// marks and overrides that reorder text (bidi), and bytes that are not
// UTF-8 are written as escapes (\x1b, \u009b, \u202e), so that no answer
// can move the cursor, clear the screen, set a window's title or make a
// line read other than it is. Text without them is returned as it is.
func Printable(s string) string {
	i := strings.IndexFunc(s, unsafeRune)
	if i < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether r is escaped by Printable.
func unsafeRune(r rune) bool {
	switch {
	case r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // Arabic letter mark, LRM, RLM, embeddings and overrides, isolates
	}
	return false
}

// PrintableLines is Printable for text of several lines: each line is
// escaped, the line ends kept.
func PrintableLines(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		body, nl := strings.CutSuffix(l, "\n")
		lines[i] = Printable(body)
		if nl {
			lines[i] += "\n"
		}
	}
	return strings.Join(lines, "")
}

// PrintableJSON is Printable for JSON text that encoding/json wrote: it
// escapes C0 controls itself, and PrintableJSON writes the rest that
// printable escapes (DEL, C1, bidi marks and overrides) as \u escapes,
// which leave the JSON what it was. They can only be inside strings.
func PrintableJSON(b []byte) []byte {
	unsafe := func(r rune) bool { return r >= 0x7f && unsafeRune(r) } // C0 is JSON's own, or its white space
	if !bytes.ContainsFunc(b, unsafe) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if unsafe(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}
