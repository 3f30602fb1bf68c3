// Package creativetest runs the Creative Generation Service in process, for
// tests and for trying the SDK with no key and no network.
//
// A Server answers all sixteen operations on 127.0.0.1 the way the service's
// interface specification says: it checks the access key, the method, the
// content type, required fields and their JSON types, the limits and the
// known ids, and answers with real media: PNG images of the requested
// aspect, a QR code that scans, MP3 speech, WAV music, animated GIF video.
// Files it links to are served under /files/ without a key. It records the
// requests it receives, can fail operations on purpose (status codes,
// Retry-After, latency, dropped connections) and can hand an operation to
// a handler of yours.
//
// Where the specification shows nothing, the fake makes a choice, documented
// where it applies: a missing or wrong key is a 401 with the error envelope;
// generate-logo answers one logo as an object and several as a list; links
// to hosts that are not loopback are not fetched, and a generated stand-in
// image takes their place.
package creativetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultAccessKey is the access key a Server accepts unless WithAccessKey
// sets another.
const DefaultAccessKey = "creativetest-access-key"

// DefaultMaxUpload is the largest upload part a Server reads (64 MiB)
// unless WithMaxUpload sets another.
const DefaultMaxUpload = 64 << 20

// maxFiles is how many generated files a Server keeps; older ones are
// forgotten (404).
const maxFiles = 256

// A Server is the fake service, listening on a system-chosen port on the
// loopback interface. Close it when done.
type Server struct {
	// URL is the base URL of the service, as http://127.0.0.1:port.
	URL string
	// AccessKey is the key the Server accepts in the x-access-key header.
	AccessKey string

	srv       *httptest.Server
	latency   time.Duration
	maxUpload int64
	closed    chan struct{}
	closeOnce sync.Once
	fetch     *http.Client

	mu       sync.Mutex
	requests []Request
	faults   map[string][]*Fault
	handlers map[string]http.HandlerFunc
	files    map[string]file
	order    []string
}

type file struct {
	contentType string
	data        []byte
}

// An Option configures a Server in NewServer.
type Option func(*Server)

// WithAccessKey makes the Server accept key instead of DefaultAccessKey.
func WithAccessKey(key string) Option { return func(s *Server) { s.AccessKey = key } }

// WithLatency delays every operation's answer by d (the request context
// still ends the wait).
func WithLatency(d time.Duration) Option { return func(s *Server) { s.latency = d } }

// WithMaxUpload sets the largest upload part, in bytes, the Server reads; a
// larger one is refused with a 400.
func WithMaxUpload(n int64) Option { return func(s *Server) { s.maxUpload = n } }

// NewServer starts a Server on 127.0.0.1.
func NewServer(opts ...Option) *Server {
	s := &Server{
		AccessKey: DefaultAccessKey,
		maxUpload: DefaultMaxUpload,
		closed:    make(chan struct{}),
		fetch:     &http.Client{Timeout: 5 * time.Second},
		faults:    map[string][]*Fault{},
		handlers:  map[string]http.HandlerFunc{},
		files:     map[string]file{},
	}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close shuts the Server down, ending injected delays, and waits for the
// requests in flight.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
	s.srv.Close()
	s.fetch.CloseIdleConnections()
}

// Operations lists the names of the sixteen operations, as the Server
// records them and as Fail and Handle take them: the path without the
// version, such as "image/text-to-image".
func Operations() []string {
	out := make([]string, 0, len(operations))
	for _, op := range operations {
		out = append(out, op.name)
	}
	return out
}

// A Request is what the Server received for one call of an operation.
type Request struct {
	// Operation is the operation's name, such as "image/text-to-image".
	Operation string
	// Method and Path are the request's method and URL path.
	Method, Path string
	// Header holds the request headers without x-access-key.
	Header http.Header
	// ContentType is the request's media type, such as "application/json".
	ContentType string
	// JSON is the raw body of a JSON request.
	JSON []byte
	// Parts summarises the parts of a form request, in order.
	Parts []Part
	// Status is the HTTP status the Server answered with (0 for a dropped
	// connection).
	Status int
}

// A Part summarises one part of a form request.
type Part struct {
	// Name is the form field's name.
	Name string
	// FileName is the file name of a file part, "" for a text field.
	FileName string
	// ContentType is the part's Content-Type header.
	ContentType string
	// Value is a text field's value.
	Value string
	// Size is the number of bytes in the part.
	Size int64
	// SHA256 is the hex SHA-256 of the part's bytes.
	SHA256 string
}

// Requests returns a copy of the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count returns how many requests for op the Server received.
func (s *Server) Count(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.Operation == op {
			n++
		}
	}
	return n
}

// Reset forgets the recorded requests, pending faults and handlers.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
	s.faults = map[string][]*Fault{}
	s.handlers = map[string]http.HandlerFunc{}
}

// A Fault makes the next calls of an operation fail. Faults given for one
// operation apply in the order given.
type Fault struct {
	// Times is how many calls fail; 0 means 1.
	Times int
	// Status is the HTTP status to answer with; 0 means 500.
	Status int
	// Message is the error envelope's message; empty means the status text.
	Message string
	// RetryAfter is the raw value of a Retry-After header to send, such as
	// "2" or an HTTP date.
	RetryAfter string
	// Delay is waited before failing (the request context ends the wait).
	Delay time.Duration
	// Drop closes the connection without an answer.
	Drop bool
	// Body is sent as is instead of the envelope, such as an HTML page.
	Body string
	// ContentType goes with Body; empty means text/html.
	ContentType string
}

// Fail makes the next f.Times calls of op fail as f says. It panics for an
// unknown operation name.
func (s *Server) Fail(op string, f Fault) {
	mustKnow(op)
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[op] = append(s.faults[op], &f)
}

// Handle makes h answer op's calls (after the key check and recording),
// instead of the Server's own handler; a nil h restores it. It panics for an
// unknown operation name.
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
	if _, ok := operations["/"+strings.Replace(op, "/", "/v1/", 1)]; !ok {
		panic(fmt.Sprintf("creativetest: unknown operation %q", op))
	}
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

func (s *Server) nextFault(op string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.faults[op]
	if len(q) == 0 {
		return nil
	}
	f := *q[0]
	if q[0].Times--; q[0].Times <= 0 {
		s.faults[op] = q[1:]
	}
	return &f
}

// wait sleeps for d unless the request or the Server ends first; it reports
// whether the whole wait passed.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.closed:
	}
	return false
}

// store keeps a generated file and returns the URL it is served at.
func (s *Server) store(ext, contentType string, data []byte) string {
	sum := sha256.Sum256(data)
	name := hex.EncodeToString(sum[:12]) + ext
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.files[name]; !ok {
		s.files[name] = file{contentType: contentType, data: data}
		s.order = append(s.order, name)
		if len(s.order) > maxFiles {
			delete(s.files, s.order[0])
			s.order = s.order[1:]
		}
	}
	return s.URL + "/files/" + name
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.files[path.Base(r.URL.Path)]
	s.mu.Unlock()
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.NotFound(w, r)
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

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/files/") {
		s.serveFile(w, r)
		return
	}
	op, ok := operations[r.URL.Path]
	if !ok {
		envelope(w, http.StatusNotFound, false, "no operation at "+r.URL.Path, nil)
		return
	}
	rec := Request{Operation: op.name, Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()}
	rec.Header.Del("X-Access-Key")
	rec.ContentType, _, _ = strings.Cut(r.Header.Get("Content-Type"), ";")
	rec.ContentType = strings.TrimSpace(strings.ToLower(rec.ContentType))
	sw := &statusRecorder{ResponseWriter: w}
	defer func() { rec.Status = sw.status; s.record(rec) }()

	if r.Method != http.MethodPost {
		sw.Header().Set("Allow", http.MethodPost)
		envelope(sw, http.StatusMethodNotAllowed, false, op.name+" takes POST, not "+r.Method, nil)
		return
	}
	if r.Header.Get("X-Access-Key") != s.AccessKey {
		envelope(sw, http.StatusUnauthorized, false, "x-access-key: missing or not valid", nil)
		return
	}
	if !s.wait(r, s.latency) {
		return
	}
	if f := s.nextFault(op.name); f != nil {
		s.fault(sw, r, f)
		return
	}
	s.mu.Lock()
	h := s.handlers[op.name]
	s.mu.Unlock()
	if h != nil {
		h(sw, r)
		return
	}
	in, bad := s.readInput(r, op, &rec)
	if bad == "" {
		var res result
		res, bad = op.run(s, in)
		if bad == "" {
			if res.audio != nil {
				sw.Header().Set("Content-Type", res.audioType)
				sw.Header().Set("Content-Length", strconv.Itoa(len(res.audio)))
				sw.WriteHeader(http.StatusOK)
				_, _ = sw.Write(res.audio)
				return
			}
			envelope(sw, http.StatusOK, true, op.name+": done", res.data)
			return
		}
	}
	envelope(sw, http.StatusBadRequest, false, bad, nil)
}

func (s *Server) fault(w http.ResponseWriter, r *http.Request, f *Fault) {
	if !s.wait(r, f.Delay) {
		return
	}
	if f.Drop {
		if hj, ok := w.(*statusRecorder).ResponseWriter.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
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
