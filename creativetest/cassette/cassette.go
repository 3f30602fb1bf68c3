// Package cassette records the answers of the Creative Generation Service
// once and replays them for ever, so that integration tests run against
// the real service's answers without paying for them on every run.
//
// A Cassette is a folder: an index, cassette.jsonl, with one line per
// interaction (the operation, the request's fields, the status, the
// request id, the headers and where the body lives), and the bodies
// beside it in bodies/, each named by the SHA-256 of its content; the
// base64 images of a JSON answer are taken out of it to image files of
// their own, and put back when it replays. It
// plugs into a Client as middleware (Option), so every call and download
// of the Client passes it:
//
//	cas := cassette.Start(t, filepath.Join("testdata", "cassettes", t.Name()), cassette.Replay, nil)
//	c, err := cas.Client() // or creative.New(..., cas.Option())
//
// In Record mode every request goes to the service, and each answer is
// written and flushed to disk before the caller gets it: a process that
// dies after k calls keeps k. A speech stream is written as it passes,
// chunk by chunk, and kept once it ends. In Replay mode nothing is sent:
// a request that matches no recording fails at once with a *MissError that
// names the nearest recorded request and the fields that differ. In
// RecordMissing mode what is recorded is replayed and the rest is sent and
// recorded. CREATIVE_RECORD_MODE (record, replay or record-missing)
// overrides the mode set in code, so one go test line records and the same
// line replays.
//
// Requests match on their operation and their canonical fields, the form
// package batch identifies a job by: JSON bodies compared as values, the
// counts the SDK fills in brought to one form, uploaded files by their
// form field and the SHA-256 of their bytes. Headers, the access key among
// them, play no part. Identical requests replay their recordings in the
// order recorded, so a retried 503 replays as it happened.
//
// The access key never reaches a cassette: every text written (the
// index, JSON and text bodies, headers, URLs) passes the SDK's own
// redactor, which finds the key as it is and in every escaped form a
// server may echo it in; binary and long bodies are written over, a
// window at a time and at the same length, wherever the redactor finds
// the key in them (in any of those forms); an uploaded file that holds
// one is matched by its hash and not kept. Check finds what looks like a key in a cassette, for CI.
//
// Links in an answer (a music or video URL) are rewritten, when recording,
// to https://cassette.invalid/files/ and the SHA-256 of the linked file,
// which is downloaded then and kept beside the answer; Download and batch
// replay them offline. The cassette downloads them with the SDK's own
// Client.Download, made with the base URL and key of the call that got
// the answer, so that every check of a link the service gave applies: a
// link that holds the key is not fetched, nor one on a private address
// other than the service's own origin, nor more than
// Options.MaxBodyBytes. A link refused or failed stays as it came, its
// key redacted.
package cassette

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/redact"
)

// A Mode says what a Cassette does with a request.
type Mode int

// The modes of a Cassette.
const (
	// Replay answers from the recordings only: nothing is sent, and a
	// request that matches no recording fails with a *MissError.
	Replay Mode = iota
	// Record sends every request and records every answer, starting the
	// cassette anew: the recordings it held are forgotten (when no other
	// process records into it at the time; beside others, it adds to
	// theirs).
	Record
	// RecordMissing replays what is recorded and sends and records the
	// requests that match no recording.
	RecordMissing
)

// String returns the mode's name as CREATIVE_RECORD_MODE writes it.
func (m Mode) String() string {
	switch m {
	case Replay:
		return "replay"
	case Record:
		return "record"
	case RecordMissing:
		return "record-missing"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads a mode's name: "replay", "record" or "record-missing".
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Replay, Record, RecordMissing} {
		if strings.EqualFold(strings.TrimSpace(s), m.String()) {
			return m, nil
		}
	}
	return 0, fmt.Errorf("cassette: %q is no mode (want replay, record or record-missing)", s)
}

// Environment variables read by Open and FromEnv.
const (
	// EnvMode names the variable that overrides the mode set in code:
	// replay, record or record-missing.
	EnvMode = "CREATIVE_RECORD_MODE"
	// EnvCassette names the variable holding the folder of the cassette
	// the command line records to or replays from (FromEnv).
	EnvCassette = "CREATIVE_CASSETTE"
	// EnvPacing, set to "off", replays streams as fast as they are read.
	EnvPacing = "CREATIVE_REPLAY_PACING"
)

// Options tune a Cassette. The zero Options are what most tests want.
type Options struct {
	// Keys are access keys to keep out of the cassette besides those the
	// requests carry and CREATIVE_ACCESS_KEY.
	Keys []string
	// NoPacing replays a stream as fast as it is read, instead of with
	// the pauses recorded between its chunks.
	NoPacing bool
	// HTTPClient is the HTTP client (its transport, proxy and TLS
	// settings) the files answers link to are downloaded through, when
	// recording; they are downloaded with the SDK's own Download, under
	// its checks, whatever the client (default: the SDK's pooled
	// transport).
	HTTPClient *http.Client
	// MaxBodyBytes bounds each answer and each linked file recorded
	// (default 1 GiB).
	MaxBodyBytes int64
	// OnMiss is told of each request that matched no recording in Replay
	// mode, before the call fails with it (Start makes it the test's
	// Errorf).
	OnMiss func(error)
	// IgnoreEnv keeps the mode set in code whatever CREATIVE_RECORD_MODE
	// says.
	IgnoreEnv bool
}

// DefaultMaxBodyBytes bounds each answer and linked file recorded unless
// Options.MaxBodyBytes says otherwise.
const DefaultMaxBodyBytes = 1 << 30

// A Cassette records and replays the interactions of Clients with the
// service. It is safe for concurrent use; Close it when done.
type Cassette struct {
	dir  string
	mode Mode
	o    Options
	st   *store

	mu      sync.Mutex
	keys    []string
	red     *redact.Redactor
	dls     map[string]*creative.Client // base URL and key -> the Client links are downloaded with
	used    map[string]int              // recordings of a request replayed or made so far
	links   map[string]string           // rewritten link -> the link it stands for, this run
	sent    int
	replays int
	closed  bool
}

// Open opens the cassette in the folder dir, creating it when recording,
// in mode unless CREATIVE_RECORD_MODE names another. In Record mode the
// recordings dir held are forgotten. o may be nil.
func Open(dir string, mode Mode, o *Options) (*Cassette, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if v := os.Getenv(EnvMode); v != "" && !opts.IgnoreEnv {
		m, err := ParseMode(v)
		if err != nil {
			return nil, fmt.Errorf("%w (check %s)", err, EnvMode)
		}
		mode = m
	}
	if strings.EqualFold(os.Getenv(EnvPacing), "off") {
		opts.NoPacing = true
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	st, err := openStore(dir, mode)
	if err != nil {
		return nil, err
	}
	c := &Cassette{dir: dir, mode: mode, o: opts, st: st, used: map[string]int{}, links: map[string]string{}, dls: map[string]*creative.Client{}}
	c.keys = append(c.keys, opts.Keys...)
	if k := os.Getenv(creative.EnvAccessKey); k != "" {
		c.keys = append(c.keys, k)
	}
	c.red = redact.New(c.keys)
	return c, nil
}

// Start opens the cassette in dir for the test tb, as Open does, fails tb
// at once if it cannot, closes it when tb ends, and reports each miss in
// replay as an error of tb.
func Start(tb TB, dir string, mode Mode, o *Options) *Cassette {
	tb.Helper()
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.OnMiss == nil {
		opts.OnMiss = func(err error) { tb.Errorf("%v", err) }
	}
	c, err := Open(dir, mode, &opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Error(err)
		}
	})
	return c
}

// FromEnv opens the cassette in the folder CREATIVE_CASSETTE names, in the
// mode CREATIVE_RECORD_MODE names (Replay when unset), reading the
// variables with getenv (os.Getenv when nil). It returns nil and no error
// when CREATIVE_CASSETTE is unset. The command line records and replays
// through it.
func FromEnv(getenv func(string) string) (*Cassette, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	dir := getenv(EnvCassette)
	if dir == "" {
		return nil, nil
	}
	mode := Replay
	if v := getenv(EnvMode); v != "" {
		m, err := ParseMode(v)
		if err != nil {
			return nil, fmt.Errorf("%w (check %s)", err, EnvMode)
		}
		mode = m
	}
	return Open(dir, mode, &Options{IgnoreEnv: true, NoPacing: strings.EqualFold(getenv(EnvPacing), "off")})
}

// AccessKey returns CREATIVE_ACCESS_KEY, or when it is unset a stand-in
// key: in replay no key is needed, since nothing is sent and the key plays
// no part in matching.
func AccessKey() string {
	if k := os.Getenv(creative.EnvAccessKey); k != "" {
		return k
	}
	return "cassette-replay-key"
}

// Mode returns the mode the cassette runs in, the environment's word
// taken into account (Replay for a nil Cassette).
func (c *Cassette) Mode() Mode {
	if c == nil {
		return Replay
	}
	return c.mode
}

// Dir returns the cassette's folder ("" for a nil Cassette).
func (c *Cassette) Dir() string {
	if c == nil {
		return ""
	}
	return c.dir
}

// errNotOpened fails what a nil or zero Cassette is asked to do: FromEnv
// returns nil when CREATIVE_CASSETTE is unset, and only Open and Start
// make a Cassette that can record or replay.
var errNotOpened = errors.New("cassette: a nil or zero Cassette: open one with Open, Start or FromEnv (which returns nil when CREATIVE_CASSETTE is unset)")

// opened reports whether c was made by Open: a nil or zero Cassette has
// no folder to record into or replay from.
func (c *Cassette) opened() bool { return c != nil && c.st != nil }

// Option returns the client option that sends every attempt of every call
// and download of a Client through the cassette. Give it to creative.New
// (or creativetest.Server.Client).
func (c *Cassette) Option() creative.Option { return creative.WithMiddleware(c.middleware) }

// Sent returns how many requests the cassette let through to the network.
func (c *Cassette) Sent() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent
}

// Replayed returns how many answers the cassette replayed.
func (c *Cassette) Replayed() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.replays
}

// Close ends the recording. The index is whole after every answer, in
// the order the answers came, so nothing is written again and nothing is
// removed: other processes may be recording into the same cassette
// (several recorders share it: each appends under a lock of the folder,
// .cassette.lock, and replays what the others recorded meanwhile). A
// cassette that is never closed is as whole. Close may be called more
// than once, and on a nil Cassette (FromEnv's when no cassette is asked
// for), which holds nothing.
func (c *Cassette) Close() error {
	if !c.opened() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	for _, dl := range c.dls {
		dl.CloseIdleConnections()
	}
	return c.st.close()
}

// errClosed refuses a request after Close.
var errClosed = errors.New("cassette: closed")

// ReplayBaseURL is the base URL Client gives a replaying Client when
// CREATIVE_BASE_URL is unset: a name that never resolves, since nothing
// is sent.
const ReplayBaseURL = "https://" + cassetteHost

// Client returns a Client whose calls and downloads go through the
// cassette, its base URL and key read from CREATIVE_BASE_URL and
// CREATIVE_ACCESS_KEY as creative.New reads them; when replaying, unset
// ones get stand-ins (ReplayBaseURL, AccessKey), so CI needs neither.
// opts come after and override.
func (c *Cassette) Client(opts ...creative.Option) (*creative.Client, error) {
	if !c.opened() {
		return nil, errNotOpened
	}
	var all []creative.Option
	if c.mode == Replay {
		if os.Getenv(creative.EnvBaseURL) == "" {
			all = append(all, creative.WithBaseURL(ReplayBaseURL))
		}
		all = append(all, creative.WithAccessKey(AccessKey()))
	}
	all = append(all, c.Option())
	return creative.New(append(all, opts...)...)
}
