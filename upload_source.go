package creative

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/creativegen/creative-go/internal/sniff"
)

// A source is where a File's bytes come from. There is one type per kind:
// a path, bytes, an io.ReaderAt and a reader that cannot be used here; an
// io.ReadSeeker and a one-shot reader in upload_stream.go.
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

func (replayable) spent() bool { return false }

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

// A badSource is a reader that cannot be used (a typed nil): every call
// refuses it.
type badSource struct{ why *refusal }

func (s badSource) inspect() (fileInfo, error) { return fileInfo{}, s.why }

func (s badSource) claim(*multipartBody) error { return s.why }

func (s badSource) ready(*multipartBody) error { return s.why }

func (s badSource) open(*bodyReader) (io.Reader, func() error, error) { return nil, nil, s.why }

func (badSource) spent() bool { return false }
