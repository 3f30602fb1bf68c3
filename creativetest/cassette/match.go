package cassette

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/creativegen/creative-go/internal/ops"
	"github.com/creativegen/creative-go/internal/sniff"
)

// opDownload names the interactions that fetch a file: Download, and the
// files answers link to.
const opDownload = "download"

// Bounds of what a Cassette reads of a request.
const (
	maxJSON  = 64 << 20 // a JSON body
	maxField = 1 << 20  // a text field of a form
)

// A request is an attempt as a Cassette sees it: its operation, its
// canonical fields and what to send.
type request struct {
	op     string
	fields jsontext.Value // canonical, redacted, without the operation
	key    string         // the canonical content it matches by
	send   *http.Request  // the request to send, its body whole again
	// sendBody, when set, makes the request to send at the moment it is
	// sent, with the links rewritten links stand for.
	sendBody func() (*http.Request, error)
	done     func() // releases what the body was kept in
}

// operation names the operation of req by its path, "download" for a GET,
// or "" for anything else.
func operation(req *http.Request) (ops.Op, string) {
	if req.Method == http.MethodPost {
		for _, o := range ops.All {
			if strings.HasSuffix(req.URL.Path, o.Path()) {
				return o, o.Name
			}
		}
	}
	if req.Method == http.MethodGet {
		return ops.Op{}, opDownload
	}
	return ops.Op{}, ""
}

// content is the canonical content of a request of op with fields: the
// form batch identifies a job by.
func content(op string, fields map[string]any) (string, error) {
	return ops.Content(op, maps.Clone(fields))
}

// read reads req's body and works out its canonical fields: a JSON body
// as its values, with the counts the SDK fills in brought to their
// default; a form's text fields as they are and its files by their hash
// (kept in bodies/ when recording); any other body by its hash. The body
// is put back (from memory, or from a spool on disk for a form) for the
// attempt to send.
func (c *Cassette) read(req *http.Request) (*request, error) {
	op, name := operation(req)
	if name == "" {
		return nil, fmt.Errorf("cassette: a %s request to %s is no call of the service", req.Method, c.redact(req.URL.Path))
	}
	r := &request{op: name, send: req, done: func() {}}
	fields := map[string]any{}
	switch {
	case name == opDownload:
		fields["url"] = req.URL.String()
	case req.Body == nil || req.Body == http.NoBody:
	case op.Form:
		if err := c.readForm(req, r, fields); err != nil {
			return nil, err
		}
	default:
		if err := c.readJSON(req, r, fields); err != nil {
			return nil, err
		}
		ops.Canonical(op, fields)
	}
	whole, err := content(name, fields)
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	var redacted map[string]any
	if err := json.Unmarshal([]byte(c.redact(whole)), &redacted); err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	delete(redacted, "op")
	if r.fields, err = json.Marshal(redacted, json.Deterministic(true)); err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	if r.key, err = keyOf(name, r.fields); err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	return r, nil
}

// readJSON reads a JSON body into fields; a body that is no JSON object
// is known by its hash. When recording, the body sent holds the links
// rewritten links stand for.
func (c *Cassette) readJSON(req *http.Request, r *request, fields map[string]any) error {
	b, err := io.ReadAll(io.LimitReader(req.Body, maxJSON+1))
	_ = req.Body.Close()
	if err != nil {
		return fmt.Errorf("cassette: reading the request: %w", err)
	}
	if len(b) > maxJSON {
		return fmt.Errorf("cassette: the request's body is over %d MiB", maxJSON>>20)
	}
	if json.Unmarshal(b, &fields) != nil {
		clear(fields)
		fields["body"] = hashOf(b)
	}
	r.send = withBody(req, b)
	if c.mode != Replay {
		r.sendBody = func() (*http.Request, error) {
			out, err := c.sendable(b)
			if err != nil {
				return nil, err
			}
			return withBody(req, out), nil
		}
	}
	return nil
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// withBody is req with b as its body.
func withBody(req *http.Request, b []byte) *http.Request {
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(b))
	out.ContentLength = int64(len(b))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return out
}

// readForm reads a multipart form part by part, in flat memory: text
// fields by value, files by the hash of their bytes, each file kept in
// bodies/ when recording. When the request may be sent, its raw body is
// spooled to disk on the way and sent from there.
func (c *Cassette) readForm(req *http.Request, r *request, fields map[string]any) error {
	_, params, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		return fmt.Errorf("cassette: a form without a boundary: %v", err)
	}
	var raw *spool
	src := io.Reader(req.Body)
	if c.mode != Replay {
		if raw, err = c.st.spool(); err != nil {
			return err
		}
		src = io.TeeReader(req.Body, raw)
	}
	defer func() {
		if raw != nil && r.send == req { // not put back: nothing to send
			raw.t.Remove()
		}
	}()
	mr := multipart.NewReader(src, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("cassette: reading the form: %w", err)
		}
		v, err := c.readPart(p)
		if err != nil {
			return err
		}
		fields[p.FormName()] = v
	}
	if _, err := io.Copy(io.Discard, src); err != nil {
		return fmt.Errorf("cassette: reading the form: %w", err)
	}
	_ = req.Body.Close()
	if raw == nil {
		return nil
	}
	if err := raw.t.Sync(); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	f, err := c.st.root.Open(raw.t.Name())
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	out := req.Clone(req.Context())
	out.Body, out.ContentLength, out.GetBody = f, raw.n, nil
	t := raw.t
	r.send, r.done = out, func() { _ = f.Close(); t.Remove() }
	return nil
}

// readPart reads one part of a form: a text field's value, or a file's
// hash, the file kept in bodies/ when recording unless it holds a key.
func (c *Cassette) readPart(p *multipart.Part) (any, error) {
	if p.FileName() == "" {
		b, err := io.ReadAll(io.LimitReader(p, maxField+1))
		if err != nil {
			return nil, fmt.Errorf("cassette: reading the form: %w", err)
		}
		if len(b) > maxField {
			return nil, fmt.Errorf("cassette: the form's field %s is over %d MiB", p.FormName(), maxField>>20)
		}
		return string(b), nil
	}
	if c.mode == Replay {
		h := sha256.New()
		if _, err := io.Copy(h, p); err != nil {
			return nil, fmt.Errorf("cassette: reading the form: %w", err)
		}
		return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
	}
	s, err := c.st.spool()
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(s, p); err != nil {
		s.t.Remove()
		return nil, fmt.Errorf("cassette: reading the form: %w", err)
	}
	sum := hex.EncodeToString(s.h.Sum(nil))
	if holdsForm(s, c.redactor()) {
		// Written over, it would be another file: it is matched by its
		// hash alone, and not kept.
		s.t.Remove()
		return "sha256:" + sum, nil
	}
	if _, err := s.keep(sniff.FileExt(s.head)); err != nil {
		return nil, err
	}
	return "sha256:" + sum, nil
}

// A MissError is a request that matched no recording in Replay mode: the
// call fails with it, and nothing is sent.
type MissError struct {
	// Operation is the request's operation.
	Operation string
	// Request is the request's canonical fields, as JSON.
	Request string
	// Nearest is the nearest recorded request's operation and fields, ""
	// when the cassette holds none.
	Nearest string
	// Fields name what differs from the nearest recording ("op" for the
	// operation), sorted.
	Fields []string
	// Diff says, field by field, what was recorded and what was sent.
	Diff string
	// Replayed, when the request matches recordings that were all
	// replayed already, is how many there are.
	Replayed int
}

// Error says what was sent, what was recorded nearest, and how to record
// it.
func (e *MissError) Error() string {
	if e == nil {
		return "cassette: <nil *MissError>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cassette: no recording of %s %s", e.Operation, e.Request)
	switch {
	case e.Replayed > 0:
		fmt.Fprintf(&b, ": its %d recording(s) were all replayed already", e.Replayed)
	case e.Nearest == "":
		b.WriteString(": the cassette holds no recording")
	default:
		fmt.Fprintf(&b, "; nearest recorded: %s; differs in %s:\n%s", e.Nearest, strings.Join(e.Fields, ", "), e.Diff)
	}
	fmt.Fprintf(&b, "\n(nothing was sent; record it with %s=record-missing)", EnvMode)
	return b.String()
}

// miss makes the *MissError of r: the nearest recording is the one that
// differs in the fewest fields, one of the same operation first.
func (st *store) miss(r *request, replayed int) *MissError {
	e := &MissError{Operation: r.op, Request: string(r.fields), Replayed: replayed}
	if replayed > 0 {
		return e
	}
	var sent map[string]any
	_ = json.Unmarshal(r.fields, &sent)
	best, bestN := (*entry)(nil), -1
	for _, cand := range st.entries {
		var rec map[string]any
		_ = json.Unmarshal(cand.Request, &rec)
		n := len(differing(rec, sent))
		if cand.Op != r.op {
			n += 1000
		}
		if bestN < 0 || n < bestN {
			best, bestN = cand, n
		}
	}
	if best == nil {
		return e
	}
	var rec map[string]any
	_ = json.Unmarshal(best.Request, &rec)
	e.Nearest = best.Op + " " + string(best.Request)
	e.Fields = differing(rec, sent)
	var d strings.Builder
	if best.Op != r.op {
		e.Fields = append([]string{"op"}, e.Fields...)
		fmt.Fprintf(&d, "  op: recorded %q, sent %q\n", best.Op, r.op)
	}
	for _, f := range differing(rec, sent) {
		fmt.Fprintf(&d, "  %s: recorded %s, sent %s\n", f, show(rec, f), show(sent, f))
	}
	e.Diff = strings.TrimSuffix(d.String(), "\n")
	return e
}

// differing names the fields whose values differ between a and b, sorted.
func differing(a, b map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if bv, ok := b[k]; !ok || !reflect.DeepEqual(a[k], bv) {
			out = append(out, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// show is the value of field f in m as JSON, cut to a readable length,
// or "nothing" when m has no such field.
func show(m map[string]any, f string) string {
	v, ok := m[f]
	if !ok {
		return "nothing"
	}
	b, _ := json.Marshal(v, json.Deterministic(true))
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}
