package creative

import (
	"context"
	"errors"
	"fmt"
	_ "image/jpeg" // registered for Image.Decode
	"io"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	_ "golang.org/x/image/webp" // registered for Image.Decode
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
	name string
	src  source // nil when no file was given
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
	return File{filepath.Base(path), &pathSource{path: path}}
}

// FileFromBytes returns an upload of b named name. b must not be changed
// until the call returns.
func FileFromBytes(name string, b []byte) File {
	if b == nil {
		b = []byte{}
	}
	return File{name, &bytesSource{data: b}}
}

// FileFromReader returns an upload of what r yields from its current
// offset, named name. How r is read depends on what it can do:
//
//   - An io.ReaderAt with a Seek method (an *os.File on a regular file,
//     *bytes.Reader, *strings.Reader, *io.SectionReader): its offset and size
//     are found with Seek by the first call's check, not now (a Seek that
//     blocks holds no call past its context, and FileFromReader never
//     blocks), and each attempt of each call reads its own
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
	switch {
	case r == nil:
		return File{}
	case isNil(r):
		return File{name, badSource{&refusal{fmt.Sprintf("is a nil %T", r)}}}
	}
	if _, ok := r.(io.Seeker); ok {
		return File{name, &seekableSource{r: r}}
	}
	return File{name, &onceSource{r: r}}
}

// A seekableSource is FileFromReader of a reader with a Seek method, which
// FileFromReader does not call: Seek may block (a reader of the caller's
// over the network). The first call's check asks it, once, where it is and
// where it ends (within that call's context, as any read of the check:
// checkUploads), and makes of it the source it is.
type seekableSource struct {
	r    io.Reader
	once sync.Once
	src  source      // set by resolve
	done atomic.Bool // src is set
}

// resolve returns the source the reader is: an io.ReaderAt's, an
// io.ReadSeeker's, or a one-shot reader's when Seek fails (a pipe, a
// terminal or a socket: it streams once).
func (s *seekableSource) resolve() source {
	s.once.Do(func() {
		defer s.done.Store(true)
		base, end, err := extent(s.r.(io.Seeker))
		if err != nil {
			s.src = &onceSource{r: s.r}
			return
		}
		sec := section{base: base, end: max(base, end)}
		if st, ok := s.r.(interface{ Stat() (fs.FileInfo, error) }); ok {
			if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
				sec.stat = st.Stat
			}
		}
		if at, ok := s.r.(io.ReaderAt); ok {
			s.src = &readerAtSource{section: sec, at: at}
			return
		}
		rs, ok := s.r.(io.ReadSeeker)
		if !ok {
			s.src = &onceSource{r: s.r}
			return
		}
		s.src = &seekerSource{section: sec, rs: rs}
	})
	return s.src
}

// resolved is the source the reader was found to be by a check, or
// s itself before any.
func resolved(src source) source {
	if s, ok := src.(*seekableSource); ok && s.done.Load() {
		return s.src
	}
	return src
}

func (s *seekableSource) inspect() (fileInfo, error) { return s.resolve().inspect() }

func (s *seekableSource) claim(m *multipartBody) error { return s.resolve().claim(m) }

func (s *seekableSource) ready(m *multipartBody) error { return s.resolve().ready(m) }

func (s *seekableSource) open(a *bodyReader) (io.Reader, func() error, error) {
	return s.resolve().open(a)
}

func (s *seekableSource) spent() bool { return s.resolve().spent() }

// isNil reports whether v is an interface holding a nil pointer, map,
// slice, function or channel (a typed nil), whose methods would panic.
func isNil(v any) bool {
	switch v := reflect.ValueOf(v); v.Kind() {
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
func (f File) Name() string { return f.name }

// inspect checks the upload for one call: what it is, its size, type and
// image dimensions.
func (f File) inspect() (fileInfo, error) {
	if f.src == nil {
		return fileInfo{}, errors.New("no file given")
	}
	return f.src.inspect()
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

// A refusal is the cause when an upload cannot be used as it is: a path
// that is not a regular file, a typed nil reader, an io.ReadSeeker that
// another call is reading. Its text is the *ValidationError's rule.
type refusal struct{ rule string }

func (e *refusal) Error() string { return e.rule }

// errInUse is the refusal of an io.ReadSeeker that another call is reading.
var errInUse = &refusal{"is an io.ReadSeeker that another call is reading: such a reader is read by one call at a time (give a path, bytes or an io.ReaderAt to share a File between calls at once)"}

// readRule is a *ValidationError's rule for an upload that cannot be used.
func readRule(err error) string {
	if r, ok := errors.AsType[*refusal](err); ok {
		return r.rule
	}
	return "cannot be read: " + err.Error()
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
	return &refusal{"is " + what + ", not a regular file" + stream}
}

// A sourceError is a local failure of an upload's source: a read error of
// the disk or of the reader given, or a file that changed after it was
// validated. Sending again cannot mend it, so it is not retried. It unwraps
// to the cause.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

// A replayError is the failure of an attempt that would send a one-shot
// reader's bytes again.
type replayError struct{}

func (*replayError) Error() string {
	return "the upload's one-shot reader was already read and cannot be sent again"
}

// checkUploads runs check, the checks of a request that uploads files,
// within ctx: it ends the call, with nothing sent, when ctx ended before
// it or ends first. The head of a one-shot reader is read ahead in a
// goroutine of its own (awaitUploads); the checks of an io.ReaderAt, an
// io.ReadSeeker or a path, which read the file's head, run in a goroutine
// of their own, so that a reader that blocks holds that goroutine, never
// the call. (Validate, which has no context, waits for the reader.)
func checkUploads(ctx context.Context, op string, check func() (checkedFile, error), files ...File) (checkedFile, error) {
	if err := awaitUploads(ctx, op, files...); err != nil {
		return checkedFile{}, err
	}
	if ctx == nil || !slices.ContainsFunc(files, mayBlock) {
		return check() // a nil context is the call's to report
	}
	type checked struct {
		f   checkedFile
		err error
	}
	done := make(chan checked, 1)
	go func() {
		f, err := check()
		done <- checked{f, err}
	}()
	select {
	case c := <-done:
		return c.f, c.err
	case <-ctx.Done():
		return checkedFile{}, headNotRead(op, ctx.Err())
	}
}

// mayBlock reports whether checking f reads from what may block: a file,
// or a reader of the caller's.
func mayBlock(f File) bool {
	switch f.src.(type) {
	case *pathSource, *readerAtSource, *seekerSource, *seekableSource:
		return true
	}
	return false
}

// headNotRead is the error of a call that ended, with nothing sent, before
// the head of its upload was read.
func headNotRead(op string, err error) error {
	return &NetworkError{Operation: op, Err: fmt.Errorf("reading the head of the upload to tell its type: %w", err), kind: attemptNotSent}
}

// awaitUploads waits, within ctx, until the head of each one-shot reader
// among files was read ahead, in a goroutine of its own; a context that
// ended before it, or ends first, ends the call, with nothing sent.
func awaitUploads(ctx context.Context, op string, files ...File) error {
	if ctx == nil {
		return nil // the call reports it
	}
	if err := ctx.Err(); err != nil {
		return headNotRead(op, err)
	}
	for _, f := range files {
		if s, ok := f.src.(*onceSource); ok {
			if err := s.await(ctx); err != nil {
				return headNotRead(op, err)
			}
		}
	}
	return nil
}
