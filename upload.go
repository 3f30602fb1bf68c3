package creative

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	_ "image/jpeg" // registered for Image.Decode; JPEG headers are read by jpegSize
	"image/png"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/image/webp" // WebP headers; also registered for Image.Decode
)

// A File is an upload: a file name and the bytes to send in a form part.
// Make one with FileFromPath, FileFromBytes or FileFromReader.
//
// A File is honest about what it sends. Each call checks it before anything
// is sent: what it is (a regular file, for a path), its type, sniffed from
// its first bytes, and for images the width and height in its header. The
// body is streamed at constant memory, with an exact Content-Length when the
// size is known. Every attempt, a retry included, is validated again: it
// sends the file only if it still has the size, type and dimensions that
// were checked and, for a file on disk, is still the same file with the same
// modification time. A file that changed fails the call with an error that
// says so and holds a *ValidationError (errors.As finds it). Neither that nor
// a local read error (a disk error, a reader's error, which the error
// unwraps to) is retried.
//
// A File made from a path, bytes or an io.ReaderAt may be given to any
// number of calls, at once or in turn. FileFromReader says how the other
// readers may be shared.
type File struct {
	src *fileSource
}

// The kinds of source a File reads from.
const (
	kindPath     = iota + 1 // FileFromPath: opened by each attempt
	kindBytes               // FileFromBytes
	kindReaderAt            // an io.ReaderAt: each attempt reads its own section
	kindSeeker              // an io.ReadSeeker without ReadAt: one reader at a time
	kindOnce                // any other reader: read once, by one call
)

type fileSource struct {
	name string
	kind int
	bad  string // why the reader cannot be used (a typed nil), for the call to report

	path string        // kindPath
	data []byte        // kindBytes
	at   io.ReaderAt   // kindReaderAt
	rs   io.ReadSeeker // kindSeeker
	// base and end delimit the bytes sent from at or rs, found with Seek
	// when the File was made. stat, when the reader has a Stat method and is
	// a regular file (an *os.File), tells each call its current end and each
	// attempt whether the file changed.
	base, end int64
	stat      func() (fs.FileInfo, error)

	// kindSeeker: the reader (a check or an attempt) that has rs now.
	mu     sync.Mutex
	holder *seekHold

	// kindOnce: the reader, the bytes read ahead of it and what they say.
	one   io.Reader
	ahead sync.Once
	head  []byte
	facts fileInfo
	err   error
	owner atomic.Pointer[multipartBody] // the one call allowed to send it
	spent atomic.Bool                   // an attempt began to send it: it cannot be sent again

	// checked holds, per operation and field, the facts that passed the
	// call's validation, for form to declare and every attempt to match.
	checkedMu sync.Mutex
	checked   map[string]fileInfo
}

// fileInfo is what a check found out about an upload.
type fileInfo struct {
	size        int64  // -1 when unknown (a one-shot reader without Len)
	contentType string // sniffed from the first bytes
	width       int    // images: from the header; 0 when not read
	height      int
	stat        fs.FileInfo // a file on disk: which file, its size and modification time
}

// sameFacts reports whether two checks found the same upload: what the
// form declares (length, type) and what the rules look at (dimensions).
func (a fileInfo) sameFacts(b fileInfo) bool {
	return a.size == b.size && a.contentType == b.contentType && a.width == b.width && a.height == b.height
}

func (a fileInfo) String() string {
	s := a.contentType
	if a.width > 0 {
		s += fmt.Sprintf(" %dx%d", a.width, a.height)
	}
	if a.size >= 0 {
		s += fmt.Sprintf(" of %d bytes", a.size)
	}
	return s
}

// FileFromPath returns an upload of the file at path, named by its base
// name. Nothing is opened now. Each call first asks what the path is, and
// refuses anything but a regular file (a directory, a named pipe, a socket,
// a device) with a *ValidationError without opening it, so nothing can
// block; a missing or unreadable file is a *ValidationError that unwraps to
// the cause, so errors.Is(err, fs.ErrNotExist) and errors.Is(err,
// fs.ErrPermission) work. Each attempt opens the file once and streams it at
// constant memory, so even a very large file can be retried.
func FileFromPath(path string) File {
	return File{&fileSource{name: filepath.Base(path), kind: kindPath, path: path}}
}

// FileFromBytes returns an upload of b named name. b must not be changed
// until the call returns.
func FileFromBytes(name string, b []byte) File {
	if b == nil {
		b = []byte{}
	}
	return File{&fileSource{name: name, kind: kindBytes, data: b}}
}

// FileFromReader returns an upload of what r yields from its current
// offset, named name. How r is read depends on what it can do:
//
//   - An io.ReaderAt with a Seek method (an *os.File on a regular file,
//     *bytes.Reader, *strings.Reader, *io.SectionReader): its offset and size
//     are found now with Seek, and each attempt of each call reads its own
//     io.SectionReader, so calls may share the File at once and a retry
//     re-reads it. An *os.File is sent to its end at the time of the call,
//     and an attempt that finds it changed (Stat) fails.
//   - An io.ReadSeeker without ReadAt: rewound for each attempt, and read by
//     one reader at a time, so nothing reads it twice at once. A call that
//     finds it being read by another call fails with a *ValidationError,
//     without sending anything when it finds out before its attempt starts.
//     (When the service answers before reading the whole upload, the
//     transport may still be reading it for a moment after the call
//     returned.) Give calls that run at once an io.ReaderAt instead.
//   - Any other io.Reader, or one whose Seek fails (a pipe, os.Stdin, a
//     socket): read once, as it comes, by one call only; a second call with
//     the same File is a *ValidationError before anything is sent. Its first
//     bytes are read when the call starts, to tell its type (512 bytes, or as
//     far as a JPEG's frame header, at most 1 MiB), and kept to be sent first.
//     Once an attempt began to send it, it is not sent again: a failure
//     after that is not retried.
//     Without a Len method its size is unknown until it ends, and it is sent
//     with chunked transfer encoding.
//
// A nil r, or a typed nil such as a nil *os.File, makes a File that every
// call refuses with a *ValidationError.
func FileFromReader(name string, r io.Reader) File {
	if r == nil {
		return File{}
	}
	src := &fileSource{name: name}
	if isNil(r) {
		src.bad = fmt.Sprintf("is a nil %T", r)
		return File{src}
	}
	if sk, ok := r.(io.Seeker); ok {
		if base, end, err := extent(sk); err == nil {
			src.base, src.end = base, max(base, end)
			if st, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
				if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
					src.stat = st.Stat
				}
			}
			if at, ok := r.(io.ReaderAt); ok {
				src.kind, src.at = kindReaderAt, at
			} else {
				src.kind, src.rs = kindSeeker, r.(io.ReadSeeker)
			}
			return File{src}
		}
		// Seek failed: a pipe, a terminal or a socket. It streams once.
	}
	src.kind, src.one = kindOnce, r
	return File{src}
}

// isNil reports whether r is an interface holding a nil pointer, map,
// slice, function or channel, whose methods would panic.
func isNil(r io.Reader) bool {
	switch v := reflect.ValueOf(r); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}

// extent returns the current offset and the end of s, leaving s where it
// was.
func extent(s io.Seeker) (base, end int64, err error) {
	if base, err = s.Seek(0, io.SeekCurrent); err != nil {
		return 0, 0, err
	}
	if end, err = s.Seek(0, io.SeekEnd); err != nil {
		return 0, 0, err
	}
	_, err = s.Seek(base, io.SeekStart)
	return base, end, err
}

// Name is the file name sent with the upload.
func (f File) Name() string {
	if f.src == nil {
		return ""
	}
	return f.src.name
}

// Bounds of what is read to tell an upload's type and size in pixels.
const (
	// sniffLen is the head read to tell the type: what
	// http.DetectContentType looks at, and more than the PNG and WebP
	// headers need.
	sniffLen = 512
	// maxHeaderScan bounds how far into a re-readable upload a JPEG's frame
	// header (its width and height) is looked for, past APP segments (Exif,
	// ICC profiles, XMP). Only a few bytes around each segment's marker are
	// read.
	maxHeaderScan = 16 << 20
	// maxReadAhead bounds the same search in a one-shot reader, whose bytes
	// must all be kept in memory to be sent.
	maxReadAhead = 1 << 20
)

// A notRegularError is the cause when a path names something other than a
// regular file.
type notRegularError struct{ what string }

func (e *notRegularError) Error() string { return e.what }

// errInUse is the cause when an io.ReadSeeker is being read by another call.
var errInUse = errors.New("is an io.ReadSeeker that another call is reading: such a reader is read by one call at a time (give a path, bytes or an io.ReaderAt to share a File between calls at once)")

// inspect checks the upload for one call: what it is, its size, type and
// image dimensions. A path is asked what it is before it is opened. A
// one-shot reader is read ahead once, and what it said is kept.
func (f File) inspect() (fileInfo, error) {
	if f.src == nil {
		return fileInfo{}, errors.New("no file given")
	}
	return f.src.inspect()
}

func (s *fileSource) inspect() (fileInfo, error) {
	var buf [sniffLen]byte
	switch s.kind {
	case kindPath:
		st, err := os.Stat(s.path)
		if err != nil {
			return fileInfo{}, err
		}
		if err := regular(st); err != nil {
			return fileInfo{}, err
		}
		fh, err := os.Open(s.path)
		if err != nil {
			return fileInfo{}, err
		}
		defer fh.Close()
		now, err := fh.Stat()
		if err != nil {
			return fileInfo{}, err
		}
		if !os.SameFile(st, now) {
			return fileInfo{}, errors.New("the path was replaced while it was being opened")
		}
		info, err := probe(fh, now.Size(), buf[:], maxHeaderScan)
		info.stat = now
		return info, err
	case kindBytes:
		return probe(bytes.NewReader(s.data), int64(len(s.data)), buf[:], maxHeaderScan)
	case kindReaderAt:
		base, end, st, err := s.section()
		if err != nil {
			return fileInfo{}, err
		}
		info, err := probe(io.NewSectionReader(s.at, base, end-base), end-base, buf[:], maxHeaderScan)
		info.stat = st
		return info, err
	case kindSeeker:
		h := &seekHold{done: make(chan struct{})}
		if !s.tryHold(h) {
			return fileInfo{}, errInUse
		}
		defer s.release(h)
		base, end, st, err := s.section()
		if err != nil {
			return fileInfo{}, err
		}
		info, err := probe(io.NewSectionReader(seekReaderAt{s.rs}, base, end-base), end-base, buf[:], maxHeaderScan)
		info.stat = st
		return info, err
	case kindOnce:
		s.ahead.Do(s.readAhead)
		return s.facts, s.err
	}
	return fileInfo{}, errors.New("no file given")
}

// regular refuses what is not a regular file, naming what it is.
func regular(st fs.FileInfo) error {
	m := st.Mode()
	stream := ": to stream it once, open it and give it to FileFromReader"
	var what string
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what, stream = "a directory", ""
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	default:
		what, stream = "a "+m.Type().String()+" file", ""
	}
	return &notRegularError{what: "is " + what + ", not a regular file" + stream}
}

// section returns the bytes of at or rs to send: from the offset the File
// was made at to the end now (an *os.File's size, by Stat) or then.
func (s *fileSource) section() (base, end int64, st fs.FileInfo, err error) {
	base, end = s.base, s.end
	if s.stat != nil {
		if st, err = s.stat(); err != nil {
			return 0, 0, nil, err
		}
		end = max(base, st.Size())
	}
	return base, end, st, nil
}

// readAhead reads the head of a one-shot reader: enough to sniff its type
// and, for a JPEG, as far as its frame header. The bytes are kept, to be
// sent first.
func (s *fileSource) readAhead() {
	size := int64(-1)
	if l, ok := s.one.(interface{ Len() int }); ok {
		size = int64(l.Len())
	}
	a := &aheadReader{r: s.one, limit: maxReadAhead}
	var buf [sniffLen]byte
	info, err := probe(a, size, buf[:], maxReadAhead)
	if err == nil {
		err = a.err
	}
	if a.eof {
		info.size = int64(len(a.buf))
	}
	s.head, s.facts, s.err = a.buf, info, err
}

// remember keeps the facts that passed a call's validation of the upload
// sent as field by op.
func (s *fileSource) remember(op, field string, info fileInfo) {
	s.checkedMu.Lock()
	defer s.checkedMu.Unlock()
	if s.checked == nil {
		s.checked = map[string]fileInfo{}
	}
	s.checked[op+"\x00"+field] = info
}

func (s *fileSource) recall(op, field string) (fileInfo, bool) {
	s.checkedMu.Lock()
	defer s.checkedMu.Unlock()
	info, ok := s.checked[op+"\x00"+field]
	return info, ok
}

// probe reads what an upload of size bytes (-1: until r ends) is: its type
// from the first bytes and, for images, width and height from the header.
// buf is the head's buffer; a JPEG's segments are then walked in it, up to
// limit bytes into r.
func probe(r io.ReaderAt, size int64, buf []byte, limit int64) (fileInfo, error) {
	info := fileInfo{size: size}
	n, err := r.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return info, err
	}
	err = nil
	head := buf[:n]
	info.contentType = sniff(head)
	switch info.contentType {
	case "image/png":
		if cfg, err := png.DecodeConfig(bytes.NewReader(head)); err == nil {
			info.width, info.height = cfg.Width, cfg.Height
		}
	case "image/webp":
		if cfg, err := webp.DecodeConfig(bytes.NewReader(head)); err == nil {
			info.width, info.height = cfg.Width, cfg.Height
		}
	case "image/jpeg":
		if size >= 0 {
			limit = min(limit, size)
		}
		info.width, info.height, err = jpegSize(r, buf, limit)
	}
	return info, err
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

// sniff tells an upload's content type from its first bytes.
func sniff(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "image/webp"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WAVE":
		return "audio/wav"
	case bytes.HasPrefix(head, []byte("ID3")), len(head) >= 2 && head[0] == 0xff && head[1]&0xe0 == 0xe0:
		return "audio/mpeg"
	}
	ct := http.DetectContentType(head)
	if ct == "text/plain; charset=utf-8" && len(head) == 0 {
		return "application/octet-stream"
	}
	return ct
}

// An aheadReader reads a one-shot reader ahead into buf, as far as an
// io.ReaderAt caller asks and at most limit bytes.
type aheadReader struct {
	r     io.Reader
	buf   []byte
	limit int
	eof   bool
	err   error // a read error other than io.EOF
}

func (a *aheadReader) ReadAt(p []byte, off int64) (int, error) {
	want := int(min(off+int64(len(p)), int64(a.limit)))
	for stalls := 0; len(a.buf) < want && !a.eof && a.err == nil; {
		if cap(a.buf) < want {
			a.buf = slices.Grow(a.buf, max(want, 2*cap(a.buf))-len(a.buf))
			a.buf = a.buf[:len(a.buf):min(cap(a.buf), a.limit)]
		}
		n, err := a.r.Read(a.buf[len(a.buf):cap(a.buf)])
		a.buf = a.buf[:len(a.buf)+n]
		switch {
		case err == io.EOF:
			a.eof = true
		case err != nil:
			a.err = err
		case n == 0:
			if stalls++; stalls > 100 {
				a.err = io.ErrNoProgress
			}
		}
	}
	if off >= int64(len(a.buf)) {
		if a.err != nil {
			return 0, a.err
		}
		return 0, io.EOF
	}
	n := copy(p, a.buf[off:])
	if n < len(p) {
		if a.err != nil {
			return n, a.err
		}
		return n, io.EOF
	}
	return n, nil
}

// seekReaderAt reads an io.ReadSeeker at offsets. Its user must hold the
// reader (fileSource.tryHold).
type seekReaderAt struct{ rs io.ReadSeeker }

func (s seekReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if _, err := s.rs.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	n, err := io.ReadFull(s.rs, p)
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	return n, err
}

// A seekHold is one reader's exclusive use of an io.ReadSeeker: a call's
// check, or an attempt of a call (m).
type seekHold struct {
	m    *multipartBody
	done chan struct{} // closed on release
}

// tryHold gives rs to h if no one has it.
func (s *fileSource) tryHold(h *seekHold) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder != nil {
		return false
	}
	s.holder = h
	return true
}

// hold gives rs to h, waiting while h's own call's earlier attempt still
// has it (the transport may let go of a body after the answer came), until
// cancel is closed. Another call's use is errInUse.
func (s *fileSource) hold(h *seekHold, cancel <-chan struct{}) error {
	for {
		s.mu.Lock()
		cur := s.holder
		switch {
		case cur == nil:
			s.holder = h
			s.mu.Unlock()
			return nil
		case cur.m == nil || cur.m != h.m:
			s.mu.Unlock()
			return errInUse
		}
		s.mu.Unlock()
		select {
		case <-cur.done:
		case <-cancel:
			return errClosed
		}
	}
}

func (s *fileSource) release(h *seekHold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder == h {
		s.holder = nil
		close(h.done)
	}
}

// heldByOther reports whether a reader other than one of m's attempts has
// rs.
func (s *fileSource) heldByOther(m *multipartBody) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holder != nil && (s.holder.m == nil || s.holder.m != m)
}

// A sourceError is a local failure of an upload's source: a read error of
// the disk or of the reader given, or a file that changed after it was
// validated. Sending again cannot mend it, so it is not retried. It unwraps
// to the cause.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

// A multipartBody is a form with text fields and one file part, written
// without holding the file in memory.
type multipartBody struct {
	op, field string
	prefix    []byte // fields, then the file part's header
	suffix    []byte // the closing boundary
	src       *fileSource
	info      fileInfo // what was validated, and declared: length and type
	ctype     string
	shot      *oneShotBody
}

// newMultipart lays out the form of op: fields in name order, then the file
// part named field, declaring the facts this call's validation found (or,
// when none ran, what the upload is now). A one-shot upload is taken for
// this call here: a second call is refused before anything is sent.
func newMultipart(op string, fields url.Values, field string, f File) (*multipartBody, error) {
	refuse := func(rule string, err error) error {
		return &ValidationError{Operation: op, Field: field, Rule: rule, Err: err}
	}
	src := f.src
	if src == nil {
		return nil, refuse("is required", nil)
	}
	if src.bad != "" {
		return nil, refuse(src.bad, nil)
	}
	info, ok := src.recall(op, field)
	if !ok {
		var err error
		if info, err = src.inspect(); err != nil {
			return nil, refuse(readRule(err), err)
		}
	}
	m := &multipartBody{op: op, field: field, src: src, info: info}
	if src.kind == kindOnce {
		if !src.owner.CompareAndSwap(nil, m) {
			return nil, refuse("reads a one-shot io.Reader that another call already took: such a File is sent by one call only (give each call its own File, or a path, bytes or an io.ReaderAt to send it again)", nil)
		}
		m.shot = &oneShotBody{src: src}
	}

	var rnd [16]byte
	_, _ = rand.Read(rnd[:])
	boundary := "creative-go-" + hex.EncodeToString(rnd[:])
	var b bytes.Buffer
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range fields[k] {
			fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n", boundary, headerSafe(k), v)
		}
	}
	fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\nContent-Type: %s\r\n\r\n",
		boundary, headerSafe(field), headerSafe(src.name), info.contentType)
	m.prefix = b.Bytes()
	m.suffix = []byte("\r\n--" + boundary + "--\r\n")
	m.ctype = "multipart/form-data; boundary=" + boundary
	return m, nil
}

// readRule is a *ValidationError's rule for an upload that cannot be read.
func readRule(err error) string {
	var nr *notRegularError
	switch {
	case errors.As(err, &nr):
		return nr.what
	case errors.Is(err, errInUse):
		return errInUse.Error()
	}
	return "cannot be read: " + err.Error()
}

// headerSafe makes a name fit inside a quoted header parameter: quotes and
// backslashes are escaped, control characters percent-encoded (a file name
// can hold anything; a header line cannot).
func headerSafe(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func (m *multipartBody) contentType() string { return m.ctype }

// size is the exact length of the body, or -1 when the file's is unknown.
func (m *multipartBody) size() int64 {
	if m.info.size < 0 {
		return -1
	}
	return int64(len(m.prefix)) + m.info.size + int64(len(m.suffix))
}

// readerFunc returns the body's opener, which the pipeline calls before
// each attempt (and go-retryablehttp once more, to learn the length), and,
// for a one-shot upload, the tracker that tells whether a retry may send it
// again (nil otherwise).
//
// Each reader the opener returns yields the whole body. When the size is
// known it has a Len method giving the exact Content-Length. It must be
// closed (the transport closes what it sends; a probe for Len must close
// what it got): Close releases the file it opened. An error of the opener,
// or one that a reader returns, wraps a *sourceError when the upload itself
// failed (it changed, or reading it failed): such an error is not retried.
func (m *multipartBody) readerFunc() (func() (io.Reader, error), *oneShotBody) {
	return m.open, m.shot
}

// open checks, before an attempt sends anything, what can be checked
// without opening the upload, and returns the attempt's reader.
func (m *multipartBody) open() (io.Reader, error) {
	src := m.src
	switch src.kind {
	case kindPath:
		st, err := os.Stat(src.path)
		if err != nil {
			return nil, m.changed("it cannot be found or read any more", err)
		}
		if err := m.sameVersion(st); err != nil {
			return nil, err
		}
	case kindReaderAt, kindSeeker:
		if src.stat != nil {
			st, err := src.stat()
			if err != nil {
				return nil, m.readError(err)
			}
			if err := m.sameVersion(st); err != nil {
				return nil, err
			}
		}
		if src.kind == kindSeeker {
			if src.heldByOther(m) {
				return nil, m.inUse()
			}
		}
	case kindOnce:
		if src.spent.Load() {
			return nil, &replayError{}
		}
	}
	r := &bodyReader{m: m, closing: make(chan struct{})}
	if n := m.size(); n >= 0 {
		return &sizedBody{bodyReader: r, n: n}, nil
	}
	return r, nil
}

// changed is the error of an attempt that found the upload changed since
// it was validated.
func (m *multipartBody) changed(how string, cause error) error {
	return &sourceError{&ValidationError{
		Operation: m.op, Field: m.field, Err: cause,
		Rule: fmt.Sprintf("changed after it was validated (%s), so it was not sent: call again to send it as it is now", how),
	}}
}

// inUse is the error of an attempt that found the io.ReadSeeker taken by
// another call.
func (m *multipartBody) inUse() error {
	return &sourceError{&ValidationError{Operation: m.op, Field: m.field, Rule: errInUse.Error()}}
}

// readError is a read error of the upload's source, which is not retried.
func (m *multipartBody) readError(err error) error {
	return &sourceError{fmt.Errorf("reading %s %q: %w", m.field, m.src.name, err)}
}

// sameVersion fails when st is not the file, size and modification time
// that were validated.
func (m *multipartBody) sameVersion(st fs.FileInfo) error {
	was := m.info.stat
	if was == nil {
		return nil
	}
	switch {
	case !os.SameFile(was, st):
		return m.changed("the path names another file now", nil)
	case was.Size() != st.Size():
		return m.changed(fmt.Sprintf("it had %d bytes and has %d now", was.Size(), st.Size()), nil)
	case !was.ModTime().Equal(st.ModTime()) || was.Mode() != st.Mode():
		return m.changed(fmt.Sprintf("it was modified at %s", st.ModTime().Format(time.RFC3339Nano)), nil)
	}
	return nil
}

// A oneShotBody tells the pipeline whether a one-shot upload can be sent
// again: only while no attempt began to send its bytes.
type oneShotBody struct{ src *fileSource }

func (o *oneShotBody) sent() bool { return o != nil && o.src.spent.Load() }

type replayError struct{}

func (*replayError) Error() string {
	return "the upload's one-shot reader was already read and cannot be sent again"
}

// A bodyReader is one attempt's body: the prefix, the file, the suffix. It
// opens the file on its first read of it, so that a reader that is only
// asked for its Len touches nothing, and checks it again there: the same
// type, size and dimensions as validated, or the attempt fails.
type bodyReader struct {
	m     *multipartBody
	stage int // 0 prefix, 1 file, 2 suffix, 3 done, 4 failed with err
	off   int
	err   error

	file   io.Reader // the file's bytes for this attempt
	left   int64     // file bytes still due; -1 when the size is unknown
	finish func() error

	mu      sync.Mutex
	closer  io.Closer     // the file this attempt opened
	hold    *seekHold     // the io.ReadSeeker this attempt has
	closing chan struct{} // closed by Close
	closed  atomic.Bool
	head    [sniffLen]byte
}

func (r *bodyReader) Read(p []byte) (int, error) {
	for {
		switch r.stage {
		case 0:
			if r.off < len(r.m.prefix) {
				n := copy(p, r.m.prefix[r.off:])
				r.off += n
				return n, nil
			}
			if err := r.openFile(); err != nil {
				return 0, r.fail(err)
			}
			r.stage, r.off = 1, 0
		case 1:
			n, err := r.readFile(p)
			if err != nil {
				return n, r.fail(err)
			}
			if n == 0 && r.stage != 1 {
				continue
			}
			return n, nil
		case 2:
			if r.off < len(r.m.suffix) {
				n := copy(p, r.m.suffix[r.off:])
				r.off += n
				return n, nil
			}
			r.stage = 3
		case 3:
			return 0, io.EOF
		default:
			return 0, r.err
		}
	}
}

// fail ends the attempt's body with err, for this read and every later one.
func (r *bodyReader) fail(err error) error {
	r.stage, r.err = 4, err
	r.done()
	return err
}

// readFile reads the file's bytes, holding it to the length declared, and
// moves to the suffix once they all came and the file still is as it was.
func (r *bodyReader) readFile(p []byte) (int, error) {
	if r.left == 0 {
		if err := r.finishFile(); err != nil {
			return 0, err
		}
		r.stage, r.off = 2, 0
		return 0, nil
	}
	if r.left > 0 && int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.file.Read(p)
	if r.left > 0 {
		r.left -= int64(n)
	}
	switch {
	case err == io.EOF && r.left > 0:
		return n, r.m.changed(fmt.Sprintf("it ended %d bytes short of the %d validated", r.left, r.m.info.size), nil)
	case err == io.EOF:
		if err := r.finishFile(); err != nil {
			return n, err
		}
		r.stage, r.off = 2, 0
		return n, nil
	case err != nil:
		var se *sourceError
		if errors.As(err, &se) {
			return n, err
		}
		return n, r.m.readError(err)
	}
	return n, nil
}

func (r *bodyReader) finishFile() error {
	defer r.done()
	if r.finish != nil {
		return r.finish()
	}
	return nil
}

// done lets go of what the file stage holds: the open file, the seeker.
func (r *bodyReader) done() {
	r.mu.Lock()
	c, h := r.closer, r.hold
	r.closer, r.hold = nil, nil
	r.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
	if h != nil {
		r.m.src.release(h)
	}
}

// openFile prepares this attempt's file bytes and checks that they are
// what was validated.
func (r *bodyReader) openFile() error {
	m, src := r.m, r.m.src
	r.left = m.info.size
	switch src.kind {
	case kindPath:
		return r.openPath()
	case kindBytes:
		r.file = bytes.NewReader(src.data)
		return r.recheck(bytes.NewReader(src.data), int64(len(src.data)))
	case kindReaderAt:
		sec := io.NewSectionReader(src.at, src.base, m.info.size)
		r.file = sec
		if src.stat != nil {
			r.finish = func() error { return r.still(src.stat, m.info.stat) }
		}
		return r.recheck(sec, m.info.size)
	case kindSeeker:
		return r.openSeeker()
	case kindOnce:
		return r.openOnce()
	}
	return nil
}

// openPath opens the file for this attempt: the one validated, with the
// same facts.
func (r *bodyReader) openPath() error {
	m, src := r.m, r.m.src
	fh, err := os.Open(src.path)
	if err != nil {
		return m.changed("it cannot be opened any more", err)
	}
	if !r.keep(fh) {
		return errClosed
	}
	st, err := fh.Stat()
	if err != nil {
		return m.readError(err)
	}
	if err := m.sameVersion(st); err != nil {
		return err
	}
	r.file = fh
	r.finish = func() error { return r.still(fh.Stat, st) }
	return r.recheck(fh, st.Size())
}

// openSeeker takes the io.ReadSeeker, checks it and rewinds it.
func (r *bodyReader) openSeeker() error {
	m, src := r.m, r.m.src
	if err := r.holdSeeker(); err != nil {
		return err
	}
	if err := r.recheck(io.NewSectionReader(seekReaderAt{src.rs}, src.base, m.info.size), m.info.size); err != nil {
		return err
	}
	if _, err := src.rs.Seek(src.base, io.SeekStart); err != nil {
		return m.readError(err)
	}
	r.file = src.rs
	if src.stat != nil {
		r.finish = func() error { return r.still(src.stat, m.info.stat) }
	}
	return nil
}

// openOnce takes the one-shot reader for this attempt: its head, then the
// rest as it comes. No other attempt may send it after this one began.
func (r *bodyReader) openOnce() error {
	m, src := r.m, r.m.src
	if !src.spent.CompareAndSwap(false, true) {
		return &replayError{}
	}
	r.file = io.MultiReader(bytes.NewReader(src.head), src.one)
	if len(src.head) == int(m.info.size) || src.facts.size < 0 {
		return nil // all of it is in head, or its end is found by reading
	}
	// Its Len gave the size: hold it to that, and make sure it ends there.
	r.finish = func() error {
		var one [1]byte
		if n, _ := io.ReadFull(src.one, one[:]); n > 0 {
			return m.changed(fmt.Sprintf("the reader yields more than the %d bytes its Len reported", m.info.size), nil)
		}
		return nil
	}
	return nil
}

var errClosed = errors.New("creative: the upload's body was closed")

// keep notes the file this attempt opened, unless the body was closed
// meanwhile (then the file is closed at once).
func (r *bodyReader) keep(c io.Closer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		_ = c.Close()
		return false
	}
	r.closer = c
	return true
}

// recheck validates this attempt's bytes again: the same facts as the
// call's validation, so the same rules pass and the form's length and type
// are true.
func (r *bodyReader) recheck(at io.ReaderAt, size int64) error {
	now, err := probe(at, size, r.head[:], maxHeaderScan)
	if err != nil {
		return r.m.readError(err)
	}
	if !now.sameFacts(r.m.info) {
		return r.m.changed(fmt.Sprintf("it was %s and is %s now", r.m.info, now), nil)
	}
	return nil
}

// still fails when the file changed while this attempt read it.
func (r *bodyReader) still(stat func() (fs.FileInfo, error), was fs.FileInfo) error {
	st, err := stat()
	if err != nil {
		return r.m.readError(err)
	}
	if os.SameFile(was, st) && st.Size() == was.Size() && st.ModTime().Equal(was.ModTime()) {
		return nil
	}
	return r.m.changed("it was modified while it was being sent", nil)
}

// holdSeeker takes the io.ReadSeeker for this attempt.
func (r *bodyReader) holdSeeker() error {
	h := &seekHold{m: r.m, done: make(chan struct{})}
	if err := r.m.src.hold(h, r.closing); err != nil {
		if err == errInUse {
			return r.m.inUse()
		}
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		r.m.src.release(h)
		return errClosed
	}
	r.hold = h
	return nil
}

// Close ends the attempt's use of the file; the transport may call it
// while Read runs, and more than once.
func (r *bodyReader) Close() error {
	if r.closed.CompareAndSwap(false, true) {
		close(r.closing)
	}
	r.done()
	return nil
}

// sizedBody tells the transport the exact Content-Length.
type sizedBody struct {
	*bodyReader
	n int64
}

func (s *sizedBody) Len() int { return int(s.n) }
