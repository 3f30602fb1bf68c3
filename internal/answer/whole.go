package answer

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// A walker follows a file's structure as its bytes pass, keeping a few
// header bytes at a time, and says at the end whether the file is whole.
type walker interface {
	feed(p []byte)
	// cut says why a file of n bytes is not whole, "" when it is or when
	// its format does not say.
	cut(n int64) string
}

// walkerOf returns the walker of content type ct.
func walkerOf(ct string) walker {
	switch ct {
	case "image/png":
		return &pngWalk{chunks: chunks{skip: 8}}
	case "image/jpeg":
		return &jpegWalk{skip: 2}
	case "audio/wav", "image/webp":
		return &riffWalk{}
	case "video/mp4", "audio/mp4":
		return &mp4Walk{}
	case "image/gif":
		return &gifWalk{}
	}
	return noWalk{}
}

// noWalk is the walker of a format that states neither its length nor its
// end where a stream can see it (MP3, Ogg, FLAC, AAC, WebM).
type noWalk struct{}

func (noWalk) feed([]byte)      {}
func (noWalk) cut(int64) string { return "" }

// chunks walks a sequence of headers each followed by a body to pass
// over: it gathers a header of want bytes and hands it to on, which says
// how many bytes follow it and how long the next header is.
type chunks struct {
	skip int64
	hdr  [16]byte
	have int
}

// next gathers up to want header bytes from p; it returns the rest of p
// and whether the header is whole.
func (c *chunks) next(p []byte, want int) ([]byte, bool) {
	if c.skip > 0 {
		k := min(c.skip, int64(len(p)))
		c.skip -= k
		p = p[k:]
		if c.skip > 0 {
			return p, false
		}
	}
	k := copy(c.hdr[c.have:want], p)
	c.have += k
	p = p[k:]
	if c.have < want {
		return p, false
	}
	c.have = 0
	return p, true
}

// between reports whether the walk stands between two chunks.
func (c *chunks) between() bool { return c.skip == 0 && c.have == 0 }

// pngWalk follows a PNG's chunks (length, type, data, CRC) to IEND's end.
type pngWalk struct {
	chunks
	iend, done bool
}

func (w *pngWalk) feed(p []byte) {
	for len(p) > 0 && !w.done {
		var ok bool
		p, ok = w.next(p, 8)
		w.done = w.iend && w.skip == 0
		if !ok || w.done {
			continue
		}
		w.skip = int64(binary.BigEndian.Uint32(w.hdr[:4])) + 4
		w.iend = string(w.hdr[4:8]) == "IEND"
	}
	w.done = w.done || w.iend && w.skip == 0
}

func (w *pngWalk) cut(int64) string {
	if !w.done {
		return "it ends before its IEND chunk"
	}
	return ""
}

// riffWalk checks a RIFF file (WAV, WebP) against the size its header
// states. A size of 0, or of 2 GiB or more, is a stream's "not known":
// writers that cannot seek back put 0, 0xffffffff or, as SoX does, about
// 0x7ffff000 there.
type riffWalk struct {
	hdr  [8]byte
	have int
}

func (w *riffWalk) feed(p []byte) { w.have += copy(w.hdr[w.have:], p) }

func (w *riffWalk) cut(n int64) string {
	if w.have < 8 {
		return "it ends inside its RIFF header"
	}
	size := binary.LittleEndian.Uint32(w.hdr[4:8])
	if size == 0 || size >= 0x7ffff000 {
		return ""
	}
	if want := int64(size) + 8; n < want {
		return fmt.Sprintf("its RIFF header states %d bytes", want)
	}
	return ""
}

// mp4Walk follows an ISO media file's top-level boxes (size, type, and a
// 64-bit size when the size is 1); it is whole when it ends between boxes
// and has held a moov box, or ends in a box whose size is 0 (to the end).
type mp4Walk struct {
	chunks
	large           bool // gathering a 64-bit size
	typ             string
	moov, open, bad bool
}

func (w *mp4Walk) feed(p []byte) {
	for len(p) > 0 && !w.open && !w.bad {
		var ok bool
		if p, ok = w.next(p, 8); !ok {
			continue
		}
		if w.large {
			w.large = false
			w.box(int64(binary.BigEndian.Uint64(w.hdr[:8])), 16)
			continue
		}
		w.typ = string(w.hdr[4:8])
		if w.typ == "moov" {
			w.moov = true
		}
		if size := binary.BigEndian.Uint32(w.hdr[:4]); size == 1 {
			w.large = true
		} else {
			w.box(int64(size), 8)
		}
	}
}

// box passes over the body of a box of size bytes with a header of hl.
func (w *mp4Walk) box(size, hl int64) {
	switch {
	case size == 0:
		w.open = true
	case size < hl:
		w.bad = true
	default:
		w.skip = size - hl
	}
}

func (w *mp4Walk) cut(int64) string {
	switch {
	case w.bad:
		return "a box states a size shorter than its header"
	case w.open:
		return ""
	case !w.between() || w.large:
		return "it ends inside a box"
	case !w.moov:
		return "it has no moov box"
	}
	return ""
}

// jpegWalk follows a JPEG's segments to its end-of-image marker: marker
// segments by their lengths, entropy-coded data byte by byte for a marker
// (0xff not followed by 0x00 or a restart marker).
type jpegWalk struct {
	skip  int64
	state int
	lenb  [2]byte
	have  int
	sos   bool // the segment being passed over starts a scan
	eoi   bool
}

const (
	jSeek   = iota // looking for a marker's 0xff
	jCode          // after 0xff: the marker's code
	jLength        // gathering a segment's length
	jScan          // in entropy-coded data
	jScanFF        // in entropy-coded data, after 0xff
)

func (w *jpegWalk) feed(p []byte) {
	for len(p) > 0 && !w.eoi {
		if w.skip > 0 {
			k := min(w.skip, int64(len(p)))
			w.skip -= k
			p = p[k:]
			continue
		}
		switch w.state {
		case jScan:
			i := bytes.IndexByte(p, 0xff)
			if i < 0 {
				return
			}
			p, w.state = p[i+1:], jScanFF
		case jLength:
			k := copy(w.lenb[w.have:], p)
			w.have += k
			p = p[k:]
			if w.have == 2 {
				w.have = 0
				w.skip = max(int64(binary.BigEndian.Uint16(w.lenb[:]))-2, 0)
				w.state = jSeek
				if w.sos {
					w.state = jScan
				}
			}
		default:
			c := p[0]
			p = p[1:]
			w.byte(c)
		}
	}
}

// byte reads one byte outside a segment's body.
func (w *jpegWalk) byte(c byte) {
	switch {
	case w.state == jSeek:
		if c == 0xff {
			w.state = jCode
		}
	case c == 0xff: // fill bytes before a code
	case w.state == jScanFF && (c == 0x00 || 0xd0 <= c && c <= 0xd7):
		w.state = jScan // a stuffed 0xff or a restart marker
	case c == 0xd9:
		w.eoi = true
	case c == 0x01 || 0xd0 <= c && c <= 0xd8:
		w.state = jSeek // a marker without a length
	default:
		w.state, w.sos = jLength, c == 0xda
	}
}

func (w *jpegWalk) cut(int64) string {
	if !w.eoi {
		return "it ends before its end-of-image marker"
	}
	return ""
}

// gifWalk checks that a GIF ends with its trailer byte.
type gifWalk struct{ last byte }

func (w *gifWalk) feed(p []byte) {
	if len(p) > 0 {
		w.last = p[len(p)-1]
	}
}

func (w *gifWalk) cut(int64) string {
	if w.last != 0x3b {
		return "it ends before its trailer"
	}
	return ""
}
