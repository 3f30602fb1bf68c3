package cassette

import (
	"bufio"
	"bytes"
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

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/atomicfile"
)

// The names inside a cassette's folder.
const (
	indexName = "cassette.jsonl"
	bodiesDir = "bodies"
	// lockName is the lock of the index: a recorder holds it alone while
	// it appends a line, and while it opens the cassette.
	lockName = ".cassette.lock"
	// recordersName is shared by the recorders of the cassette while they
	// run: one that finds none beside it may start the cassette anew.
	recordersName = ".cassette.recorders"
	// readersName is shared by the replays of the cassette while they
	// run: a recorder that starts it anew deletes the old bodies only when
	// it holds it alone, since a replay reads them as it goes.
	readersName = ".cassette.readers"
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
// once per interaction, and the bodies. Recorders of several processes
// may share it at once: each appends its lines under the index's lock
// (lockName), reads the lines of the others as it goes, and deletes
// nothing another wrote.
type store struct {
	root      *os.Root
	index     *os.File // open for appending when recording
	lock      *os.File // the index's lock, when recording
	recorders *os.File // shared while recording
	readers   *os.File // shared while replaying
	loaded    int64    // the bytes of the index read into entries
	entries   []*entry
	byKey     map[string][]*entry
}

// openStore opens the cassette in dir: read for Replay, created when
// recording. Record starts it anew (an empty index, no bodies) when no
// other process records into it; beside others, it joins their
// recording. A last line cut short by a process that died while writing
// it is dropped.
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
	if mode == Replay {
		st.shareReaders()
		if _, err := st.load(mode); err != nil {
			st.release()
			return nil, err
		}
		return st, nil
	}
	if err := st.openRecording(mode); err != nil {
		st.release()
		return nil, err
	}
	return st, nil
}

// openRecording opens the index for appending, under its lock: emptied
// (its bodies with it) in Record mode when no other recorder runs, read
// otherwise; and joins the recorders.
func (st *store) openRecording(mode Mode) error {
	var err error
	if st.lock, err = st.root.OpenFile(lockName, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	if st.recorders, err = st.root.OpenFile(recordersName, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	if err := lockExclusive(st.lock); err != nil {
		return fmt.Errorf("cassette: locking %s: %w", lockName, err)
	}
	defer unlock(st.lock)
	alone, err := tryLockExclusive(st.recorders)
	if err != nil {
		return fmt.Errorf("cassette: locking %s: %w", recordersName, err)
	}
	if alone {
		err = unlock(st.recorders) // shared below, like the others'
	}
	if err == nil {
		err = lockShared(st.recorders)
	}
	if err != nil {
		return fmt.Errorf("cassette: locking %s: %w", recordersName, err)
	}
	if mode == Record && alone {
		if err := st.startAnew(); err != nil {
			return err
		}
	}
	good, err := st.load(mode)
	if err != nil {
		return err
	}
	f, err := st.root.OpenFile(indexName, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err == nil {
		st.index = f
		err = f.Truncate(good) // a line a dead recorder left cut: no live one writes now
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	st.loaded = good
	return atomicfile.SyncDir(st.root, ".")
}

// shareReaders takes the readers' lock beside the other replays, so that
// no recorder deletes a body under them (startAnew), waiting while one
// does. A folder where the lock cannot be made (read only) has no
// recorder either: the replay goes on without it.
func (st *store) shareReaders() {
	f, err := st.root.OpenFile(readersName, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		if f, err = st.root.Open(readersName); err != nil {
			return
		}
	}
	if lockShared(f) != nil {
		_ = f.Close()
		return
	}
	st.readers = f
}

// startAnew empties the cassette for Record mode, with no other recorder
// running: the index and, when no replay reads them, the bodies of the
// recordings it forgets. Bodies a replay may still read are left (a later
// Record removes them); the replay replays what it loaded.
func (st *store) startAnew() error {
	readers, err := st.root.OpenFile(readersName, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	defer readers.Close() // its lock with it
	alone, err := tryLockExclusive(readers)
	if err != nil {
		return fmt.Errorf("cassette: locking %s: %w", readersName, err)
	}
	if err := st.root.Remove(indexName); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cassette: %w", err)
	}
	if !alone {
		return nil
	}
	files, err := fs.ReadDir(st.root.FS(), bodiesDir)
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	for _, f := range files {
		if !f.IsDir() {
			_ = st.root.Remove(path.Join(bodiesDir, f.Name()))
		}
	}
	return nil
}

// release closes what the store holds: its locks end with their files.
func (st *store) release() {
	for _, f := range []*os.File{st.index, st.recorders, st.readers, st.lock} {
		if f != nil {
			_ = f.Close()
		}
	}
	st.root.Close()
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
	return st.readLines(f, 0)
}

// readLines adds the entries of the whole lines of r, which starts at
// offset from of the index, and returns the offset past the last of
// them: a line without its newline is being written, or was cut short.
func (st *store) readLines(r io.Reader, from int64) (int64, error) {
	br := bufio.NewReader(r)
	good := from
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return good, nil
		}
		if err != nil {
			return 0, fmt.Errorf("cassette: %w", err)
		}
		at := good
		good += int64(len(line))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e entry
		if err := json.Unmarshal(line, &e); err != nil {
			return 0, fmt.Errorf("cassette: %s at byte %d: %w", indexName, at, err)
		}
		if e.key, err = keyOf(e.Op, e.Request); err != nil {
			return 0, fmt.Errorf("cassette: %s at byte %d: %w", indexName, at, err)
		}
		st.add(&e)
	}
}

// refresh reads the lines other recorders appended to the index since it
// was last read.
func (st *store) refresh() error {
	f, err := st.root.Open(indexName)
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(st.loaded, io.SeekStart); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	good, err := st.readLines(f, st.loaded)
	if err == nil {
		st.loaded = good
	}
	return err
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

// append writes e to the end of the index, under the index's lock, and
// flushes it to disk before returning: the interaction is kept from then
// on, whatever happens to the process. The lines other recorders appended
// meanwhile are read first, and a line a dead one left cut is dropped.
func (st *store) append(e *entry, redact func(string) string) error {
	b, err := marshalEntry(e)
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	if r := redact(string(b)); r != string(b) {
		b = []byte(r) // a key in a place no field's redaction reached
	}
	if err := lockExclusive(st.lock); err != nil {
		return fmt.Errorf("cassette: locking %s: %w", lockName, err)
	}
	defer unlock(st.lock)
	if err := st.refresh(); err != nil {
		return err
	}
	if err := st.index.Truncate(st.loaded); err != nil { // only a cut line lies past it
		return fmt.Errorf("cassette: %w", err)
	}
	if _, err := st.index.Write(b); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	if err := st.index.Sync(); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	st.loaded += int64(len(b))
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

// close ends the store's part in the cassette: the index is whole after
// every append, so nothing is written again, and nothing is deleted (other
// recorders may name any body); the locks end with their files.
func (st *store) close() error {
	var err error
	if st.index != nil {
		err = st.index.Close()
		st.index = nil
	}
	st.release()
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	return nil
}
