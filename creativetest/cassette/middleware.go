package cassette

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/ops"
	"github.com/creativegen/creative-go/internal/redact"
)

// cassetteHost is the host of the links a recording rewrites: a name
// that never resolves, so that a link that escapes the cassette fails.
const cassetteHost = "cassette.invalid"

// middleware is the one gate every attempt of a Client passes: it
// replays the attempt's recording or, when the mode allows, sends it and
// records the answer before the caller gets it.
func (c *Cassette) middleware(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
	if !c.opened() {
		return nil, errNotOpened
	}
	c.learnKey(req.Header.Get("X-Access-Key"))
	r, err := c.read(req)
	if err != nil {
		return nil, err
	}
	defer r.done()
	e, replayed, err := c.lookup(r, req.URL)
	if err != nil {
		return nil, err
	}
	if e != nil {
		return c.replay(e, req)
	}
	if c.mode == Replay || req.URL.Host == cassetteHost {
		miss := c.missOf(r, replayed)
		if c.o.OnMiss != nil {
			c.o.OnMiss(miss)
		}
		return nil, miss
	}
	send := r.send
	if r.sendBody != nil {
		if send, err = r.sendBody(); err != nil {
			c.unuse(r)
			return nil, err
		}
	}
	c.mu.Lock()
	c.sent++
	c.mu.Unlock()
	resp, err := next(send)
	if err != nil {
		return nil, err
	}
	return c.record(r, resp)
}

// lookup returns the recording r replays, if any: the first one of its
// request not replayed yet (in Replay and RecordMissing; in Record only
// the files the recording links to replay). A download replays its last
// recording again once all were replayed: fetching a file twice is no
// second call. replayed is how many recordings of r exist when all were
// replayed.
func (c *Cassette) lookup(r *request, u *url.URL) (*entry, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, 0, errClosed
	}
	if c.mode == Record && u.Host != cassetteHost {
		c.used[r.key]++ // a request of this session: its recordings are new
		return nil, 0, nil
	}
	recs := c.st.byKey[r.key]
	n := c.used[r.key]
	if n >= len(recs) && c.mode == RecordMissing && c.st.refresh() == nil {
		recs = c.st.byKey[r.key] // another recorder's, made since: replayed, not paid again
	}
	switch {
	case n < len(recs):
		c.used[r.key]++
		c.replays++
		return recs[n], 0, nil
	case r.op == opDownload && len(recs) > 0:
		c.replays++
		return recs[len(recs)-1], 0, nil
	}
	c.used[r.key]++ // the recording about to be made is this call's
	return nil, len(recs), nil
}

func (c *Cassette) missOf(r *request, replayed int) *MissError {
	c.unuse(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.miss(r, replayed)
}

// unuse gives back the recording lookup set aside for r: nothing was
// recorded for it.
func (c *Cassette) unuse(r *request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.used[r.key]--
}

// learnKey adds the key a request carries to those kept out of the
// cassette.
func (c *Cassette) learnKey(k string) {
	if len(k) < 4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.Contains(c.keys, k) {
		return
	}
	c.keys = append(c.keys, k)
	c.red = redact.New(c.keys)
}

// downloader returns the Client the files an answer to req links to are
// downloaded with: a Client of the SDK, made with req's base URL (its
// URL without op's path) and access key, whose Download is the one gate
// to a link the service gave; of the private addresses it reaches the
// service's own origin alone (creative.WithPrivateOrigin). It has no middleware: what it downloads is
// recorded by fetch, once. nil when no such Client can be made.
func (c *Cassette) downloader(req *http.Request, op ops.Op) *creative.Client {
	base := url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host, Path: strings.TrimSuffix(req.URL.Path, op.Path())}
	key := req.Header.Get("X-Access-Key")
	if key == "" {
		key = AccessKey()
	}
	id := base.String() + " " + key
	c.mu.Lock()
	defer c.mu.Unlock()
	if dl, ok := c.dls[id]; ok {
		return dl
	}
	opts := []creative.Option{creative.WithBaseURL(base.String()), creative.WithAccessKey(key), creative.WithMaxResponseBytes(c.o.MaxBodyBytes)}
	if base.Scheme == "http" {
		opts = append(opts, creative.WithInsecureHTTP()) // the call itself went there
	}
	// The service's own origin, though it be on a private address (a
	// local fake), and no other private address.
	opts = append(opts, creative.WithPrivateOrigin(base.Scheme+"://"+base.Host))
	if c.o.HTTPClient != nil {
		opts = append(opts, creative.WithHTTPClient(c.o.HTTPClient))
	}
	dl, err := creative.New(opts...)
	if err != nil {
		return nil
	}
	c.dls[id] = dl
	return dl
}

// redact removes every key known so far from s.
func (c *Cassette) redact(s string) string {
	c.mu.Lock()
	red := c.red
	c.mu.Unlock()
	return red.Redact(s)
}

func (c *Cassette) redactor() *redact.Redactor {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.red
}
