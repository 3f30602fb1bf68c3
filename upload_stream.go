package creative

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
)

// The sources of this file are streams: an io.ReadSeeker, read by one
// reader at a time, and a one-shot reader, read once by one call. The
// sources that any number of readers may read at once are in
// upload_source.go.

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
	read  chan struct{} // closed once the head was read ahead
	head  []byte
	facts fileInfo
	err   error
	owner atomic.Pointer[multipartBody] // the one call allowed to send it
	used  atomic.Bool                   // an attempt began to send it: it cannot be sent again
}

// inspect reads the head once, as far as the type and, for a JPEG, the
// frame header need; later calls get what it said.
func (s *onceSource) inspect() (fileInfo, error) {
	<-s.start()
	return s.facts, s.err
}

// start reads the head ahead, once, in a goroutine of its own, so that a
// call can wait for it within its context (await): a reader that blocks
// holds that goroutine, never the call. The channel is closed when the
// head was read.
func (s *onceSource) start() <-chan struct{} {
	s.ahead.Do(func() {
		s.read = make(chan struct{})
		go func() {
			defer close(s.read)
			s.readAhead()
		}()
	})
	return s.read
}

// await waits until the head was read ahead or ctx ends.
func (s *onceSource) await(ctx context.Context) error {
	select {
	case <-s.start():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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

// mayStall reports whether an attempt's body reads a reader the caller
// gave, which may block without end (a pipe, a socket): such a body is
// read through untilDone.
func mayStall(b requestBody) bool {
	m, ok := b.(*multipartBody)
	if !ok {
		return false
	}
	switch m.src.(type) {
	case *onceSource, *seekerSource, *readerAtSource:
		return true
	}
	return false
}

// untilDone returns r as a body that gives up when ctx ends: its reads run
// in a goroutine of their own, started at the first read, and a read
// waiting for one returns ctx's error once ctx ends, so that net/http's
// writer returns and the call with it. A read of the caller's reader that
// never returns holds that goroutine only. Close is r's.
func untilDone(ctx context.Context, r io.Reader) io.Reader {
	return &doneBody{r: r, ctx: ctx, ask: make(chan int), got: make(chan error), stop: make(chan struct{})}
}

type doneBody struct {
	r     io.Reader
	ctx   context.Context
	start sync.Once
	ask   chan int      // a read of up to this many bytes, into buf
	got   chan error    // its end: buf holds what it read
	stop  chan struct{} // closed by Close
	close sync.Once
	buf   []byte
	err   error // once set, every read returns it
}

func (b *doneBody) pump() {
	for {
		var n int
		select {
		case n = <-b.ask:
		case <-b.stop:
			return
		}
		if cap(b.buf) < n {
			b.buf = make([]byte, n)
		}
		m, err := b.r.Read(b.buf[:n])
		b.buf = b.buf[:m]
		select {
		case b.got <- err:
		case <-b.stop:
			return
		}
	}
}

func (b *doneBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	b.start.Do(func() { go b.pump() })
	select {
	case b.ask <- min(len(p), 32<<10):
	case <-b.ctx.Done():
		b.err = b.ctx.Err()
		return 0, b.err
	}
	select {
	case err := <-b.got:
		n := copy(p, b.buf)
		if err != nil {
			b.err = err
		}
		return n, err
	case <-b.ctx.Done():
		b.err = b.ctx.Err()
		return 0, b.err
	}
}

func (b *doneBody) Close() error {
	b.close.Do(func() { close(b.stop) })
	if c, ok := b.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
