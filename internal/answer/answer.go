// Package answer is the one check of every output a caller keeps: a file
// is what its operation promises (an image, audio, a video), told by the
// content's own signature in the table of package sniff, and whole where
// its format states its length or its end (WAV's and WebP's RIFF size,
// PNG's IEND, JPEG's end-of-image marker, MP4's boxes, GIF's trailer).
// The check sits between the answer and the file as the bytes pass, so it
// buffers nothing but a few header bytes, and its extension comes from the
// checked content, never from a link's name.
package answer

import (
	"fmt"
	"io"
	"slices"

	"github.com/creativegen/creative-go/internal/ops"
	"github.com/creativegen/creative-go/internal/sniff"
)

// A Kind is what an operation's answer is: text, or a file of one kind.
type Kind int

// The kinds of answer. Text is kept as text, never as a file.
const (
	Text Kind = iota
	Image
	Audio
	Video
)

func (k Kind) String() string {
	switch k {
	case Image:
		return "an image"
	case Audio:
		return "audio"
	case Video:
		return "a video"
	}
	return "text"
}

// For returns the kind of the answer of the operation named op (such as
// "audio/text-to-music"): the area of its row in package ops, since each
// area's operations answer in its own medium. An operation the table does
// not know is Text, of which no file is accepted.
func For(op string) Kind {
	o, ok := ops.Lookup(op)
	if !ok || o.Result == ops.Writer {
		return Text
	}
	switch o.Area() {
	case "image":
		return Image
	case "audio":
		return Audio
	case "video":
		return Video
	}
	return Text
}

// accepts are the content types, as package sniff names them, that a file
// of each kind may be. Audio may come in an MP4 or WebM container, whose
// signature does not tell sound from moving pictures; a video may be an
// animated GIF (the fake service's zoom is one).
var accepts = map[Kind][]string{
	Image: {"image/png", "image/jpeg", "image/webp", "image/gif"},
	Audio: {"audio/wav", "audio/mpeg", "audio/ogg", "audio/flac", "audio/aac", "audio/mp4", "video/mp4", "video/webm"},
	Video: {"video/mp4", "video/webm", "image/gif"},
}

// headLen is how many first bytes tell a type: an MP4's ftyp brand and a
// RIFF form end at 12.
const headLen = 16

// An Error is a file that is not what its operation promises, or is cut.
type Error struct {
	Kind Kind   // what the operation promises
	Type string // the content type the bytes show, "" when they show none
	// Cut is set when the file is of the kind but ends before its format
	// says it does: a download that a rerun fetches again.
	Cut bool
	Why string
}

func (e *Error) Error() string { return "answer: " + e.Why }

// A Check is an io.Writer that passes what it is given on to another,
// checking it against a kind as it goes. It holds back the first bytes
// until they tell the type; a type the kind does not accept fails the
// Write that shows it, before a byte reaches the writer behind.
type Check struct {
	kind  Kind
	w     io.Writer
	head  []byte
	ctype string
	n     int64
	whole walker
	err   error
}

// New returns a Check of kind k in front of w.
func New(k Kind, w io.Writer) *Check { return &Check{kind: k, w: w} }

// Fill calls fill with a Check of op's kind in front of w, and then checks
// that what fill wrote ended whole. It returns what fill returns, or the
// *Error of a file that is not what op promises.
func Fill(op string, w io.Writer, fill func(io.Writer) (int64, error)) (int64, error) {
	c := New(For(op), w)
	n, err := fill(c)
	if err == nil {
		err = c.Close()
	}
	return n, err
}

// Write checks p and passes it on.
func (c *Check) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.ctype == "" {
		c.head = append(c.head, p...)
		if len(c.head) < headLen {
			return len(p), nil
		}
		if err := c.start(); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.pass(p)
}

// start tells the type from the head and passes the head on.
func (c *Check) start() error {
	ct := sniff.Type(c.head)
	if !slices.Contains(accepts[c.kind], ct) {
		what := sniff.ContentType(c.head)
		if len(c.head) == 0 {
			what = "empty"
		}
		c.err = &Error{Kind: c.kind, Type: ct, Why: fmt.Sprintf("the file is %s, not %s", what, c.kind)}
		return c.err
	}
	c.ctype, c.whole = ct, walkerOf(ct)
	head := c.head
	c.head = nil
	if _, err := c.pass(head); err != nil {
		return err
	}
	return nil
}

func (c *Check) pass(p []byte) (int, error) {
	c.whole.feed(p)
	c.n += int64(len(p))
	n, err := c.w.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}

// Close ends the content: it fails when the bytes were too few to tell
// their type or the file ends before its format says it does.
func (c *Check) Close() error {
	if c.err != nil {
		return c.err
	}
	if c.ctype == "" {
		if err := c.start(); err != nil {
			return err
		}
	}
	if why := c.whole.cut(c.n); why != "" {
		c.err = &Error{Kind: c.kind, Type: c.ctype, Cut: true, Why: fmt.Sprintf("the %s file is cut after %d bytes: %s", c.ctype, c.n, why)}
	}
	return c.err
}

// Type is the content type the checked bytes show, once they showed one.
func (c *Check) Type() string { return c.ctype }

// Ext is the file name extension of the checked content, such as ".png",
// once the head has shown it; "" before.
func (c *Check) Ext() string { return sniff.Ext(c.ctype) }

// Bytes checks a whole file held in memory against kind k.
func Bytes(k Kind, b []byte) error {
	c := New(k, io.Discard)
	if _, err := c.Write(b); err != nil {
		return err
	}
	return c.Close()
}

// Keep is Fill for an answer that was paid for, whose bytes are never
// dropped: when the check refuses the file's type (a format it does not
// know, or another kind's), reject is told at once, before any byte has
// reached w; then every byte of the answer, from its first, goes on to w
// unchecked, fill runs to its end, and Keep returns the refusal, an
// *Error, once they are all written, so that the caller names what w holds
// as a rejected file. A file that is cut is refused only at its end, once
// its bytes are in w. Nothing is held but the few bytes of a head that has
// not yet told its type, and w's first Write holds that head whole (all
// of a file shorter than a head), so that w may name the file by it.
func Keep(op string, w io.Writer, fill func(io.Writer) (int64, error), reject func(*Error)) (int64, error) {
	k := &keeper{c: New(For(op), w), w: w, reject: reject}
	n, err := fill(k)
	if err == nil {
		err = k.close()
	}
	if err == nil && k.refused != nil {
		err = k.refused
	}
	return n, err
}

// A keeper passes an answer through its Check until the check refuses
// its type, and past the check from then on.
type keeper struct {
	c       *Check
	w       io.Writer
	held    []byte // bytes the check holds back while the head is short
	refused *Error
	reject  func(*Error)
}

func (k *keeper) Write(p []byte) (int, error) {
	if k.refused != nil {
		return k.w.Write(p)
	}
	started := k.c.ctype != ""
	n, err := k.c.Write(p)
	if !started && err == nil && k.c.ctype == "" {
		k.held = append(k.held, p...) // fewer than headLen bytes in all
		return n, nil
	}
	if e, ok := err.(*Error); ok && !started && k.c.ctype == "" {
		// Refused as its head showed: nothing reached w yet.
		if err := k.divert(e, p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return n, err
}

// close ends the check; a head too short to tell a type is refused and
// kept as any other.
func (k *keeper) close() error {
	if k.refused != nil {
		return nil
	}
	err := k.c.Close()
	if e, ok := err.(*Error); ok && !e.Cut && k.c.ctype == "" {
		return k.divert(e, nil)
	}
	return err
}

// divert tells of the refusal e and writes the bytes held back, then p, to
// w, in one Write: the head whole, as the check hands on one it accepts.
func (k *keeper) divert(e *Error, p []byte) error {
	k.refused = e
	if k.reject != nil {
		k.reject(e)
	}
	_, err := k.w.Write(append(k.held, p...))
	k.held = nil
	return err
}
