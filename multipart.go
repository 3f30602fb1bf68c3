package creative

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A multipartBody is a form with text fields and one file part, written
// without holding the file in memory. It is a requestBody.
type multipartBody struct {
	op, field string
	name      string // the file's name
	prefix    []byte // fields, then the file part's header
	suffix    []byte // the closing boundary
	src       source
	info      fileInfo // what was validated, and declared: length and type
	ctype     string
}

// newMultipart lays out the form of op: fields in name order, then the file
// part named field, declaring info, what the call's validation found the
// file to be. The source is taken for this call here: a one-shot upload
// that another call took is refused before anything is sent.
func newMultipart(op string, fields url.Values, field string, f File, info fileInfo) (*multipartBody, error) {
	m := &multipartBody{op: op, field: field, name: f.name, src: resolved(f.src), info: info}
	if f.src == nil {
		return nil, &ValidationError{Operation: op, Field: field, Rule: "is required"}
	}
	if err := m.src.claim(m); err != nil {
		return nil, &ValidationError{Operation: op, Field: field, Rule: readRule(err)}
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
		boundary, headerSafe(field), headerSafe(f.name), info.contentType)
	m.prefix = b.Bytes()
	m.suffix = []byte("\r\n--" + boundary + "--\r\n")
	m.ctype = "multipart/form-data; boundary=" + boundary
	return m, nil
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

// sent reports whether an attempt began to send a one-shot upload, which
// cannot be sent again.
func (m *multipartBody) sent() bool { return m.src.spent() }

// open checks, before an attempt sends anything, what can be checked
// without opening the upload, and returns the attempt's reader. The
// pipeline calls it before each attempt (and go-retryablehttp once more, to
// learn the length).
//
// The reader yields the whole body. When the size is known it has a Len
// method giving the exact Content-Length. It must be closed (the transport
// closes what it sends; a probe for Len must close what it got): Close
// releases the file it opened. An error of open, or one that the reader
// returns, wraps a *sourceError when the upload itself failed (it changed,
// or reading it failed): such an error is not retried.
func (m *multipartBody) open() (io.Reader, error) {
	if err := m.src.ready(m); err != nil {
		return nil, err
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
	return &sourceError{&ValidationError{Operation: m.op, Field: m.field, Rule: errInUse.rule}}
}

// readError is a read error of the upload's source, which is not retried.
func (m *multipartBody) readError(err error) error {
	return &sourceError{fmt.Errorf("reading %s %q: %w", m.field, m.name, err)}
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

// The stages of an attempt's body, in order.
type stage int

const (
	sendPrefix stage = iota // the text fields and the file part's header
	sendFile                // the file's bytes
	sendSuffix              // the closing boundary
	sendDone                // all sent: io.EOF
	sendFailed              // the attempt failed with bodyReader.err
)

// A bodyReader is one attempt's body: the prefix, the file, the suffix. It
// opens the file on its first read of it, so that a reader that is only
// asked for its Len touches nothing, and checks it again there: the same
// type, size and dimensions as validated, or the attempt fails.
type bodyReader struct {
	m     *multipartBody
	stage stage
	off   int // bytes of the prefix or suffix sent
	err   error

	file   io.Reader    // the file's bytes for this attempt
	left   int64        // file bytes still due; -1 when the size is unknown
	finish func() error // the source's check once the file was read; may be nil

	mu      sync.Mutex
	release func()        // lets go of what the attempt holds: its open file, the seeker
	closing chan struct{} // closed by Close
	closed  atomic.Bool
	head    [sniffLen]byte
}

var errClosed = errors.New("creative: the upload's body was closed")

func (r *bodyReader) Read(p []byte) (int, error) {
	if r.closed.Load() {
		return 0, errClosed // what it held may be another's now
	}
	for {
		switch r.stage {
		case sendPrefix:
			if r.off < len(r.m.prefix) {
				return r.copyOut(p, r.m.prefix), nil
			}
			r.left = r.m.info.size
			file, finish, err := r.m.src.open(r)
			if err != nil {
				return 0, r.fail(err)
			}
			r.file, r.finish, r.stage, r.off = file, finish, sendFile, 0
		case sendFile:
			n, err := r.readFile(p)
			if err != nil {
				return n, r.fail(err)
			}
			if n > 0 || r.stage == sendFile {
				return n, nil
			}
		case sendSuffix:
			if r.off < len(r.m.suffix) {
				return r.copyOut(p, r.m.suffix), nil
			}
			r.stage = sendDone
		case sendDone:
			return 0, io.EOF
		default:
			return 0, r.err
		}
	}
}

// copyOut copies what is left of b (the prefix or the suffix) into p.
func (r *bodyReader) copyOut(p, b []byte) int {
	n := copy(p, b[r.off:])
	r.off += n
	return n
}

// fail ends the attempt's body with err, for this read and every later one.
func (r *bodyReader) fail(err error) error {
	r.stage, r.err = sendFailed, err
	r.done()
	return err
}

// readFile reads the file's bytes, holding it to the length declared, and
// moves to the suffix once they all came and the file still is as it was.
func (r *bodyReader) readFile(p []byte) (int, error) {
	if r.left == 0 {
		return 0, r.endFile()
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
		return n, r.endFile()
	case err != nil:
		if _, ok := errors.AsType[*sourceError](err); ok {
			return n, err
		}
		return n, r.m.readError(err)
	}
	return n, nil
}

// endFile runs the source's last check, lets go of the file and moves to
// the suffix.
func (r *bodyReader) endFile() error {
	defer r.done()
	if r.finish != nil {
		if err := r.finish(); err != nil {
			return err
		}
	}
	r.stage, r.off = sendSuffix, 0
	return nil
}

// done lets go of what the file stage holds.
func (r *bodyReader) done() {
	r.mu.Lock()
	release := r.release
	r.release = nil
	r.mu.Unlock()
	if release != nil {
		release()
	}
}

// keep notes what this attempt holds, unless the body was closed meanwhile
// (then it is let go at once, and keep returns false).
func (r *bodyReader) keep(release func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		release()
		return false
	}
	r.release = release
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
