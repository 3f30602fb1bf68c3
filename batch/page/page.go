// Package page writes index.html, a contact sheet of a batch: every job on
// one page a person opens from disk, with thumbnails of its images, players
// for its audio, its video, the writer's text, its operation, prompt and
// fields, its state and its request id, filterable by state and operation.
//
// The page is one self-contained file: no server, no network, no external
// script, font or style. The jobs are embedded as one JSON array and drawn
// a page of cards at a time, so a batch of 100,000 jobs opens without
// freezing the browser; images load lazily. Everything a job holds is
// treated as text: a prompt cannot run a script on the page, and a
// Content-Security-Policy allows only the page's own script and style.
//
// Write streams the jobs: its memory does not grow with their number.
package page

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"iter"
	"maps"
	"net"
	"net/url"
	"path"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/creativegen/creative-go/ids"
)

// An Entry is one job as the page shows it. Its fields mirror a record of
// the batch ledger, so that the page does not depend on the ledger's types.
type Entry struct {
	// Job is the job's identity in the ledger.
	Job string
	// ID is the id the jobs file gave the job, if any.
	ID string
	// Line is the job's line in the jobs file (from 1), or 0.
	Line int
	// Op is the operation, such as "text-to-image".
	Op string
	// State is the job's state: "done", "answered" (waiting for a
	// download), "failed", "refused", "unknown" or "claimed". Other
	// values are shown as they are.
	State string
	// Fields are the job's request fields: its prompt and the others.
	Fields map[string]any
	// Files are the job's files, as slash-separated paths relative to the
	// folder that holds index.html.
	Files []string
	// URLs are the links the service answered with. The page shows them as
	// links, and never loads them itself.
	URLs []string
	// Text is the writer's text.
	Text string
	// Error is the message of a job that did not end done.
	Error string
	// RequestID is the service's id of the last request of the job.
	RequestID string
	// Lost marks an answered job whose answer can no longer be fetched.
	Lost bool
	// Time is when the job's state was recorded.
	Time time.Time
}

// Bounds on what one card embeds, so that one enormous job cannot make the
// page heavy. What is cut is marked; the job's record holds it whole.
const (
	maxText  = 20000 // runes of the writer's text or of an error
	maxField = 2000  // runes of one field's value
	maxList  = 100   // files or links of one job
)

//go:embed page.css
var css string

//go:embed page.js
var script string

// csp allows the page's own style and script (by their hashes) and local
// media, nothing else: no network, no injected script.
var csp = "default-src 'none'; style-src '" + hash(css) + "'; script-src '" + hash(script) +
	"'; img-src 'self' file: data: blob:; media-src 'self' file: blob:; base-uri 'none'; form-action 'none'"

// hash is the CSP source of an inline element with content s.
func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// Write writes the page titled title, showing entries by their line, to
// w. It reads entries once, one at a time, and holds none of them after
// writing it: the page may hold any number of jobs.
func Write(w io.Writer, title string, entries iter.Seq[Entry]) error {
	return WriteStamped(w, title, "", entries)
}

// WriteStamped is Write, the page stamped with stamp (when not ""): what
// the entries were read from, such as a version of the ledger. Stamped
// tells whether a page bears a stamp, so that a writer whose source has
// not changed since leaves the page as it is.
func WriteStamped(w io.Writer, title, stamp string, entries iter.Seq[Entry]) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	t := html.EscapeString(title)
	bw.WriteString(top(stamp))
	fmt.Fprintf(bw, head, html.EscapeString(csp), t, css, t)
	// encoding/json escapes <, > and & (and U+2028, U+2029), so no value
	// can close the script element that holds the data.
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(true)
	sep := ""
	for e := range entries {
		bw.WriteString(sep)
		sep = ",\n"
		if err := enc.Encode(cardOf(e)); err != nil {
			return fmt.Errorf("page: %w", err)
		}
	}
	fmt.Fprintf(bw, tail, script)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("page: %w", err)
	}
	return nil
}

// Stamped reports whether the page r reads begins as WriteStamped, in this
// build of the package, begins a page stamped with stamp (not ""). It
// reads no more than that beginning, a few hundred bytes, however large
// the page.
func Stamped(r io.Reader, stamp string) bool {
	want := top(stamp)
	got := make([]byte, len(want))
	_, err := io.ReadFull(r, got)
	return stamp != "" && err == nil && string(got) == want
}

// top is the beginning of a page stamped with stamp (see WriteStamped):
// the stamp, after the build's own (build), in the page's head.
func top(stamp string) string {
	s := "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	if stamp != "" {
		s += `<meta name="creative-source" content="` + html.EscapeString(build+" "+stamp) + "\">\n"
	}
	return s
}

// build tells this build's pages from another's made of the same entries:
// a digest of the page's format, its style and script, the labels it
// shows for ids, and the version of the module that wrote it. A page
// written by another build is written again, whatever its stamp.
var build = func() string {
	h := sha256.New()
	fmt.Fprintln(h, format, head, tail, css, script)
	for _, id := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintln(h, id, labels[id])
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		fmt.Fprintln(h, bi.Main.Path, bi.Main.Version, bi.Main.Sum)
		for _, d := range bi.Deps {
			fmt.Fprintln(h, d.Path, d.Version, d.Sum)
		}
		for _, s := range bi.Settings {
			if strings.HasPrefix(s.Key, "vcs.") {
				fmt.Fprintln(h, s.Key, s.Value)
			}
		}
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}()

// format is the version of how an Entry becomes a card: raise it when
// cardOf shows an entry otherwise.
const format = 1

// The page around the data, after top: head takes the CSP, the title
// (twice) and the style; tail takes the script.
const (
	head = `<meta http-equiv="Content-Security-Policy" content="%s">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>%s</title>
<style>%s</style>
</head>
<body>
<header>
<h1>%s</h1>
<p id="summary">Loading the jobs…</p>
<nav id="filters" aria-label="Filters">
<label>State <select id="state"><option value="">all</option></select></label>
<label>Operation <select id="op"><option value="">all</option></select></label>
<label>Search <input id="q" type="search" placeholder="prompt, text, id"></label>
</nav>
<nav class="pager" aria-label="Pages"><button id="prev" type="button">‹ previous</button> <span id="at"></span> <button id="next" type="button">next ›</button></nav>
</header>
<noscript><p>This page draws its jobs with JavaScript; results.jsonl lists them as text.</p></noscript>
<main id="cards"></main>
<nav class="pager" aria-label="Pages"><button id="prev2" type="button">‹ previous</button> <span id="at2"></span> <button id="next2" type="button">next ›</button></nav>
<script type="application/json" id="jobs">[
`
	tail = `]</script>
<script>%s</script>
</body>
</html>
`
)

// A card is an Entry as the page's script reads it: short keys, since a
// page may hold a hundred thousand of them, and every value already made
// safe to show.
type card struct {
	Job    string     `json:"j,omitempty"`
	ID     string     `json:"i,omitempty"`
	Line   int        `json:"l,omitempty"`
	Op     string     `json:"o"`
	State  string     `json:"s"`
	Fields [][]string `json:"f,omitempty"`  // name, value shown, and the id a label stands for
	Fake   bool       `json:"lf,omitempty"` // its links point to a service on this machine
	Files  []file     `json:"m,omitempty"`
	More   int        `json:"mm,omitempty"` // files beyond maxList, not shown
	URLs   []string   `json:"u,omitempty"`
	Text   string     `json:"t,omitempty"`
	Error  string     `json:"e,omitempty"`
	RID    string     `json:"r,omitempty"`
	Lost   bool       `json:"x,omitempty"`
	Time   string     `json:"w,omitempty"`
}

// A file is one of a job's files: its link relative to the page, its name
// and how to show it.
type file struct {
	Href string `json:"h"`
	Name string `json:"n"`
	Kind string `json:"k"` // image, audio, video or file
}

// cardOf makes the card of e.
func cardOf(e Entry) card {
	c := card{
		Job: e.Job, ID: e.ID, Line: e.Line, Op: e.Op, State: e.State,
		Text: cut(e.Text, maxText), Error: cut(e.Error, maxText),
		RID: e.RequestID, Lost: e.Lost, Fields: fields(e.Fields),
	}
	if !e.Time.IsZero() {
		c.Time = e.Time.UTC().Format(time.RFC3339)
	}
	c.More = max(0, len(e.Files)-maxList)
	for _, f := range e.Files[:len(e.Files)-c.More] {
		c.Files = append(c.Files, file{Href: href(f), Name: f, Kind: kindOf(f)})
	}
	for _, u := range e.URLs[:min(len(e.URLs), maxList)] {
		if p, err := url.Parse(u); err == nil && (p.Scheme == "https" || p.Scheme == "http") && p.Host != "" {
			c.URLs = append(c.URLs, p.String())
			c.Fake = c.Fake || loopback(p.Hostname())
		}
	}
	return c
}

// OnThisMachine reports whether link is served by this machine: by a fake
// service (a test's, or one a command line ran), which dies when its run
// ends, and its links with it.
func OnThisMachine(link string) bool {
	u, err := url.Parse(link)
	return err == nil && u.Host != "" && loopback(u.Hostname())
}

// loopback reports whether host is this machine (see OnThisMachine).
func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// labels are the labels of the ids of package ids, by id: a field that
// holds one shows its label, the id beside it.
var labels = func() map[string]string {
	m := map[string]string{}
	for _, kind := range ids.Kinds() {
		entries, _ := ids.Entries(kind)
		for _, e := range entries {
			m[e.ID] = e.Label
		}
	}
	return m
}()

// fields lists a job's fields as text, sorted by name with the prompt
// first. A value that is not a string is shown as its JSON; an id of
// package ids by its label, with the id.
func fields(m map[string]any) [][]string {
	if len(m) == 0 {
		return nil
	}
	out := make([][]string, 0, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			b, err := json.Marshal(v)
			if err != nil {
				b = fmt.Appendf(nil, "%v", v)
			}
			s = string(b)
		}
		if label, ok := labels[s]; ok {
			out = append(out, []string{k, label, s})
			continue
		}
		out = append(out, []string{k, cut(s, maxField)})
	}
	slices.SortFunc(out, func(a, b []string) int {
		switch {
		case a[0] == b[0]:
			return 0
		case a[0] == "prompt":
			return -1
		case b[0] == "prompt":
			return 1
		}
		return strings.Compare(a[0], b[0])
	})
	return out
}

// cut shortens s to at most n runes, saying how much it left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := range s {
		if n--; n < 0 {
			return s[:i] + fmt.Sprintf("… (%d more bytes)", len(s)-i)
		}
	}
	return s
}

// href is the link to the file at the slash-separated path p relative to
// the page: each segment escaped, and the whole made relative, so that no
// path can become another scheme ("javascript:"), another host ("//h") or
// a fragment or query.
func href(p string) string {
	p = strings.TrimLeft(p, "/")
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "./" + strings.Join(segs, "/")
}

// kindOf says how the page shows the file named name.
func kindOf(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".png", ".jpg", ".jpeg", ".webp", ".gif", ".avif", ".bmp", ".svg":
		return "image"
	case ".mp3", ".wav", ".ogg", ".oga", ".m4a", ".aac", ".flac", ".opus":
		return "audio"
	case ".mp4", ".webm", ".mov", ".m4v", ".ogv":
		return "video"
	}
	return "file"
}
