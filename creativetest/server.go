package creativetest

import (
	"net/http"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/fake"
	"github.com/creativegen/creative-go/internal/ops"
)

// The names of the operations, as Requests records them and as Fail, Handle
// and Count take them: the path without the version segment.
const (
	OpWriterTool            = ops.WriterTool            // POST /text/v1/writer-tool
	OpTextToMusic           = ops.TextToMusic           // POST /audio/v1/text-to-music
	OpTextToSpeech          = ops.TextToSpeech          // POST /audio/v1/text-to-speech
	OpEnhanceAudio          = ops.EnhanceAudio          // POST /audio/v1/enhance (form)
	OpSplitAudio            = ops.SplitAudio            // POST /audio/v1/split-audio (form)
	OpTextToImage           = ops.TextToImage           // POST /image/v1/text-to-image
	OpGenerateLogo          = ops.GenerateLogo          // POST /image/v1/generate-logo
	OpGenerateQR            = ops.GenerateQR            // POST /image/v1/generate-qr
	OpUpScale               = ops.UpScale               // POST /image/v1/up-scale
	OpReImagine             = ops.ReImagine             // POST /image/v1/re-imagine (form)
	OpRemoveBackground      = ops.RemoveBackground      // POST /image/v1/remove-background
	OpColorImage            = ops.ColorImage            // POST /image/v1/color-image
	OpEnhanceImage          = ops.EnhanceImage          // POST /image/v1/enhance
	OpChangeBackground      = ops.ChangeBackground      // POST /image/v1/change-background (form)
	OpInfiniteZoom          = ops.InfiniteZoom          // POST /video/v1/infinite-zoom
	OpRemoveVideoBackground = ops.RemoveVideoBackground // POST /video/v1/remove-background
)

// DefaultAccessKey is the access key a Server accepts unless WithAccessKey
// sets another.
const DefaultAccessKey = fake.DefaultAccessKey

// DefaultMaxUpload is the largest upload part a Server reads (64 MiB)
// unless WithMaxUpload sets another.
const DefaultMaxUpload = fake.DefaultMaxUpload

// A Server is the fake service, listening on a system-chosen port on the
// loopback interface. Its methods are safe for concurrent use. Close it when
// done.
type Server struct {
	// URL is the base URL of the service, as http://127.0.0.1:port.
	URL string
	// AccessKey is the key the Server accepts in the x-access-key header.
	AccessKey string

	f *fake.Server
}

// An Option configures a Server in NewServer.
type Option = fake.Option

// WithAccessKey makes the Server accept key instead of DefaultAccessKey.
func WithAccessKey(key string) Option { return fake.WithAccessKey(key) }

// WithLatency delays the answer to every call of every operation by d, as a
// slow service would. The wait ends early when the caller goes away or the
// Server closes; the connection is then closed without an answer.
func WithLatency(d time.Duration) Option { return fake.WithLatency(d) }

// WithMaxUpload sets the largest upload part, in bytes, the Server reads
// (DefaultMaxUpload unless set); a larger part is refused with a 400 naming
// the field. It also bounds the files the Server fetches from links.
func WithMaxUpload(n int64) Option { return fake.WithMaxUpload(n) }

// WithInMemoryNetwork serves on a network in memory instead of 127.0.0.1,
// for tests that run in a testing/synctest bubble, whose clock stops while
// a goroutine waits on a real socket: the Server's Client reaches it, and
// nothing else does (its URL still reads as a loopback URL). Make the
// Server inside the bubble. The operations that fetch a link (up-scale,
// the image and video transforms) fetch it over the real network.
func WithInMemoryNetwork() Option { return fake.WithInMemoryNetwork() }

// NewServer starts a Server on 127.0.0.1. It needs no options: the Server
// accepts DefaultAccessKey and answers every operation at once. It panics
// if it cannot listen on 127.0.0.1.
func NewServer(opts ...Option) *Server {
	f := fake.NewServer(opts...)
	return &Server{URL: f.URL, AccessKey: f.AccessKey, f: f}
}

// Close shuts the Server down and waits for the requests in flight. Delays
// in progress (WithLatency, Fault.Delay) end at once, and the context of
// every request in flight, as handlers given to Handle see it, is
// cancelled. Close may be called more than once.
func (s *Server) Close() { s.f.Close() }

// A Request is what the Server received for one call.
//
// Its fields: Operation, Method, Path, Header (without x-access-key),
// ContentType, JSON (the raw body of a JSON call), Parts (of a form) and
// Status (0 when the Server closed the connection without an answer); the
// type is internal/fake's, where each field is documented.
type Request = fake.Request

// A Part summarises one part of a multipart form. The Server hashes parts
// as it reads them and keeps no copy of an upload for the record.
//
// Its fields: Name, FileName, ContentType, Value (a text field's),
// Size and SHA256 (of the bytes read); the type is internal/fake's,
// where each field is documented.
type Part = fake.Part

// A Fault makes the next calls of an operation fail, after the key check
// and after the body is read and recorded. The zero Fault answers one call
// with a 500 and the error envelope.
//
// Its fields: Times (0 means 1), Status (0 means 500), Message,
// RetryAfter (a raw header value), Delay, Drop (close without an
// answer), Body and ContentType (sent instead of the envelope); the type
// is internal/fake's, where each field is documented.
type Fault = fake.Fault

// Requests returns copies of the requests received so far, oldest first:
// every call of an operation's path, answered or refused, and calls of
// paths that are no operation, but not the downloads of files. It holds
// the last 10,000 requests; Count counts them all.
func (s *Server) Requests() []Request { return s.f.Requests() }

// Count returns how many calls of op the Server received, whatever it
// answered.
func (s *Server) Count(op string) int { return s.f.Count(op) }

// Reset forgets the recorded requests, the faults not yet used and the
// handlers given to Handle. Generated files stay available.
func (s *Server) Reset() { s.f.Reset() }

// Fail makes the next f.Times calls of op fail as f says. Faults given for
// one operation are used in the order given, each for its Times calls;
// other operations are not affected. It panics if op is not one of
// Operations.
func (s *Server) Fail(op string, f Fault) { s.f.Fail(op, f) }

// Handle makes h answer the calls of op instead of the Server's own
// handler, after the key check and the recording of the request (h can read
// the whole body again); a nil h restores the Server's handler. Faults given
// with Fail come first. It panics if op is not one of Operations.
func (s *Server) Handle(op string, h http.HandlerFunc) { s.f.Handle(op, h) }

// HTTPClient returns an http.Client that reaches the Server, on 127.0.0.1
// or on its in-memory network (WithInMemoryNetwork), for requests made by
// hand or for a program that builds its own SDK client
// (creative.WithHTTPClient).
func (s *Server) HTTPClient() *http.Client { return s.f.HTTPClient() }

// Client returns an SDK client wired to the Server: its URL and access key,
// and retry waits of a few milliseconds so that tests of retry paths run
// fast (a Retry-After the Server sends is still honoured, unless opts hold
// InstantRetryAfter). opts come after these and override them. It panics if
// an option is invalid.
func (s *Server) Client(opts ...creative.Option) *creative.Client { return s.f.Client(opts...) }

// Operations returns the names of the sixteen operations in the order of
// the specification's endpoint list, such as "image/text-to-image": the
// names Requests records and Fail, Handle and Count take.
func Operations() []string { return fake.Operations() }
