package sniff

import (
	"bytes"
	"errors"
	"image/png"
	"io"

	"golang.org/x/image/webp"
)

// Size returns the width and height an image's header declares, or zeros
// when it declares none that can be read. head holds the first bytes of r
// (those ContentType was told); its whole capacity is then a window over
// r, through which a JPEG's segments are walked to its frame header, up to
// limit bytes into r. Only a read error of r is an error.
func Size(r io.ReaderAt, head []byte, ctype string, limit int64) (w, h int, err error) {
	switch ctype {
	case "image/png":
		if cfg, err := png.DecodeConfig(bytes.NewReader(head)); err == nil {
			return cfg.Width, cfg.Height, nil
		}
	case "image/webp":
		if cfg, err := webp.DecodeConfig(bytes.NewReader(head)); err == nil {
			return cfg.Width, cfg.Height, nil
		}
	case "image/jpeg":
		return jpegSize(r, head[:cap(head)], limit)
	}
	return 0, 0, nil
}

// jpegSize walks a JPEG's segments from after its SOI marker to its frame
// header (SOFn) and returns the width and height there, or zeros when there
// is none before limit. Segment bodies are skipped, not read; buf is a
// window over r. Only a read error of r is an error.
func jpegSize(r io.ReaderAt, buf []byte, limit int64) (w, h int, err error) {
	sc := &scanner{r: r, buf: buf, off: 0, end: limit}
	sc.skip(2) // SOI
	for {
		m, err := sc.marker()
		if err != nil {
			return 0, 0, noHeader(err)
		}
		switch {
		case m == 0x00 || m == 0x01 || 0xd0 <= m && m <= 0xd7:
			continue // no length: a stuffed byte, TEM, RSTn
		case 0xd8 <= m && m <= 0xda:
			return 0, 0, nil // SOI, EOI or the scan before any frame header
		}
		var seg [7]byte // length, then a frame header's precision, height, width
		if err := sc.read(seg[:2]); err != nil {
			return 0, 0, noHeader(err)
		}
		n := int(seg[0])<<8 | int(seg[1])
		if !isSOF(m) {
			if n < 2 {
				return 0, 0, nil
			}
			sc.skip(n - 2)
			continue
		}
		if err := sc.read(seg[2:7]); err != nil || n < 8 {
			return 0, 0, noHeader(err)
		}
		return int(seg[5])<<8 | int(seg[6]), int(seg[3])<<8 | int(seg[4]), nil
	}
}

// isSOF reports whether m is a frame header's marker: SOF0 to SOF15 but
// DHT, JPG and DAC, which share the range.
func isSOF(m byte) bool { return 0xc0 <= m && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc }

// noHeader turns the end of the data into "no header", leaving read errors.
func noHeader(err error) error {
	if err == errNoHeader {
		return nil
	}
	return err
}

// A scanner reads an io.ReaderAt byte by byte through a small window, and
// skips without reading.
type scanner struct {
	r    io.ReaderAt
	buf  []byte
	off  int64 // offset of buf[0] in r
	i, n int   // next byte and end of the valid bytes in buf
	end  int64 // nothing at or past end is read
}

// errNoHeader ends a walk that reached its limit or the end of the data.
var errNoHeader = errors.New("no frame header")

func (s *scanner) byte() (byte, error) {
	if s.i >= s.n {
		pos := s.off + int64(s.i)
		if pos >= s.end {
			return 0, errNoHeader
		}
		n, err := s.r.ReadAt(s.buf[:min(int64(len(s.buf)), s.end-pos)], pos)
		if n == 0 {
			if err == nil || err == io.EOF {
				err = errNoHeader
			}
			return 0, err
		}
		s.off, s.i, s.n = pos, 0, n
	}
	c := s.buf[s.i]
	s.i++
	return c, nil
}

// marker returns the next marker's code: the byte after 0xff and any fill
// bytes, skipping junk before it as decoders do.
func (s *scanner) marker() (byte, error) {
	c, err := s.byte()
	for err == nil && c != 0xff {
		c, err = s.byte()
	}
	for err == nil && c == 0xff {
		c, err = s.byte()
	}
	return c, err
}

func (s *scanner) read(p []byte) error {
	for i := range p {
		c, err := s.byte()
		if err != nil {
			return err
		}
		p[i] = c
	}
	return nil
}

func (s *scanner) skip(n int) { s.i += n }
