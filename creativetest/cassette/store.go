package cassette

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/atomicfile"
)

// The names inside a cassette's folder.
const (
	indexName = "cassette.jsonl"
	bodiesDir = "bodies"
)

// An entry is one interaction, one line of the index.
type entry struct {
	// Op is the operation, such as "image/text-to-image", or "download".
	Op string `json:"op"`
	// Request is the request's canonical fields, without the operation.
	Request jsontext.Value `json:"request"`
	// Status is the answer's HTTP status.
	Status int `json:"status"`
	// RequestID is the answer's request id, for a reader of the index.
	RequestID string `json:"requestId,omitzero"`
	// Header holds the answer's headers, without the volatile ones.
	Header http.Header `json:"header,omitzero"`
	// Body names the body's file, "bodies/" and its SHA-256 and an
	// extension; "" for an empty body.
	Body string `json:"body,omitzero"`
	// Parts are the images taken out of a JSON body, each a file beside
	// it that the body names in their place.
	Parts []string `json:"parts,omitzero"`
	// Chunks are a stream's chunks as they came: each its size in bytes
	// and when it came, in milliseconds after the answer's headers.
	Chunks [][2]int64 `json:"chunks,omitzero"`

	key string // the canonical content the entry matches
}

// A store is a cassette's folder: the index, appended to and flushed
// once per interaction, and the bodies.
type store struct {
	root    *os.Root
	index   *os.File // open for appending when recording
	entries []*entry
	byKey   map[string][]*entry
}

// openStore opens the cassette in dir: read for Replay, created when
// recording, emptied for Record. A last line cut short by a crash is
// dropped.
func openStore(dir string, mode Mode) (*store, error) {
	if mode != Replay {
		if err := os.MkdirAll(path.Join(dir, bodiesDir), 0o755); err != nil {
			return nil, fmt.Errorf("cassette: %w", err)
		}
	}
	root, err := os.OpenRoot(dir)
	if mode == Replay && errors.Is(err, fs.ErrNotExist) {
		return nil, noRecording(dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	st := &store{root: root, byKey: map[string][]*entry{}}
	good, err := st.load(mode)
	if err != nil {
		root.Close()
		return nil, err
	}
	if mode == Replay {
		return st, nil
	}
	f, err := root.OpenFile(indexName, os.O_RDWR|os.O_CREATE, 0o644)
	if err == nil && mode == Record {
		good = 0
	}
	if err == nil {
		err = f.Truncate(good)
	}
	if err == nil {
		_, err = f.Seek(good, io.SeekStart)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("cassette: %w", err)
	}
	if mode == Record {
		st.entries, st.byKey = nil, map[string][]*entry{}
	}
	st.index = f
	return st, atomicfile.SyncDir(root, ".")
}

// load reads the index and returns the length of its whole lines. A
// missing index is an empty cassette, except in Replay, where it is an
// error: a replay that finds nothing would fail call by call.
// noRecording is the error of a replay with nothing to replay in dir (err
// says what is missing): it says how to record.
func noRecording(dir string, err error) error {
	return fmt.Errorf("cassette: %s holds no recording (%w); record it first: run once with %s=record, against the real service (%s set) "+
		"or for free against the fake one (a creativetest.Server's Client, or creative --fake); see docs/testing.md", dir, err, EnvMode, creative.EnvAccessKey)
}

func (st *store) load(mode Mode) (int64, error) {
	f, err := st.root.Open(indexName)
	if errors.Is(err, fs.ErrNotExist) {
		if mode == Replay {
			return 0, noRecording(st.root.Name(), err)
		}
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cassette: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var good int64
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return good, nil // a line without its newline was cut short
		}
		if err != nil {
			return 0, fmt.Errorf("cassette: %w", err)
		}
		good += int64(len(line))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e entry
		if err := json.Unmarshal(line, &e); err != nil {
			return 0, fmt.Errorf("cassette: %s line %d: %w", indexName, n, err)
		}
		if e.key, err = keyOf(e.Op, e.Request); err != nil {
			return 0, fmt.Errorf("cassette: %s line %d: %w", indexName, n, err)
		}
		st.add(&e)
	}
}

func (st *store) add(e *entry) {
	st.entries = append(st.entries, e)
	st.byKey[e.key] = append(st.byKey[e.key], e)
}

// keyOf is the canonical content an entry of op with fields req matches.
func keyOf(op string, req jsontext.Value) (string, error) {
	var fields map[string]any
	if err := json.Unmarshal(req, &fields); err != nil {
		return "", err
	}
	return content(op, fields)
}

// marshalEntry is e as one line of the index.
func marshalEntry(e *entry) ([]byte, error) {
	b, err := json.Marshal(e, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// append writes e to the index and flushes it to disk before returning:
// the interaction is kept from then on, whatever happens to the process.
func (st *store) append(e *entry, redact func(string) string) error {
	b, err := marshalEntry(e)
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	if r := redact(string(b)); r != string(b) {
		b = []byte(r) // a key in a place no field's redaction reached
	}
	if _, err := st.index.Write(b); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	if err := st.index.Sync(); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	st.add(e)
	return nil
}

// A spool is a body being written to a temporary file in bodies/, hashed
// as it goes, and kept under the name of its hash once whole.
type spool struct {
	t    *atomicfile.Temp
	h    hash.Hash
	n    int64
	head []byte // the first bytes, to name the file's type
}

func (st *store) spool() (*spool, error) {
	t, err := atomicfile.CreateTemp(st.root, bodiesDir, "body-")
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	return &spool{t: t, h: sha256.New()}, nil
}

func (s *spool) Write(p []byte) (int, error) {
	if len(s.head) < 512 {
		s.head = append(s.head, p[:min(len(p), 512-len(s.head))]...)
	}
	n, err := s.t.Write(p)
	s.h.Write(p[:n])
	s.n += int64(n)
	return n, err
}

// keep flushes the spool and names it bodies/<sha256><ext>, where ext
// follows the declared content type, else the first bytes. A file of
// that name is already the same bytes. It returns the name, "" for no
// bytes.
func (s *spool) keep(ext string) (string, error) {
	defer s.t.Remove()
	if err := s.t.Flush(); err != nil {
		return "", fmt.Errorf("cassette: %w", err)
	}
	if s.n == 0 {
		return "", nil
	}
	name := path.Join(bodiesDir, hex.EncodeToString(s.h.Sum(nil))+ext)
	if err := s.t.Link(name); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("cassette: %w", err)
	}
	return name, nil
}

// uploadHash finds the files a request uploaded, by the hash its fields
// give them.
var uploadHash = regexp.MustCompile(`"sha256:([0-9a-f]{64})"`)

// close writes the index again in a stable order and removes the bodies
// no entry names; for a cassette opened for Replay it only releases it.
func (st *store) close() error {
	defer st.root.Close()
	if st.index == nil {
		return nil
	}
	if err := st.index.Close(); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	sorted := slices.Clone(st.entries)
	slices.SortStableFunc(sorted, func(a, b *entry) int {
		return cmp.Or(cmp.Compare(a.Op, b.Op), bytes.Compare(a.Request, b.Request))
	})
	var buf bytes.Buffer
	named := map[string]bool{}
	uploads := map[string]bool{} // the hashes of the uploaded files requests name
	for _, e := range sorted {
		for _, m := range uploadHash.FindAllSubmatch(e.Request, -1) {
			uploads[string(m[1])] = true
		}
		b, err := marshalEntry(e)
		if err != nil {
			return fmt.Errorf("cassette: %w", err)
		}
		buf.Write(b)
		named[e.Body] = true
		for _, p := range e.Parts {
			named[p] = true
		}
	}
	t, err := atomicfile.CreateTemp(st.root, ".", "index-")
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	defer t.Remove()
	if _, err := t.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	if err := t.Flush(); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	if err := t.Rename(indexName); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	files, err := fs.ReadDir(st.root.FS(), bodiesDir)
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	for _, f := range files {
		name := path.Join(bodiesDir, f.Name())
		if sum, _, _ := strings.Cut(f.Name(), "."); !named[name] && !uploads[sum] {
			_ = st.root.Remove(name)
		}
	}
	return nil
}
