// Package fake is the Creative Generation Service in process: the Server
// that package creativetest offers to tests and that the command line's
// --fake runs against. It imports neither testing nor net/http/httptest,
// so that a program can link it; what it answers, and the choices it makes
// where the specification says nothing, are documented in creativetest.
package fake

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/creativegen/creative-go/internal/memnet"
)

// DefaultAccessKey is the access key a Server accepts unless WithAccessKey
// sets another.
const DefaultAccessKey = "creativetest-access-key"

// DefaultMaxUpload is the largest upload part a Server reads (64 MiB)
// unless WithMaxUpload sets another.
const DefaultMaxUpload = 64 << 20

// Bounds of what a Server holds in memory.
const (
	maxFiles     = 256       // generated files kept; older ones are forgotten (404)
	maxFileBytes = 256 << 20 // total bytes of the generated files kept
	maxJSON      = 1 << 20   // largest JSON body
	maxField     = 1 << 20   // largest text field of a form
	maxRequests  = 10000     // requests kept for Requests; Count counts them all
)

// A Server is the fake service, listening on a system-chosen port on the
// loopback interface. Its methods are safe for concurrent use. Close it when
// done.
type Server struct {
	// URL is the base URL of the service, as http://127.0.0.1:port.
	URL string
	// AccessKey is the key the Server accepts in the x-access-key header.
	AccessKey string

	srv       *http.Server
	ln        net.Listener
	conns     conns
	closeOnce sync.Once
	hc        *http.Client    // HTTPClient's; on the in-memory network, Client's too
	ctx       context.Context // ends on Close; every request's context derives from it
	cancel    context.CancelFunc
	latency   time.Duration
	maxUpload int64
	fetch     *http.Client
	inMemory  bool

	mu        sync.Mutex
	requests  []Request      // the last maxRequests, oldest first
	counts    map[string]int // calls per operation since NewServer or Reset
	faults    map[string][]*Fault
	handlers  map[string]http.HandlerFunc
	files     map[string]file
	order     []string // file names, oldest first
	fileBytes int
}

type file struct {
	contentType string
	data        []byte
}

// An Option configures a Server in NewServer.
type Option func(*Server)

// WithAccessKey makes the Server accept key instead of DefaultAccessKey.
func WithAccessKey(key string) Option { return func(s *Server) { s.AccessKey = key } }

// WithLatency delays the answer to every call of every operation by d, as a
// slow service would. The wait ends early when the caller goes away or the
// Server closes; the connection is then closed without an answer.
func WithLatency(d time.Duration) Option { return func(s *Server) { s.latency = d } }

// WithMaxUpload sets the largest upload part, in bytes, the Server reads
// (DefaultMaxUpload unless set); a larger part is refused with a 400 naming
// the field. It also bounds the files the Server fetches from links.
func WithMaxUpload(n int64) Option { return func(s *Server) { s.maxUpload = n } }

// WithInMemoryNetwork serves on a network in memory instead of 127.0.0.1,
// for tests that run in a testing/synctest bubble, whose clock stops while
// a goroutine waits on a real socket: the Server's Client reaches it, and
// nothing else does (its URL still reads as a loopback URL). Make the
// Server inside the bubble. The operations that fetch a link (up-scale,
// the image and video transforms) fetch it over the real network.
func WithInMemoryNetwork() Option { return func(s *Server) { s.inMemory = true } }

// NewServer starts a Server on 127.0.0.1. It needs no options: the Server
// accepts DefaultAccessKey and answers every operation at once. It panics
// if it cannot listen on 127.0.0.1.
func NewServer(opts ...Option) *Server {
	s := &Server{
		AccessKey: DefaultAccessKey,
		maxUpload: DefaultMaxUpload,
		fetch:     loopbackClient(),
		faults:    map[string][]*Fault{},
		handlers:  map[string]http.HandlerFunc{},
		files:     map[string]file{},
	}
	for _, o := range opts {
		o(s)
	}
	var ln net.Listener
	if s.inMemory {
		mem := memnet.Listen()
		ln = mem
		s.hc = &http.Client{Transport: mem.Transport()}
	} else {
		tcp, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic("creativetest: cannot listen on 127.0.0.1: " + err.Error())
		}
		ln = tcp
		s.hc = &http.Client{Transport: &http.Transport{}}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.ln = ln
	s.conns.state = map[net.Conn]http.ConnState{}
	s.srv = &http.Server{
		Handler:     withRequestIDs(http.HandlerFunc(s.serve)),
		BaseContext: func(net.Listener) context.Context { return s.ctx },
		ConnState:   s.conns.track,
	}
	s.conns.wg.Add(1) // the serving goroutine, so that no connection comes after Close's wait
	go func() {
		defer s.conns.wg.Done()
		_ = s.srv.Serve(ln) // ends when Close closes ln
	}()
	s.URL = "http://" + ln.Addr().String()
	return s
}

// Close shuts the Server down and waits for the requests in flight. Delays
// in progress (WithLatency, Fault.Delay) end at once, and the context of
// every request in flight, as handlers given to Handle see it, is
// cancelled. Close may be called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.cancel()
		s.ln.Close()
		s.srv.SetKeepAlivesEnabled(false)
		s.conns.closeIdle()
		s.hc.CloseIdleConnections()
		s.conns.wg.Wait()
		s.fetch.CloseIdleConnections()
	})
}

// conns follows the Server's connections, as httptest.Server does, so that
// Close closes the idle ones at once and waits for the others, without
// polling (http.Server.Shutdown polls, which a synctest bubble sees as time
// passing).
type conns struct {
	mu     sync.Mutex
	closed bool
	state  map[net.Conn]http.ConnState
	wg     sync.WaitGroup // a count per connection open, and the serving goroutine
}

// track is the http.Server's ConnState hook.
func (cs *conns) track(c net.Conn, st http.ConnState) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	switch st {
	case http.StateNew:
		cs.wg.Add(1)
		cs.state[c] = st
	case http.StateActive, http.StateIdle:
		if _, ok := cs.state[c]; !ok {
			return
		}
		cs.state[c] = st
	case http.StateHijacked, http.StateClosed:
		if _, ok := cs.state[c]; ok {
			delete(cs.state, c)
			cs.wg.Done()
		}
		return
	}
	if cs.closed && st != http.StateActive {
		c.Close()
	}
}

// closeIdle closes the connections that carry no request, and every one
// that becomes so from now on.
func (cs *conns) closeIdle() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.closed = true
	for c, st := range cs.state {
		if st == http.StateNew || st == http.StateIdle {
			c.Close()
		}
	}
}

// A Request is what the Server received for one call.
type Request struct {
	// Operation is the operation's name, such as "image/text-to-image"
	// (see Operations); "" for a path that is no operation.
	Operation string
	// Method and Path are the request's method and URL path.
	Method, Path string
	// Header holds the request headers without x-access-key.
	Header http.Header
	// ContentType is the request's media type without parameters, such
	// as "application/json" or "multipart/form-data".
	ContentType string
	// JSON is the raw body, up to 1 MiB, of a call of an operation that
	// takes JSON, whatever its Content-Type.
	JSON []byte
	// Parts summarises the parts of a multipart form, in the order sent.
	Parts []Part
	// Status is the HTTP status the Server answered with, 0 when it closed
	// the connection without an answer (Fault.Drop, or the caller went
	// away during a delay).
	Status int
}

// A Part summarises one part of a multipart form. The Server hashes parts
// as it reads them and keeps no copy of an upload for the record.
type Part struct {
	// Name is the form field's name.
	Name string
	// FileName is the file name of a file part, "" for a text field.
	FileName string
	// ContentType is the part's Content-Type header.
	ContentType string
	// Value is a text field's value ("" for a file part).
	Value string
	// Size is the number of bytes read from the part: all of them, unless
	// the part was over the limit.
	Size int64
	// SHA256 is the hex SHA-256 of those bytes.
	SHA256 string
}

// Requests returns copies of the requests received so far, oldest first:
// every call of an operation's path, answered or refused, and calls of
// paths that are no operation, but not the downloads of files. It holds
// the last 10,000 requests; Count counts them all.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		r.Header = r.Header.Clone()
		r.JSON = slices.Clone(r.JSON)
		r.Parts = slices.Clone(r.Parts)
		out[i] = r
	}
	return out
}

// Count returns how many calls of op the Server received, whatever it
// answered.
func (s *Server) Count(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[op]
}

// Reset forgets the recorded requests, the faults not yet used and the
// handlers given to Handle. Generated files stay available.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
	s.counts = nil
	s.faults = map[string][]*Fault{}
	s.handlers = map[string]http.HandlerFunc{}
}

// A Fault makes the next calls of an operation fail, after the key check
// and after the body is read and recorded. The zero Fault answers one call
// with a 500 and the error envelope.
type Fault struct {
	// Times is how many calls fail; 0 means 1.
	Times int
	// Status is the HTTP status to answer with; 0 means 500.
	Status int
	// Message is the error envelope's message; "" means the status text.
	Message string
	// RetryAfter is the raw value of a Retry-After header to send, such
	// as "2" or an HTTP date; "" sends none.
	RetryAfter string
	// Delay is waited before failing. The wait ends early when the caller
	// goes away or the Server closes, and the connection is then closed
	// without an answer.
	Delay time.Duration
	// Drop closes the connection without an answer (after Delay).
	Drop bool
	// Body, when not "", is sent as it is instead of the envelope, such as
	// a proxy's HTML error page.
	Body string
	// ContentType goes with Body; "" means text/html; charset=utf-8.
	ContentType string
}

// Fail makes the next f.Times calls of op fail as f says. Faults given for
// one operation are used in the order given, each for its Times calls;
// other operations are not affected. It panics if op is not one of
// Operations.
func (s *Server) Fail(op string, f Fault) {
	mustKnow(op)
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[op] = append(s.faults[op], &f)
}

// Handle makes h answer the calls of op instead of the Server's own
// handler, after the key check and the recording of the request (h can read
// the whole body again); a nil h restores the Server's handler. Faults given
// with Fail come first. It panics if op is not one of Operations.
func (s *Server) Handle(op string, h http.HandlerFunc) {
	mustKnow(op)
	s.mu.Lock()
	defer s.mu.Unlock()
	if h == nil {
		delete(s.handlers, op)
		return
	}
	s.handlers[op] = h
}

func mustKnow(op string) {
	if opByName(op) == nil {
		panic(fmt.Sprintf("creativetest: unknown operation %q", op))
	}
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == maxRequests {
		s.requests = slices.Delete(s.requests, 0, maxRequests/10) // forget the oldest tenth
	}
	s.requests = append(s.requests, r)
	if s.counts == nil {
		s.counts = map[string]int{}
	}
	s.counts[r.Operation]++
}

// next returns the fault for op's next call, if any, and op's handler.
func (s *Server) next(op string) (*Fault, http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.handlers[op]
	q := s.faults[op]
	if len(q) == 0 {
		return nil, h
	}
	f := *q[0]
	if q[0].Times--; q[0].Times <= 0 {
		s.faults[op] = q[1:]
	}
	return &f, h
}

// wait sleeps for d unless the request's context (which Close ends too)
// ends first; it reports whether the whole wait passed.
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// abort closes the connection without an answer.
func abort() { panic(http.ErrAbortHandler) }

// store keeps a generated file and returns the URL it is served at. The
// newest files are kept, within maxFiles and maxFileBytes.
func (s *Server) store(ext, contentType string, data []byte) string {
	sum := sha256.Sum256(data)
	name := hex.EncodeToString(sum[:12]) + ext
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.files[name]; !ok {
		s.files[name] = file{contentType: contentType, data: data}
		s.order = append(s.order, name)
		s.fileBytes += len(data)
		for len(s.order) > 1 && (len(s.order) > maxFiles || s.fileBytes > maxFileBytes) {
			s.fileBytes -= len(s.files[s.order[0]].data)
			delete(s.files, s.order[0])
			s.order = s.order[1:]
		}
	}
	return s.URL + "/files/" + name
}

// file returns a stored file by its name.
func (s *Server) file(name string) (file, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[name]
	return f, ok
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		envelope(w, http.StatusMethodNotAllowed, false, "files take GET or HEAD, not "+r.Method, nil)
		return
	}
	f, ok := s.file(path.Base(r.URL.Path))
	if !ok {
		envelope(w, http.StatusNotFound, false, "no file at "+r.URL.Path, nil)
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	if r.Method == http.MethodGet {
		_, _ = w.Write(f.data)
	}
}

// envelope writes the response envelope with an exact Content-Length.
func envelope(w http.ResponseWriter, status int, success bool, message string, data any) {
	body := map[string]any{"success": success, "message": message}
	if success {
		body["data"] = data
	}
	b, err := json.Marshal(body)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"success":false,"message":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// statusRecorder remembers the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
	answer func() // records the request, once, before its answer goes out
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		r.answer()
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
		r.answer()
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// serve is the Server's one handler: files; then for an operation the
// method, the key, the body (read and recorded), the latency, a fault or a
// handler given to Handle, and at last the validation and the answer.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/files/") {
		s.serveFile(w, r)
		return
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()}
	rec.Header.Del("X-Access-Key")
	rec.ContentType = mediaType(r.Header.Get("Content-Type"))
	// The request is recorded before the caller can see its answer (or the
	// connection dropped), so Requests holds every call a client saw end.
	recorded := false
	sw := &statusRecorder{ResponseWriter: w}
	sw.answer = func() {
		if !recorded {
			recorded = true
			rec.Status = sw.status
			s.record(rec)
		}
	}
	defer sw.answer()

	op := opByPath(r.URL.Path)
	if op == nil {
		envelope(sw, http.StatusNotFound, false, "no operation at "+r.URL.Path, nil)
		return
	}
	rec.Operation = op.Name
	if r.Method != http.MethodPost {
		sw.Header().Set("Allow", http.MethodPost)
		envelope(sw, http.StatusMethodNotAllowed, false, op.Name+" takes POST, not "+r.Method, nil)
		return
	}
	switch key := r.Header.Get("X-Access-Key"); {
	case key == "":
		envelope(sw, http.StatusUnauthorized, false, "x-access-key: missing", nil)
		return
	case key != s.AccessKey:
		envelope(sw, http.StatusUnauthorized, false, "x-access-key: not a valid key", nil)
		return
	}

	fault, handler := s.next(op.Name)
	var tap *bytes.Buffer // a copy of the body read, for a handler to read again
	if fault == nil && handler != nil {
		tap = new(bytes.Buffer)
	}
	in, bad := s.readBody(r, op, &rec, fault == nil && handler == nil, tap)
	if !wait(r, s.latency) {
		abort()
	}
	switch {
	case fault != nil:
		s.fault(sw, r, fault)
	case handler != nil:
		// The handler reads the body from its start: what was read for
		// the record, then the rest.
		r.Body = readCloser{io.MultiReader(tap, r.Body), r.Body}
		handler(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK // what net/http answers for a handler that wrote nothing
		}
	case bad != "":
		envelope(sw, http.StatusBadRequest, false, bad, nil)
	default:
		res, bad := s.run(op, in)
		switch {
		case bad != "":
			envelope(sw, http.StatusBadRequest, false, bad, nil)
		case res.audio != nil:
			sw.Header().Set("Content-Type", res.audioType)
			sw.Header().Set("Content-Length", strconv.Itoa(len(res.audio)))
			sw.WriteHeader(http.StatusOK)
			_, _ = sw.Write(res.audio)
		default:
			envelope(sw, http.StatusOK, true, op.Name+": done", res.data)
		}
	}
}

// run checks the request in and answers it; bad is the message of a 400.
func (s *Server) run(op *operation, in *input) (res result, bad string) {
	req, bad := in.request(op.Op)
	if bad != "" {
		return result{}, bad
	}
	res, err := op.answer.run(s, in, req)
	if err != nil {
		return result{}, err.Error()
	}
	return res, ""
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

func (s *Server) fault(w *statusRecorder, r *http.Request, f *Fault) {
	if !wait(r, f.Delay) {
		abort()
	}
	if f.Drop {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			abort()
		}
		w.answer()
		_ = conn.Close()
		return
	}
	status := f.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.Body != "" {
		ct := f.ContentType
		if ct == "" {
			ct = "text/html; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Body)))
		w.WriteHeader(status)
		_, _ = w.Write([]byte(f.Body))
		return
	}
	msg := f.Message
	if msg == "" {
		msg = http.StatusText(status)
	}
	envelope(w, status, false, msg, nil)
}
