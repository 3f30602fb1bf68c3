package page

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

// hostile are prompts that would run a script on a page that pasted them
// in as markup.
var hostile = []string{
	`</script><script>alert(1)</script>`,
	`<img src=x onerror="alert(2)">`,
	`<!-- <script>alert(3)</script>`,
	"\u2028\u2029 ]}]</script >",
}

// states are the ledger's states, each with what the page says of it.
var states = map[string]string{
	"done":     "done",
	"answered": "waiting for a download",
	"failed":   "failed",
	"refused":  "refused",
	"unknown":  "unknown",
	"claimed":  "claimed",
}

// render writes the page of entries and returns it.
func render(t *testing.T, title string, entries ...Entry) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, title, slices.Values(entries)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// dataOf returns the cards the page embeds, as its script reads them.
func dataOf(t *testing.T, page string) []card {
	t.Helper()
	const open = `<script type="application/json" id="jobs">`
	i := strings.Index(page, open)
	j := strings.Index(page, "</script>")
	if i < 0 || j < i {
		t.Fatalf("no data block in the page")
	}
	var cards []card
	if err := json.Unmarshal([]byte(page[i+len(open):j]), &cards); err != nil {
		t.Fatalf("the data block is not a JSON array of cards: %v", err)
	}
	return cards
}

func TestHostileTextStaysText(t *testing.T) {
	var entries []Entry
	for i, h := range hostile {
		entries = append(entries, Entry{
			Job: h, ID: h, Op: h, State: h, Text: h, Error: h, RequestID: h,
			Fields: map[string]any{"prompt": h, h: h},
			Files:  []string{h + ".png", h},
			URLs:   []string{"https://x.test/" + h, "javascript:alert(4)"},
			Line:   i + 1,
		})
	}
	page := render(t, hostile[0]+hostile[1], entries...)
	for _, h := range hostile {
		if strings.Contains(page, h) {
			t.Errorf("the page holds %q as it is: it could be read as markup", h)
		}
	}
	// One script element holds the data and one the page's own script:
	// nothing a job holds opens or closes another.
	if n := strings.Count(page, "<script"); n != 2 {
		t.Errorf("the page has %d script elements, want 2", n)
	}
	if n := strings.Count(page, "</script>"); n != 2 {
		t.Errorf("the page closes %d script elements, want 2", n)
	}
	if strings.Contains(page, "javascript:") {
		t.Errorf("a javascript: link reached the page")
	}
	if strings.Contains(page, "innerHTML") || strings.Contains(page, "insertAdjacentHTML") || strings.Contains(page, "document.write") {
		t.Errorf("the page's script parses markup; it must set jobs' values as text")
	}
	// And every hostile value arrives whole, as text, for the script to show.
	cards := dataOf(t, page)
	if len(cards) != len(hostile) {
		t.Fatalf("the page holds %d jobs, want %d", len(cards), len(hostile))
	}
	for i, c := range cards {
		h := hostile[i]
		if c.Text != h || c.Error != h || c.Op != h || c.State != h || c.RID != h || !slices.Equal(c.Fields[0], []string{"prompt", h}) {
			t.Errorf("job %d does not hold %q whole: %+v", i, h, c)
		}
		for _, f := range c.Files {
			if !strings.HasPrefix(f.Href, "./") || strings.ContainsAny(f.Href, "<>\"'#?") {
				t.Errorf("file %q links to %q: not a plain relative path", f.Name, f.Href)
			}
		}
		if len(c.URLs) != 1 || !strings.HasPrefix(c.URLs[0], "https://x.test/") {
			t.Errorf("links of job %d: %q, want only the https one", i, c.URLs)
		}
	}
}

func TestTitleEscaped(t *testing.T) {
	page := render(t, `<b onmouseover="x()">batch & co</b>`)
	if !strings.Contains(page, "<title>&lt;b onmouseover=&#34;x()&#34;&gt;batch &amp; co&lt;/b&gt;</title>") {
		t.Errorf("the title is not escaped:\n%s", page[:min(len(page), 800)])
	}
}

func TestHref(t *testing.T) {
	for in, want := range map[string]string{
		"images/0001-text-to-image-1.png": "./images/0001-text-to-image-1.png",
		"a b/c#d?.png":                    "./a%20b/c%23d%3F.png",
		"javascript:alert(1)":             "./javascript:alert%281%29",
		"//evil.test/x.png":               "./evil.test/x.png",
		"/etc/passwd":                     "./etc/passwd",
		"100%.wav":                        "./100%25.wav",
	} {
		if got := href(in); got != want {
			t.Errorf("href(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEveryStateShown(t *testing.T) {
	var entries []Entry
	for s := range states {
		entries = append(entries, Entry{Job: "job-" + s, Op: "text-to-image", State: s, Error: "message of " + s})
	}
	cards := dataOf(t, render(t, "states", entries...))
	got := map[string]bool{}
	for _, c := range cards {
		got[c.State] = true
		if c.Error != "message of "+c.State {
			t.Errorf("job %s lost its message: %q", c.Job, c.Error)
		}
	}
	for s, label := range states {
		if !got[s] {
			t.Errorf("state %s is not on the page", s)
		}
		// The script names each state for a person.
		if !strings.Contains(script, label) {
			t.Errorf("the page's script does not say %q for %s", label, s)
		}
		// And each has its colour.
		if !strings.Contains(css, ".card."+s+" ") {
			t.Errorf("the style has no rule for .card.%s", s)
		}
	}
}

func TestFiltersAndPlayers(t *testing.T) {
	page := render(t, "filters", Entry{Op: "text-to-speech", State: "done",
		Files: []string{"a.png", "b.mp3", "c.mp4", "d.txt"}})
	for _, want := range []string{`<select id="state">`, `<select id="op">`, `<input id="q" type="search"`, `id="prev"`, `id="next"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %s", want)
		}
	}
	for _, want := range []string{`img.loading = "lazy"`, `au.preload = "none"`, `v.preload = "metadata"`, `au.controls = true`} {
		if !strings.Contains(script, want) {
			t.Errorf("the page's script does not set %s", want)
		}
	}
	cards := dataOf(t, page)
	var kinds []string
	for _, f := range cards[0].Files {
		kinds = append(kinds, f.Kind)
	}
	if want := []string{"image", "audio", "video", "file"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds = %q, want %q", kinds, want)
	}
}

func TestSelfContained(t *testing.T) {
	page := render(t, "offline", Entry{Op: "text-to-image", State: "answered",
		URLs: []string{"https://cdn.test/a.png"}})
	// No element loads anything from elsewhere: the only src and href
	// values are set by the script from the jobs' own relative paths.
	if m := regexp.MustCompile(`(?i)\s(src|href)=`).FindAllString(page, -1); len(m) != 0 {
		t.Errorf("the page loads or links %q outside the jobs", m)
	}
	if m := regexp.MustCompile(`(?i)@import|url\(`).FindAllString(css, -1); len(m) != 0 {
		t.Errorf("the style loads %q", m)
	}
	if !strings.Contains(page, `http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; style-src &#39;`+hash(css)) {
		t.Errorf("the page has no policy allowing only its own style and script")
	}
	// An answered job's links are shown, never loaded: they are in the
	// data, not in an img.
	if c := dataOf(t, page)[0]; len(c.URLs) != 1 || len(c.Files) != 0 {
		t.Errorf("answered job: %+v", c)
	}
}

func TestFieldsAndBounds(t *testing.T) {
	long := strings.Repeat("é", maxText+10)
	e := Entry{Op: "writer", State: "done", Text: long, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)),
		Fields: map[string]any{"zeta": 1.5, "prompt": "a cat", "alpha": []any{"x", 2}, "big": strings.Repeat("z", maxField+1)}}
	c := dataOf(t, render(t, "fields", e))[0]
	want := [][]string{{"prompt", "a cat"}, {"alpha", `["x",2]`}, {"big", strings.Repeat("z", maxField) + "… (1 more bytes)"}, {"zeta", "1.5"}}
	if !slices.EqualFunc(c.Fields, want, slices.Equal) {
		t.Errorf("fields = %q\nwant %q", c.Fields, want)
	}

	// An id shows its label, the id beside it; an unknown one as it is.
	e = Entry{Op: "text-to-image", State: "done", Fields: map[string]any{"styleId": string(ids.StyleAnime), "cameraId": "0123456789abcdef01234567"}}
	withIDs := dataOf(t, render(t, "ids", e))[0]
	want = [][]string{{"cameraId", "0123456789abcdef01234567"}, {"styleId", "anime", string(ids.StyleAnime)}}
	if !slices.EqualFunc(withIDs.Fields, want, slices.Equal) {
		t.Errorf("fields = %q\nwant %q", withIDs.Fields, want)
	}

	// Links to this machine are marked: a fake's, dead after its run.
	for link, fake := range map[string]bool{"http://127.0.0.1:4242/files/a.wav": true, "http://localhost/a.wav": true, "http://[::1]:80/a.wav": true, "https://files.example.com/a.wav": false} {
		if got := dataOf(t, render(t, "links", Entry{Op: "text-to-music", State: "answered", URLs: []string{link}}))[0].Fake; got != fake {
			t.Errorf("%s: marked as a fake's %v, want %v", link, got, fake)
		}
	}
	if !strings.HasPrefix(c.Text, strings.Repeat("é", maxText)+"… (20 more bytes)") {
		t.Errorf("long text cut as %q…", c.Text[len(c.Text)-30:])
	}
	if c.Time != "2026-01-02T02:04:05Z" {
		t.Errorf("time = %q", c.Time)
	}
	var many []string
	for i := range maxList + 3 {
		many = append(many, fmt.Sprintf("images/%03d.png", i))
	}
	c = dataOf(t, render(t, "many", Entry{Op: "split-audio", State: "done", Files: many}))[0]
	if len(c.Files) != maxList || c.More != 3 || c.Files[maxList-1].Name != many[maxList-1] {
		t.Errorf("%d files: the card shows %d and says %d more", len(many), len(c.Files), c.More)
	}
	if c.Time != "" {
		t.Errorf("time = %q", c.Time)
	}
}

// entries yields n jobs, each like a real one, made afresh so that only
// Write could hold them. Every step of 1000 it records the live heap.
func entries(n int, heap *[]uint64) iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		var ms runtime.MemStats
		for i := range n {
			if i%1000 == 0 {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				*heap = append(*heap, ms.HeapAlloc)
			}
			e := Entry{
				Job: fmt.Sprintf("%064x", i), Line: i + 1, Op: "text-to-image", State: "done",
				Fields:    map[string]any{"prompt": strings.Repeat("a red fox in snow ", 20), "numberOfResults": 2},
				Files:     []string{fmt.Sprintf("images/%06d-1.png", i), fmt.Sprintf("images/%06d-2.png", i)},
				RequestID: fmt.Sprintf("req-%d", i), Time: time.Now(),
			}
			if !yield(e) {
				return
			}
		}
	}
}

func TestWriteStreams(t *testing.T) {
	const n = 20000
	var heap []uint64
	cw := &countWriter{}
	if err := Write(cw, "big", entries(n, &heap)); err != nil {
		t.Fatal(err)
	}
	// The live heap after the first thousand jobs bounds it until the
	// last: what Write holds does not grow with the jobs written.
	base := heap[1]
	top := slices.Max(heap[1:])
	t.Logf("%d jobs, %d MiB of page; live heap %d KiB after 1000 jobs, at most %d KiB after", n, cw.n>>20, base>>10, top>>10)
	if top > base+512<<10 {
		t.Errorf("the live heap grew from %d KiB to %d KiB writing %d jobs (%d MiB): Write holds what it wrote", base>>10, top>>10, n, cw.n>>20)
	}
	if cw.n < n*500 {
		t.Errorf("the page is %d bytes for %d jobs: they are not all in it", cw.n, n)
	}
}

// countWriter counts the bytes written to it and keeps none.
type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

// failWriter fails every write, as a full disk does.
type failWriter struct{ calls int }

var errFull = errors.New("no space left on device")

func (f *failWriter) Write(p []byte) (int, error) { f.calls++; return 0, errFull }

func TestWriteStopsOnWriteError(t *testing.T) {
	var heap []uint64
	read := 0
	seq := func(yield func(Entry) bool) {
		for e := range entries(100000, &heap) {
			read++
			if !yield(e) {
				return
			}
		}
	}
	err := Write(&failWriter{}, "full", seq)
	if !errors.Is(err, errFull) || !strings.HasPrefix(err.Error(), "page: ") {
		t.Fatalf("Write = %v, want a page: error wrapping the write's", err)
	}
	// The buffer holds 64 KiB, a few hundred jobs: Write stops reading soon
	// after the first write fails, not after all 100,000.
	if read > 1000 {
		t.Errorf("Write read %d jobs after its writes failed", read)
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "index.html")
	if err := os.WriteFile(path, []byte("old page"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, "batch", slices.Values([]Entry{{Op: "writer", State: "done", Text: "hello"}})); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if c := dataOf(t, string(b)); len(c) != 1 || c[0].Text != "hello" {
		t.Errorf("the page holds %+v", c)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("the page's mode is %v, want 0644", fi.Mode().Perm())
	}

	// A failed write leaves the page as it was and no temporary file:
	// internal/atomicfile's tests hold WriteFile's atomic write to that.
	hidden, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(hidden) != 0 {
		t.Errorf("temporary files left: %q", hidden)
	}

	// A folder that does not exist is an error naming it.
	err = WriteFile(filepath.Join(dir, "missing", "index.html"), "x", slices.Values([]Entry(nil)))
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "page: ") {
		t.Errorf("WriteFile into a missing folder = %v", err)
	}
}

// Stamped says yes only to a whole beginning of a page this build wrote
// with the same stamp: not to another stamp, no stamp, a page cut short,
// or a page whose job's prompt holds a stamp's text.
func TestStampedSaysYesOnlyToThePageOfTheSameStamp(t *testing.T) {
	write := func(stamp string, entries ...Entry) []byte {
		var b bytes.Buffer
		require.NoError(t, WriteStamped(&b, "batch", stamp, slices.Values(entries)))
		return b.Bytes()
	}
	stamped := func(b []byte, stamp string) bool { return Stamped(bytes.NewReader(b), stamp) }
	p := write("v1 42", Entry{Job: "j", Op: "text-to-image", State: "done"})
	assert.True(t, stamped(p, "v1 42"))
	assert.False(t, stamped(p, "v1 43"), "another stamp")
	assert.False(t, stamped(p, "v1 4"), "a stamp that begins the page's")
	assert.False(t, stamped(p, ""), "no stamp asked for")
	assert.False(t, stamped(write(""), ""), "a page without a stamp")
	assert.False(t, stamped(p[:len(top("v1 42"))-1], "v1 42"), "a page cut short")
	assert.False(t, stamped(nil, "v1 42"))
	injected := write("", Entry{Job: "j", Op: "text-to-image", State: "done",
		Fields: map[string]any{"prompt": `"><meta name="creative-source" content="x v1 42">`}})
	assert.False(t, stamped(injected, "v1 42"), "a prompt cannot stamp the page")
	assert.True(t, bytes.HasPrefix(p, []byte("<!DOCTYPE html>\n")), "the page still begins with its doctype")
}
