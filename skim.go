package creative

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// An image answer is almost all base64: megabytes of one string that the
// JSON walk would scan byte by byte only to hand it to the base64 decoder,
// which reads it again. Skimming walks a skeleton of the body instead, in
// which every long string without escapes is a placeholder; the data decoder
// reads the string itself from the body and decodes it in place, so its
// bytes are read once by the skim, to find its end, and once by the SIMD
// decoder. The skeleton is made as the walk reads it, and a placeholder
// ends a read: the walk reaches a string while the skim's reading of it is
// still in the cache, so the decoder reads it from there, not from memory.
// A long string no decoder takes is checked after the walk, so the walk
// accepts no body the whole walk would refuse.

// skimMin is the length from which a string is left out of the skeleton.
const skimMin = 4 << 10

// placeholder opens a left-out string in the skeleton, followed by its
// index. A string of the body may read the same: a placeholder is told by
// where it is in the skeleton (longString), not by its text.
const placeholder = `\u0000#`

// A longString is a string of the body left out of the skeleton: its text
// is body[start:end], between the quotes, and at is where the placeholder's
// string that stands for it starts in the skeleton.
type longString struct {
	start, end int
	at         int64
	taken      bool // a data decoder read it
}

// skeleton reads the skeleton of its decoder's body, skimming the body as
// it goes: the body up to a long string's opening quote, then the
// placeholder, its index and the closing quote, which end the read.
type skeleton struct {
	bd          *bodyDecoder
	emit, scan  int    // the body is read up to emit, and looked through up to scan
	after       int    // where the body goes on once pend is read
	pend        []byte // a placeholder's string but its opening quote
	sent        int    // the bytes of pend read
	out         int64  // bytes of skeleton read so far
	placeholder bool   // pend holds a placeholder
	// lazy: the walk reads the skeleton as it is made, through its
	// decoder's buffer, which gave up when more than lazyMax bytes came
	// before a data decoder took a long string: a data URL's or an escaped
	// string's megabytes would be copied there, where the skeleton made
	// whole first leaves the body as it came (envelope).
	lazy, gaveUp bool
}

// lazyMax is how much of the skeleton a lazy walk reads before a data
// decoder takes a long string: an image answer's envelope opens in a few
// dozen bytes.
const lazyMax = 16 << 10

// reset starts the skeleton of body.
func (sk *skeleton) reset(bd *bodyDecoder, body []byte, lazy bool) {
	bd.body, bd.long, bd.taken = body, bd.long[:0], 0
	*sk = skeleton{bd: bd, pend: sk.pend[:0], lazy: lazy}
}

// Read gives the skeleton's next bytes, ending the read at a placeholder's
// closing quote so that the walk decodes its string before the skim looks
// further; a lazy skeleton fails with errGaveUp past lazyMax.
func (sk *skeleton) Read(p []byte) (int, error) {
	body := sk.bd.body
	n := 0
	for n < len(p) {
		if sk.lazy && sk.bd.taken == 0 && sk.out+int64(n) > lazyMax {
			sk.gaveUp = true
			return 0, errGaveUp
		}
		switch {
		case sk.emit < sk.scan:
			c := copy(p[n:], body[sk.emit:sk.scan])
			sk.emit += c
			n += c
		case sk.placeholder:
			c := copy(p[n:], sk.pend[sk.sent:])
			sk.sent += c
			n += c
			if sk.sent == len(sk.pend) {
				sk.placeholder = false
				sk.emit, sk.scan = sk.after, sk.after
				sk.out += int64(n)
				return n, nil
			}
		case sk.scan < len(body):
			sk.next(int64(n))
		default:
			sk.out += int64(n)
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
	}
	sk.out += int64(n)
	return n, nil
}

// next looks through the body from scan for the next long string, when
// read bytes of this read were given already. It leaves scan at the
// string's opening quote and the placeholder in pend, or, when there is
// none, scan at the body's end.
func (sk *skeleton) next(read int64) {
	body := sk.bd.body
	for i := sk.scan; ; {
		q := bytes.IndexByte(body[i:], '"')
		if q < 0 {
			sk.scan = len(body)
			return
		}
		start := i + q + 1
		end, escaped := closingQuote(body, start)
		if end < 0 {
			sk.scan = len(body)
			return
		}
		i = end + 1
		if end-start < skimMin || bytes.HasPrefix(body[start:], []byte("data:")) ||
			escaped || isName(body[end+1:]) {
			if sk.lazy && sk.bd.taken == 0 && i-sk.emit > lazyMax {
				sk.scan = i // past what the walk reads before it gives up
				return
			}
			continue
		}
		bd := sk.bd
		sk.pend = append(sk.pend[:0], placeholder...)
		sk.pend = strconv.AppendInt(sk.pend, int64(len(bd.long)), 10)
		sk.pend = append(sk.pend, '"')
		bd.long = append(bd.long, longString{start: start, end: end, at: sk.out + read + int64(start-1-sk.emit)})
		sk.scan, sk.after, sk.sent, sk.placeholder = start, end+1, 0, true
		return
	}
}

// errGaveUp is the read error of a lazy walk that gave up.
var errGaveUp = errors.New("the skeleton is made whole first")

// skim returns the whole skeleton of body, with the left-out strings in
// bd.long, or body itself when it leaves nothing out: the skeleton is read
// once to find them, and copied only when there are some.
func (bd *bodyDecoder) skim(body []byte) []byte {
	bd.sk.reset(bd, body, false)
	var scratch [8 << 10]byte
	for {
		if _, err := bd.sk.Read(scratch[:]); err != nil {
			break
		}
	}
	if len(bd.long) == 0 {
		return body
	}
	skel, last := bd.skel[:0], 0
	for i, ls := range bd.long {
		skel = append(skel, body[last:ls.start]...)
		skel = append(skel, placeholder...)
		skel = strconv.AppendInt(skel, int64(i), 10)
		last = ls.end
	}
	bd.skel = append(skel, body[last:]...)
	return bd.skel
}

// isName reports whether the string that rest follows is an object's member
// name: the walk must see names whole, to refuse duplicates.
func isName(rest []byte) bool {
	rest = bytes.TrimLeft(rest, " \t\r\n")
	return len(rest) > 0 && rest[0] == ':'
}

// scanWindow is how much of a string closingQuote looks through at a time:
// its search for a backslash reads again what its search for the quote
// just read, while it is still in the cache.
const scanWindow = 16 << 10

// closingQuote returns the index of the quote that closes the string whose
// text starts at start, or -1, and whether the text holds a backslash.
func closingQuote(body []byte, start int) (int, bool) {
	escaped := false
	for k := start; k < len(body); {
		w := body[k:min(k+scanWindow, len(body))]
		q := bytes.IndexByte(w, '"')
		if q < 0 {
			escaped = escaped || bytes.IndexByte(w, '\\') >= 0
			k += len(w)
			continue
		}
		escaped = escaped || bytes.IndexByte(w[:q], '\\') >= 0
		q += k
		slashes := 0
		for j := q - 1; escaped && j >= start && body[j] == '\\'; j-- {
			slashes++
		}
		if slashes%2 == 0 {
			return q, escaped
		}
		k = q + 1
	}
	return -1, escaped
}

// longString reports whether raw, the value the walk read last, is a
// placeholder, and which string of the body it stands for. With take, the
// caller checks the string itself, and checkLeftOut passes it over.
func (bd *bodyDecoder) longString(raw []byte, take bool) (longString, bool) {
	if len(bd.long) == 0 || len(raw) < len(placeholder)+3 || !bytes.HasPrefix(raw[1:], []byte(placeholder)) {
		return longString{}, false
	}
	i, err := strconv.Atoi(string(raw[1+len(placeholder) : len(raw)-1]))
	if err != nil || i < 0 || i >= len(bd.long) || bd.long[i].at != bd.InputOffset()-int64(len(raw)) {
		return longString{}, false // a string of the body that reads as one
	}
	if take && !bd.long[i].taken {
		bd.long[i].taken = true
		bd.taken++
	}
	return bd.long[i], true
}

// errControl is the error of a string of the body that JSON does not allow.
var errControl = errors.New("a string holds a control character or invalid UTF-8")

// checkLeftOut checks, after a walk that succeeded, the left-out strings no
// data decoder took (a decoder checks those it takes): they must be JSON
// strings as the whole walk would have read them.
func (bd *bodyDecoder) checkLeftOut() error {
	if bd.taken == len(bd.long) {
		return nil
	}
	for _, ls := range bd.long {
		if ls.taken {
			continue
		}
		text := bd.body[ls.start:ls.end]
		if bytes.ContainsFunc(text, func(r rune) bool { return r < ' ' }) || !utf8.Valid(text) {
			return &envelopeError{msg: "not valid JSON: " + errControl.Error()}
		}
	}
	return nil
}

// inBody returns err, a syntax error of a walk over the skeleton, with its
// offset in the body: each placeholder before it stands for a longer
// string, and an error must speak of the body its caller has.
func (bd *bodyDecoder) inBody(err error) error {
	var se *jsontext.SyntacticError
	if len(bd.long) == 0 || !errors.As(err, &se) {
		return err
	}
	shift := int64(0)
	for i, ls := range bd.long {
		text := int64(len(placeholder) + len(strconv.Itoa(i)))
		if se.ByteOffset < ls.at+text+2 { // not past its closing quote
			break
		}
		shift += int64(ls.end-ls.start) - text
	}
	se.ByteOffset += shift
	return err
}
