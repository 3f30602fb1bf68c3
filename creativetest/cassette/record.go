package cassette

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/ops"
	"github.com/creativegen/creative-go/internal/redact"
	"github.com/creativegen/creative-go/internal/sniff"
)

// chunkGap is the pause that starts a new chunk of a stream: bytes that
// come closer together are one chunk, as they would be to a listener.
const chunkGap = 10 * time.Millisecond

// maxText bounds a text body redacted in memory; a longer one is written
// over a window at a time, as a binary body is, with the key in every form
// the redactor knows (redact.Redactor.Hide).
const maxText = 64 << 20

// volatile are the answer's headers a cassette leaves out: they change
// from one answer to the next, or hold what is no business of a test.
var volatile = map[string]bool{
	"Date": true, "Content-Length": true, "Connection": true, "Keep-Alive": true,
	"Transfer-Encoding": true, "Set-Cookie": true, "Age": true, "Expires": true,
	"Server-Timing": true, "Alt-Svc": true, "Nel": true, "Report-To": true, "Via": true,
	"Strict-Transport-Security": true, "Last-Modified": true, "Etag": true, "Cf-Cache-Status": true,
}

// keepHeader returns the headers of an answer a recording keeps, their
// values redacted, and the answer's request id.
func (c *Cassette) keepHeader(h http.Header) (http.Header, string) {
	out := http.Header{}
	for k, vs := range h {
		if volatile[http.CanonicalHeaderKey(k)] {
			continue
		}
		for _, v := range vs {
			out.Add(c.redact(k), c.redact(v))
		}
	}
	var id string
	for _, k := range []string{"X-Request-Id", "X-Amzn-Requestid", "X-Amz-Cf-Id", "Cf-Ray"} {
		if id = out.Get(k); id != "" {
			break
		}
	}
	if len(out) == 0 {
		out = nil
	}
	return out, id
}

// record records the answer to r and returns what the caller gets: for
// a speech stream, the stream itself, teed to disk as it passes and kept
// once it ends; for any other answer, the recording, once written and
// flushed, with its links rewritten to their recordings.
func (c *Cassette) record(r *request, resp *http.Response) (*http.Response, error) {
	e := &entry{Op: r.op, Request: r.fields, key: r.key, Status: resp.StatusCode}
	e.Header, e.RequestID = c.keepHeader(resp.Header)
	if r.op == ops.TextToSpeech && resp.StatusCode/100 == 2 {
		s, err := c.st.spool()
		if err != nil {
			_ = resp.Body.Close()
			return nil, err
		}
		now := time.Now()
		resp.Body = &tee{c: c, e: e, src: resp.Body, s: s, start: now, last: now, want: resp.ContentLength}
		return resp, nil
	}
	defer resp.Body.Close()
	s, err := c.st.spool()
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(s, io.LimitReader(resp.Body, c.o.MaxBodyBytes+1))
	switch {
	case err != nil:
		s.t.Remove()
		return nil, fmt.Errorf("cassette: reading the answer of %s: %w", r.op, err)
	case n > c.o.MaxBodyBytes:
		s.t.Remove()
		return nil, fmt.Errorf("cassette: the answer of %s is over %d bytes (Options.MaxBodyBytes)", r.op, c.o.MaxBodyBytes)
	}
	op, _ := ops.Lookup(r.op)
	var dl *creative.Client // the files the answer links to are recorded through its Download
	if (op.Result == ops.URL || op.Result == ops.URLs) && resp.StatusCode/100 == 2 {
		dl = c.downloader(r.send, op) // nil when none can be made: the links are kept as they are
	}
	if s, e.Parts, err = c.clean(r.send.Context(), s, resp.Header.Get("Content-Type"), dl); err != nil {
		return nil, err
	}
	if e.Body, err = s.keep(extOf(resp.Header.Get("Content-Type"), s.head)); err != nil {
		return nil, err
	}
	if err := c.commit(e); err != nil {
		return nil, err
	}
	return c.replay(e, r.send)
}

// extOf names a body's extension by its declared type, else its bytes.
func extOf(ctype string, head []byte) string {
	if ext := sniff.Ext(ctype); ext != "" {
		return ext
	}
	if mt, _, _ := mime.ParseMediaType(ctype); strings.HasSuffix(mt, "json") {
		return ".json"
	}
	if isText(ctype) {
		return ".txt"
	}
	return sniff.FileExt(head)
}

// isText reports whether a body of type ctype is text, which the key is
// looked for in every escaped form.
func isText(ctype string) bool {
	mt, _, _ := mime.ParseMediaType(ctype)
	return strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "json") || strings.HasSuffix(mt, "xml") ||
		mt == "application/x-www-form-urlencoded" || mt == ""
}

// commit appends e to the index, flushed before it returns.
func (c *Cassette) commit(e *entry) error {
	red := c.redactor()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.append(e, red.Redact)
}

// clean returns the spool s with the keys removed and, for an answer that
// links to files (dl is not nil), each link rewritten to the recording of
// its download through dl: a new spool when anything changed, s itself
// otherwise. From a JSON body the base64 images are taken out to files of
// their own, whose names it returns.
func (c *Cassette) clean(ctx context.Context, s *spool, ctype string, dl *creative.Client) (*spool, []string, error) {
	red := c.redactor()
	if !isText(ctype) || s.n > maxText {
		if !holdsForm(s, red) {
			return s, nil, nil
		}
		out, err := c.scrubbed(s, red)
		return out, nil, err
	}
	b, err := c.st.root.ReadFile(s.t.Name())
	if err != nil {
		s.t.Remove()
		return nil, nil, fmt.Errorf("cassette: %w", err)
	}
	orig := b
	var parts []string
	if dl != nil {
		b = c.rewriteLinks(ctx, dl, b)
	}
	b = []byte(red.Redact(string(b)))
	if mt, _, _ := mime.ParseMediaType(ctype); strings.HasSuffix(mt, "json") {
		b, parts = c.extractImages(ctx, b)
	}
	if bytes.Equal(b, orig) {
		return s, parts, nil
	}
	s.t.Remove()
	out, err := c.st.spool()
	if err != nil {
		return nil, nil, err
	}
	if _, err := out.Write(b); err != nil {
		out.t.Remove()
		return nil, nil, fmt.Errorf("cassette: %w", err)
	}
	return out, parts, nil
}

// scrubbed returns a new spool of the bytes of s with every key red
// removes written over, streamed a window at a time (see scrub): a body
// that is not text, or a long text, may be as long as
// Options.MaxBodyBytes. s is removed.
func (c *Cassette) scrubbed(s *spool, red *redact.Redactor) (*spool, error) {
	defer s.t.Remove()
	f, err := c.st.root.Open(s.t.Name())
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	defer f.Close()
	out, err := c.st.spool()
	if err != nil {
		return nil, err
	}
	if err := scrub(out, f, red); err != nil {
		out.t.Remove()
		return nil, fmt.Errorf("cassette: %w", err)
	}
	return out, nil
}

// scrub copies src to dst with every key red removes (in a literal form,
// wrapped over lines or escaped: redact.Redactor.Hide) written over with
// as many x's, a window at a time (see windows), so that a key across two
// windows is whole in the second. Lengths do not change, so a stream's
// chunks still add up.
func scrub(dst io.Writer, src io.Reader, red *redact.Redactor) error {
	overlap := red.KeyLen()
	var werr error
	err := windows(src, overlap, func(w []byte, last bool) bool {
		red.Hide(w)
		if !last {
			w = w[:len(w)-overlap] // the rest starts the next window
		}
		_, werr = dst.Write(w)
		return werr == nil
	})
	return cmp.Or(err, werr)
}

// windows reads r in windows of 1 MiB and overlap bytes more, each but the
// first starting with the last overlap bytes of the one before (as fn
// left them), so that any overlap+1 bytes in a row are whole in one
// window. It calls fn with each window, last set on the final one, until
// fn returns false: memory is flat at any length.
func windows(r io.Reader, overlap int, fn func(w []byte, last bool) bool) error {
	buf := make([]byte, 1<<20+overlap)
	kept := 0
	for {
		n, err := io.ReadFull(r, buf[kept:])
		w := buf[:kept+n]
		last := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !last {
			return err
		}
		if !fn(w, last) || last {
			return nil
		}
		kept = copy(buf, w[len(w)-overlap:])
	}
}

// holdsForm reports whether the spooled bytes hold a key red removes,
// reading the file a window at a time.
func holdsForm(s *spool, red *redact.Redactor) bool {
	if len(red.Forms()) == 0 {
		return false
	}
	f, err := s.t.Seek(0, io.SeekStart)
	if err != nil || f != 0 {
		return true // unknown: look at the whole
	}
	defer s.t.Seek(0, io.SeekEnd)
	found, err := holdsAny(s.t, red)
	return found || err != nil // unknown: look at the whole
}

// holdsAny reports whether r holds a key red removes, reading it a
// window at a time.
func holdsAny(r io.Reader, red *redact.Redactor) (found bool, err error) {
	var scratch []byte
	err = windows(r, red.KeyLen(), func(w []byte, _ bool) bool {
		scratch = append(scratch[:0], w...)
		found = red.Hide(scratch)
		return !found
	})
	return found, err
}

// rewriteLinks rewrites every http(s) link among the values of the JSON
// answer b to https://cassette.invalid/files/ and the name of the linked
// file's recording, downloading it now with dl's Download. A link whose download fails is
// left as it is (the answer is kept all the same); b is returned as it is
// when it is no JSON.
func (c *Cassette) rewriteLinks(ctx context.Context, dl *creative.Client, b []byte) []byte {
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out)
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return out.Bytes()
		}
		if err != nil {
			return b
		}
		if kind, n := dec.StackIndex(dec.StackDepth()); tok.Kind() == '"' && !(kind == '{' && n%2 == 1) {
			if link := tok.String(); isLink(link) {
				tok = jsontext.String(c.fetch(ctx, dl, link))
			}
		}
		if err := enc.WriteToken(tok); err != nil {
			return b
		}
	}
}

// sendable returns the JSON body b as it goes to the service: each
// rewritten link in it replaced by the link it stands for, downloaded in
// this run. A rewritten link of an earlier run is refused before anything
// is sent: the service could not fetch it.
func (c *Cassette) sendable(b []byte) ([]byte, error) {
	prefix := []byte("https://" + cassetteHost + "/files/")
	if !bytes.Contains(b, prefix) {
		return b, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for rec, real := range c.links {
		b = bytes.ReplaceAll(b, []byte(rec), []byte(real))
	}
	if bytes.Contains(b, prefix) {
		return nil, errors.New("cassette: the request holds a link rewritten by an earlier recording, which the service cannot fetch; record the call that made it and this one in one run")
	}
	return b, nil
}

func isLink(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && !strings.ContainsAny(s, " \n")
}

// fetch downloads the file at link with dl's Download, the SDK's one way
// to a link the service gave (its refusal of a URL that holds the key, any
// key the cassette keeps out, of
// a private address, its bound of Options.MaxBodyBytes, its redaction),
// records it, and returns the link to its recording; link itself when the
// download was refused or failed.
func (c *Cassette) fetch(ctx context.Context, dl *creative.Client, link string) string {
	if c.redactor().Holds(link) {
		// Download refuses the request's key; the cassette keeps others
		// out too (Options.Keys, CREATIVE_ACCESS_KEY), which dl does not
		// know: the request line would carry them to the file's host.
		return link
	}
	s, err := c.st.spool()
	if err != nil {
		return link
	}
	var resp *http.Response
	if _, err := dl.Download(ctx, creative.URL(link), s, creative.WithResponseInto(&resp)); err != nil || resp == nil {
		s.t.Remove()
		return link
	}
	ctype := resp.Header.Get("Content-Type")
	if s, _, err = c.clean(ctx, s, ctype, nil); err != nil {
		return link
	}
	e := &entry{Op: opDownload, Status: resp.StatusCode}
	e.Header, e.RequestID = c.keepHeader(resp.Header)
	ext := sniff.FileExt(s.head)
	if sniff.Ext(ctype) != "" {
		ext = sniff.Ext(ctype)
	}
	if e.Body, err = s.keep(ext); err != nil {
		return link
	}
	name := path.Base(e.Body)
	if e.Body == "" {
		name = fmt.Sprintf("empty-%d", resp.StatusCode)
	}
	recorded := "https://" + cassetteHost + "/files/" + name
	if e.Request, err = json.Marshal(map[string]string{"url": recorded}, json.Deterministic(true)); err != nil {
		return link
	}
	if e.key, err = keyOf(opDownload, e.Request); err != nil || c.commit(e) != nil {
		return link
	}
	c.mu.Lock()
	c.links[recorded] = link
	c.mu.Unlock()
	return recorded
}

// A tee passes a stream to the caller as it comes, writing it to a spool
// on the way with its chunks and their times, and keeps the recording
// once the stream ended, before the caller reads its end.
type tee struct {
	c           *Cassette
	e           *entry
	src         io.ReadCloser
	s           *spool
	start, last time.Time
	want        int64 // the stream's declared length, -1 when unknown
	done        bool
}

func (t *tee) Read(p []byte) (int, error) {
	n, err := t.src.Read(p)
	if n > 0 && !t.done {
		if _, werr := t.s.Write(p[:n]); werr != nil {
			t.abandon()
			return n, fmt.Errorf("cassette: recording the stream: %w", werr)
		}
		if t.s.n > t.c.o.MaxBodyBytes {
			t.abandon()
			return n, fmt.Errorf("cassette: the stream of %s is over %d bytes (Options.MaxBodyBytes)", t.e.Op, t.c.o.MaxBodyBytes)
		}
		now := time.Now()
		if k := len(t.e.Chunks); k == 0 || now.Sub(t.last) >= chunkGap {
			t.e.Chunks = append(t.e.Chunks, [2]int64{int64(n), now.Sub(t.start).Milliseconds()})
		} else {
			t.e.Chunks[k-1][0] += int64(n)
		}
		t.last = now
	}
	if err == io.EOF && !t.done {
		t.done = true
		if ferr := t.finish(); ferr != nil {
			return n, ferr
		}
	}
	return n, err
}

// finish keeps the whole stream and its entry.
func (t *tee) finish() error {
	s, _, err := t.c.clean(context.Background(), t.s, "audio/mpeg", nil)
	if err != nil {
		return err
	}
	if t.e.Body, err = s.keep(extOf(t.e.Header.Get("Content-Type"), s.head)); err != nil {
		return err
	}
	return t.c.commit(t.e)
}

// abandon forgets a stream that did not come whole: no recording is kept.
func (t *tee) abandon() {
	if !t.done {
		t.done = true
		t.s.t.Remove()
	}
}

// Close keeps a stream read to its declared length, though its end was
// not read, and forgets one that was cut short.
func (t *tee) Close() error {
	if !t.done && t.want >= 0 && t.s.n == t.want {
		t.done = true
		if err := t.finish(); err != nil {
			_ = t.src.Close()
			return err
		}
	}
	t.abandon()
	return t.src.Close()
}
