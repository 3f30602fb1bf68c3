package creative

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/creativegen/creative-go/internal/sniff"
)

// A source is where a File's bytes come from. There is one type per kind:
// a path, bytes, an io.ReaderAt, an io.ReadSeeker, a one-shot reader, and a
// reader that cannot be used.
type source interface {
	// inspect checks the upload for one call: what it is, its size, type
	// and image dimensions.
	inspect() (fileInfo, error)
	// claim takes the source for the call whose body m is being built.
	claim(m *multipartBody) error
	// ready checks, before an attempt of m sends anything, what can be
	// checked without opening the source.
	ready(m *multipartBody) error
	// open gives attempt a the file's bytes, checked again to be what was
	// validated, and a check to run once they were all read (nil for none).
	// What it holds (a file, a reader) is given to a.keep.
	open(a *bodyReader) (file io.Reader, finish func() error, err error)
	// spent reports whether an attempt began to send bytes that cannot be
	// sent again.
	spent() bool
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

// probe reads what an upload of size bytes (-1: until r ends) is: its type
// from the first bytes and, for images, width and height from the header,
// looked for up to limit bytes into r. buf is the window it reads through.
func probe(r io.ReaderAt, size int64, buf []byte, limit int64) (fileInfo, error) {
	info := fileInfo{size: size}
	n, err := r.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return info, err
	}
	info.contentType = sniff.ContentType(buf[:n])
	if size >= 0 {
		limit = min(limit, size)
	}
	info.width, info.height, err = sniff.Size(r, buf[:n], info.contentType, limit)
	return info, err
}

// replayable is what the sources that can be sent any number of times
// share: no call takes them, nothing is spent.
type replayable struct{}

func (replayable) claim(*multipartBody) error { return nil }
func (replayable) spent() bool                { return false }

// A pathSource is FileFromPath: each check and each attempt opens the file.
type pathSource struct {
	replayable
	path string
}

func (s *pathSource) inspect() (fileInfo, error) {
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
	var buf [sniffLen]byte
	info, err := probe(fh, now.Size(), buf[:], maxHeaderScan)
	info.stat = now
	return info, err
}

func (s *pathSource) ready(m *multipartBody) error {
	st, err := os.Stat(s.path)
	if err != nil {
		return m.changed("it cannot be found or read any more", err)
	}
	return m.sameVersion(st)
}

func (s *pathSource) open(a *bodyReader) (io.Reader, func() error, error) {
	m := a.m
	fh, err := os.Open(s.path)
	if err != nil {
		return nil, nil, m.changed("it cannot be opened any more", err)
	}
	if !a.keep(func() { _ = fh.Close() }) {
		return nil, nil, errClosed
	}
	st, err := fh.Stat()
	if err != nil {
		return nil, nil, m.readError(err)
	}
	if err := m.sameVersion(st); err != nil {
		return nil, nil, err
	}
	if err := a.recheck(fh, st.Size()); err != nil {
		return nil, nil, err
	}
	return fh, func() error { return a.still(fh.Stat, st) }, nil
}

// A bytesSource is FileFromBytes.
type bytesSource struct {
	replayable
	data []byte
}

func (s *bytesSource) inspect() (fileInfo, error) {
	var buf [sniffLen]byte
	return probe(bytes.NewReader(s.data), int64(len(s.data)), buf[:], maxHeaderScan)
}

func (s *bytesSource) ready(*multipartBody) error { return nil }

func (s *bytesSource) open(a *bodyReader) (io.Reader, func() error, error) {
	if err := a.recheck(bytes.NewReader(s.data), int64(len(s.data))); err != nil {
		return nil, nil, err
	}
	return bytes.NewReader(s.data), nil, nil
}

// A section is the part of a seekable reader that is sent: from the offset
// the File was made at to the end then or, when the reader has a Stat
// method and is a regular file (an *os.File), to its end at each call;
// stat then also tells each attempt whether the file changed.
type section struct {
	base, end int64
	stat      func() (fs.FileInfo, error)
}

// bounds returns the bytes to send now, and what stat says, if it can.
func (s *section) bounds() (base, end int64, st fs.FileInfo, err error) {
	base, end = s.base, s.end
	if s.stat != nil {
		if st, err = s.stat(); err != nil {
			return 0, 0, nil, err
		}
		end = max(base, st.Size())
	}
	return base, end, st, nil
}

// inspect probes the section through at.
func (s *section) inspect(at io.ReaderAt) (fileInfo, error) {
	base, end, st, err := s.bounds()
	if err != nil {
		return fileInfo{}, err
	}
	var buf [sniffLen]byte
	info, err := probe(io.NewSectionReader(at, base, end-base), end-base, buf[:], maxHeaderScan)
	info.stat = st
	return info, err
}

// ready fails when the file behind the reader changed since m's check.
func (s *section) ready(m *multipartBody) error {
	if s.stat == nil {
		return nil
	}
	st, err := s.stat()
	if err != nil {
		return m.readError(err)
	}
	return m.sameVersion(st)
}

// finish is the check after an attempt read the section: the file behind
// it did not change meanwhile.
func (s *section) finish(a *bodyReader) func() error {
	if s.stat == nil {
		return nil
	}
	return func() error { return a.still(s.stat, a.m.info.stat) }
}

// A readerAtSource is FileFromReader of an io.ReaderAt: each check and
// each attempt reads its own io.SectionReader.
type readerAtSource struct {
	replayable
	section
	at io.ReaderAt
}

func (s *readerAtSource) inspect() (fileInfo, error) { return s.section.inspect(s.at) }

func (s *readerAtSource) open(a *bodyReader) (io.Reader, func() error, error) {
	sec := io.NewSectionReader(s.at, s.base, a.m.info.size)
	if err := a.recheck(sec, a.m.info.size); err != nil {
		return nil, nil, err
	}
	return sec, s.section.finish(a), nil
}

// A seekerSource is FileFromReader of an io.ReadSeeker without ReadAt:
// rewound for each attempt, and read by one reader at a time.
type seekerSource struct {
	replayable
	section
	rs io.ReadSeeker

	mu     sync.Mutex
	holder *seekHold // the reader (a check or an attempt) that has rs now
}

// A seekHold is one reader's exclusive use of an io.ReadSeeker: a call's
// check, or an attempt of a call (m).
type seekHold struct {
	m    *multipartBody
	done chan struct{} // closed on release
}

func (s *seekerSource) inspect() (fileInfo, error) {
	h := &seekHold{done: make(chan struct{})}
	if !s.tryHold(h) {
		return fileInfo{}, errInUse
	}
	defer s.release(h)
	return s.section.inspect(seekReaderAt{s.rs})
}

func (s *seekerSource) ready(m *multipartBody) error {
	if err := s.section.ready(m); err != nil {
		return err
	}
	if s.heldByOther(m) {
		return m.inUse()
	}
	return nil
}

// open takes the io.ReadSeeker for the attempt, checks it and rewinds it.
func (s *seekerSource) open(a *bodyReader) (io.Reader, func() error, error) {
	m := a.m
	h := &seekHold{m: m, done: make(chan struct{})}
	if err := s.hold(h, a.closing); err != nil {
		if err == errInUse {
			return nil, nil, m.inUse()
		}
		return nil, nil, err
	}
	if !a.keep(func() { s.release(h) }) {
		return nil, nil, errClosed
	}
	if err := a.recheck(io.NewSectionReader(seekReaderAt{s.rs}, s.base, m.info.size), m.info.size); err != nil {
		return nil, nil, err
	}
	if _, err := s.rs.Seek(s.base, io.SeekStart); err != nil {
		return nil, nil, m.readError(err)
	}
	return s.rs, s.section.finish(a), nil
}

// tryHold gives rs to h if no one has it.
func (s *seekerSource) tryHold(h *seekHold) bool {
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
func (s *seekerSource) hold(h *seekHold, cancel <-chan struct{}) error {
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

func (s *seekerSource) release(h *seekHold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder == h {
		s.holder = nil
		close(h.done)
	}
}

// heldByOther reports whether a reader other than one of m's attempts has
// rs.
func (s *seekerSource) heldByOther(m *multipartBody) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holder != nil && (s.holder.m == nil || s.holder.m != m)
}

// seekReaderAt reads an io.ReadSeeker at offsets. Its user must hold the
// reader (seekerSource.tryHold or hold).
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

// A onceSource is FileFromReader of any other reader: read once, as it
// comes, by one call. Its head is read ahead to tell its type, and kept to
// be sent first.
type onceSource struct {
	r     io.Reader
	ahead sync.Once
	head  []byte
	facts fileInfo
	err   error
	owner atomic.Pointer[multipartBody] // the one call allowed to send it
	used  atomic.Bool                   // an attempt began to send it: it cannot be sent again
}

// inspect reads the head once, as far as the type and, for a JPEG, the
// frame header need; later calls get what it said.
func (s *onceSource) inspect() (fileInfo, error) {
	s.ahead.Do(s.readAhead)
	return s.facts, s.err
}

func (s *onceSource) readAhead() {
	size := int64(-1)
	if l, ok := s.r.(interface{ Len() int }); ok {
		size = int64(l.Len())
	}
	a := &aheadReader{r: s.r, limit: maxReadAhead}
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

func (s *onceSource) claim(m *multipartBody) error {
	if !s.owner.CompareAndSwap(nil, m) {
		return &refusal{"reads a one-shot io.Reader that another call already took: such a File is sent by one call only (give each call its own File, or a path, bytes or an io.ReaderAt to send it again)"}
	}
	return nil
}

func (s *onceSource) ready(*multipartBody) error {
	if s.used.Load() {
		return &replayError{}
	}
	return nil
}

// open gives the attempt the head, then the rest as it comes. No other
// attempt may send it after this one began.
func (s *onceSource) open(a *bodyReader) (io.Reader, func() error, error) {
	if !s.used.CompareAndSwap(false, true) {
		return nil, nil, &replayError{}
	}
	r := io.MultiReader(bytes.NewReader(s.head), s.r)
	m := a.m
	if len(s.head) == int(m.info.size) || s.facts.size < 0 {
		return r, nil, nil // all of it is in head, or its end is found by reading
	}
	// Its Len gave the size: hold it to that, and make sure it ends there.
	return r, func() error {
		var one [1]byte
		if n, _ := io.ReadFull(s.r, one[:]); n > 0 {
			return m.changed(fmt.Sprintf("the reader yields more than the %d bytes its Len reported", m.info.size), nil)
		}
		return nil
	}, nil
}

func (s *onceSource) spent() bool { return s.used.Load() }

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

// A badSource is a reader that cannot be used (a typed nil): every call
// refuses it.
type badSource struct{ why *refusal }

func (s badSource) inspect() (fileInfo, error)                        { return fileInfo{}, s.why }
func (s badSource) claim(*multipartBody) error                        { return s.why }
func (s badSource) ready(*multipartBody) error                        { return s.why }
func (s badSource) open(*bodyReader) (io.Reader, func() error, error) { return nil, nil, s.why }
func (badSource) spent() bool                                         { return false }
