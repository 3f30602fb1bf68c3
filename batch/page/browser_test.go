//go:build unix && !race

// The browser test runs once, in the plain "go test": under the race
// detector the fake service's images take 18 times as long (36 s against
// 2 s) and the browser is not Go code the detector could check.

package page

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/ids"
)

// chromium is Debian's Chromium, which .ci/run installs.
const chromium = "/usr/bin/chromium"

// needChromium skips the test when Chromium is absent, unless CI=true:
// then its absence fails the test, so that CI never passes without it.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %s is missing (%v): .ci/run must install Debian's chromium", chromium, err)
		}
		t.Skipf("%s is missing: the page is not checked in a browser (apt-get install chromium; CI=true makes this a failure)", chromium)
	}
}

// browse runs headless Chromium on the file at page with the extra
// arguments, in a profile and home of its own, and returns its standard
// output. Chromium and every process it started are killed if it outlives
// the limit, and when it ends.
func browse(t *testing.T, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	home := t.TempDir()
	args = append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + filepath.Join(home, "profile"),
	}, args...)
	cmd := exec.CommandContext(ctx, chromium, append(args, "file://"+page)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if cmd.Process != nil {
		// Helpers (the crash handler, a zygote) may outlive the browser.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if ctx.Err() != nil {
		t.Fatalf("chromium ran past %v and was killed; its errors:\n%s", 90*time.Second, lastOf(stderr.String()))
	}
	if err != nil {
		t.Fatalf("chromium: %v; its errors:\n%s", err, lastOf(stderr.String()))
	}
	t.Logf("chromium %s: %v", strings.Join(args[len(args)-2:], " "), time.Since(start).Round(time.Millisecond))
	return stdout.Bytes()
}

// lastOf is the end of a browser's log, enough to see why it failed.
func lastOf(s string) string { return s[max(0, len(s)-3000):] }

// batchOf makes a batch of n jobs against the fake service in dir, as a
// runner would record it: most of them text-to-image jobs whose images are
// saved under images/, one of them spoken, one written, and one in each
// state that is not done. Some prompts are hostile markup.
func batchOf(t *testing.T, dir string, n int) []Entry {
	t.Helper()
	srv := creativetest.NewServer()
	defer srv.Close()
	c := srv.Client()
	ctx := context.Background()
	if err := os.Mkdir(filepath.Join(dir, "images"), 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	var entries []Entry
	add := func(e Entry) {
		e.Line = len(entries) + 1
		e.Job = fmt.Sprintf("job-%04d", e.Line)
		e.Time = now.Add(time.Duration(e.Line) * time.Second)
		entries = append(entries, e)
	}
	idOf := func(resp *http.Response) string { return resp.Header.Get("X-Request-Id") }

	var resp *http.Response
	audio, err := c.TextToSpeech(ctx, creative.TextToSpeechRequest{Prompt: "Hello from the batch", VoiceID: ids.VoiceFemale1}, creative.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	name := "0001-text-to-speech" + audio.Ext()
	if err := audio.Save(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	add(Entry{Op: "text-to-speech", State: "done", Files: []string{name}, RequestID: idOf(resp),
		Fields: map[string]any{"prompt": "Hello from the batch", "voiceId": string(ids.VoiceFemale1)}})

	letter, err := c.CoverLetter(ctx, creative.CoverLetterRequest{JobRole: "Gardener", JobSkills: "roses", Language: "English", Tone: "formal"}, creative.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	add(Entry{Op: "writer", State: "done", Text: letter.Choices[0].Text, RequestID: idOf(resp),
		Fields: map[string]any{"jobRole": "Gardener", "jobSkills": "roses", "tone": "formal"}})

	add(Entry{Op: "text-to-image", State: "failed", Error: "creative: text-to-image: 400 Bad Request: prompt is required", RequestID: "req-failed", Fields: map[string]any{"prompt": ""}})
	add(Entry{Op: "text-to-image", State: "refused", Error: "creative: 503 Service Unavailable", Fields: map[string]any{"prompt": "a refused fox"}})
	add(Entry{Op: "infinite-zoom", State: "unknown", Error: "creative: outcome unknown: connection reset after the request was sent", Fields: map[string]any{"prompt": "an unknown zoom"}})
	add(Entry{Op: "text-to-music", State: "answered", URLs: []string{srv.URL + "/files/music.mp3"}, Fields: map[string]any{"prompt": "a waiting tune"}})
	add(Entry{Op: "text-to-music", State: "answered", Lost: true, Error: "creative: download: 404 Not Found", URLs: []string{srv.URL + "/files/gone.mp3"}, Fields: map[string]any{"prompt": "a lost tune"}})
	add(Entry{Op: "text-to-image", State: "claimed", Fields: map[string]any{"prompt": "a claimed owl"}})

	for len(entries) < n {
		prompt := fmt.Sprintf("a watercolour fox, number %d", len(entries)+1)
		if i := len(entries) % 50; i < len(hostile) {
			prompt = hostile[i]
		}
		count := 1 + len(entries)%2
		imgs, err := c.TextToImage(ctx, creative.TextToImageRequest{Prompt: prompt, NumberOfResults: count, ImageSizeID: ids.Size3x2}, creative.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for k, im := range imgs {
			name := fmt.Sprintf("images/%04d-text-to-image-%d%s", len(entries)+1, k+1, im.Ext())
			if err := im.Save(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			files = append(files, name)
		}
		add(Entry{Op: "text-to-image", State: "done", Files: files, RequestID: idOf(resp),
			Fields: map[string]any{"prompt": prompt, "numberOfResults": count, "imageSizeId": string(ids.Size3x2)}})
	}
	return entries
}

// probe is a script added to a copy of the page, before the page's own:
// it counts alerts and policy violations, walks every page of jobs, makes
// each image load, and writes what it saw into the DOM as JSON.
const probe = `(function () {
  var out = { alerts: 0, violations: [], errors: [], jobs: [], prompts: [], images: 0, loaded: 0, broken: [], injected: 0, visible: 0, visibleLoaded: 0, labels: {}, fakeNotes: [] };
  window.alert = function () { out.alerts++; };
  document.addEventListener("securitypolicyviolation", function (e) { out.violations.push(e.violatedDirective + " " + e.blockedURI); });
  window.addEventListener("error", function (e) { out.errors.push(String(e.message)); });
  function settle(img) {
    return img.complete ? Promise.resolve() : new Promise(function (r) { img.addEventListener("load", r); img.addEventListener("error", r); });
  }
  document.addEventListener("DOMContentLoaded", async function () {
    var main = document.getElementById("cards");
    out.pages = +main.dataset.pages;
    out.firstRendered = +main.dataset.rendered;
    out.summary = document.getElementById("summary").textContent;
    var first = Array.from(main.querySelectorAll("img")).filter(function (i) { return i.getBoundingClientRect().top < innerHeight; });
    await Promise.all(first.map(settle));
    out.visible = first.length;
    out.visibleLoaded = first.filter(function (i) { return i.naturalWidth > 0; }).length;
    for (var p = 0; p < out.pages; p++) {
      if (p > 0) document.getElementById("next").click();
      main.querySelectorAll("article").forEach(function (a) { out.jobs.push(a.dataset.job); });
      main.querySelectorAll("dt").forEach(function (dt) { if (dt.textContent === "prompt") out.prompts.push(dt.nextSibling.textContent); });
      main.querySelectorAll("dd[title]").forEach(function (dd) { out.labels[dd.textContent] = dd.title; });
      main.querySelectorAll(".fake").forEach(function (n) { out.fakeNotes.push(n.closest("article").dataset.job); });
      out.injected += document.querySelectorAll("[onerror], img[src='x'], body script:not([id])").length - 1;
      var imgs = Array.from(main.querySelectorAll("img"));
      imgs.forEach(function (i) { i.loading = "eager"; });
      await Promise.all(imgs.map(settle));
      imgs.forEach(function (i) { out.images++; if (i.naturalWidth > 0) out.loaded++; else out.broken.push(i.getAttribute("src")); });
    }
    out.filtered = {};
    [["state", "failed"], ["state", "answered"], ["op", "writer"], ["q", "number 12"]].forEach(function (f) {
      var ctl = document.getElementById(f[0]);
      ctl.value = f[1];
      ctl.dispatchEvent(new Event(f[0] === "q" ? "input" : "change"));
      out.filtered[f[0] + "=" + f[1]] = Array.from(main.querySelectorAll("article")).map(function (a) { return a.dataset.job; });
      ctl.value = "";
      ctl.dispatchEvent(new Event(f[0] === "q" ? "input" : "change"));
    });
    var pre = document.createElement("pre");
    pre.id = "probe";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  });
})();`

// seen is what the probe wrote.
type seen struct {
	Alerts        int      `json:"alerts"`
	Violations    []string `json:"violations"`
	Errors        []string `json:"errors"`
	Pages         int      `json:"pages"`
	FirstRendered int      `json:"firstRendered"`
	Summary       string   `json:"summary"`
	Jobs          []string `json:"jobs"`
	Prompts       []string `json:"prompts"`
	Images        int      `json:"images"`
	Loaded        int      `json:"loaded"`
	Broken        []string `json:"broken"`
	Injected      int      `json:"injected"`
	Visible       int      `json:"visible"`
	// Labels are the ids the page shows by their label: label -> id.
	Labels map[string]string `json:"labels"`
	// FakeNotes are the jobs whose links are said to be a fake's.
	FakeNotes []string `json:"fakeNotes"`
	// Filtered are the jobs shown under each filter, tried one at a time.
	Filtered      map[string][]string `json:"filtered"`
	VisibleLoaded int                 `json:"visibleLoaded"`
}

// withProbe is the page with the probe as the first script of its head,
// allowed by the page's policy.
func withProbe(t *testing.T, page string) string {
	t.Helper()
	own := "script-src &#39;" + hash(script) + "&#39;"
	if !strings.Contains(page, own) {
		t.Fatalf("the page's policy does not allow its script by hash")
	}
	page = strings.Replace(page, own, own+" &#39;"+hash(probe)+"&#39;", 1)
	return strings.Replace(page, "</head>", "<script>"+probe+"</script>\n</head>", 1)
}

func TestBrowserShowsBatch(t *testing.T) {
	needChromium(t)
	dir := t.TempDir()
	const n = 200
	entries := batchOf(t, dir, n)
	index := filepath.Join(dir, "index.html")
	// The ledger gives its jobs in no order of the jobs file's: the page
	// shows them by line.
	shuffled := slices.Clone(entries)
	slices.Reverse(shuffled)
	if err := WriteFile(index, "Batch of 200 jobs", slices.Values(shuffled)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	probed := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probed, []byte(withProbe(t, string(b))), 0o644); err != nil {
		t.Fatal(err)
	}

	dom := browse(t, probed, "--virtual-time-budget=10000", "--window-size=1280,2000", "--dump-dom")
	_, after, ok := bytes.Cut(dom, []byte(`<pre id="probe">`))
	raw, _, ok2 := bytes.Cut(after, []byte("</pre>"))
	if !ok || !ok2 {
		t.Fatalf("the probe wrote nothing: the page's script did not run to its end; the DOM:\n%s", lastOf(string(dom)))
	}
	var s seen
	if err := json.Unmarshal([]byte(html.UnescapeString(string(raw))), &s); err != nil {
		t.Fatalf("the probe's output: %v\n%s", err, raw)
	}
	t.Logf("pages %d, first page %d cards, %d images of which %d loaded (%d in the first view, %d loaded); summary %q",
		s.Pages, s.FirstRendered, s.Images, s.Loaded, s.Visible, s.VisibleLoaded, s.Summary)

	if len(s.Errors) != 0 || len(s.Violations) != 0 || s.Alerts != 0 || s.Injected != 0 {
		t.Errorf("errors %q, policy violations %q, alerts %d, injected elements %d: want none", s.Errors, s.Violations, s.Alerts, s.Injected)
	}
	var want []string
	images := 0
	for _, e := range entries {
		want = append(want, e.Job)
		for _, f := range e.Files {
			if kindOf(f) == "image" {
				images++
			}
		}
	}
	if !slices.Equal(s.Jobs, want) {
		t.Errorf("the pages show %d jobs, want all %d in the order of their lines", len(s.Jobs), len(want))
	}
	if s.Labels["female 1"] != string(ids.VoiceFemale1) || s.Labels["3:2"] != string(ids.Size3x2) {
		t.Errorf("ids shown by label, the id on hover: %q", s.Labels)
	}
	if !slices.Equal(s.FakeNotes, []string{"job-0006", "job-0007"}) {
		t.Errorf("links of the local fake marked on %q, want the two answered jobs", s.FakeNotes)
	}
	if s.Pages != 2 || s.FirstRendered != 100 {
		t.Errorf("%d pages, %d cards on the first: want 2 pages of 100", s.Pages, s.FirstRendered)
	}
	if s.Images != images || s.Loaded != images || len(s.Broken) != 0 {
		t.Errorf("%d images on the pages, %d loaded, broken %q: want all %d loaded", s.Images, s.Loaded, s.Broken, images)
	}
	if s.Visible == 0 || s.VisibleLoaded != s.Visible {
		t.Errorf("%d of the %d images in the first view loaded", s.VisibleLoaded, s.Visible)
	}
	for _, h := range hostile {
		if !slices.Contains(s.Prompts, h) {
			t.Errorf("the prompt %q is not shown as text", h)
		}
	}
	for f, jobs := range map[string][]string{
		"state=failed":   {"job-0003"},
		"state=answered": {"job-0006", "job-0007"},
		"op=writer":      {"job-0002"},
		"q=number 12":    {"job-0012", "job-0120", "job-0121", "job-0122", "job-0123", "job-0124", "job-0125", "job-0126", "job-0127", "job-0128", "job-0129"},
	} {
		if got := s.Filtered[f]; !slices.Equal(got, jobs) {
			t.Errorf("filtered by %s, the page shows %q, want %q", f, got, jobs)
		}
	}
	for _, part := range []string{"200 jobs", "done", "waiting for a download", "failed", "refused", "unknown", "claimed"} {
		if !strings.Contains(s.Summary, part) {
			t.Errorf("the summary %q does not say %q", s.Summary, part)
		}
	}

	shot := filepath.Join(dir, "shot.png")
	browse(t, index, "--virtual-time-budget=5000", "--hide-scrollbars", "--window-size=1280,2000", "--screenshot="+shot)
	checkScreenshot(t, shot)
	if keep := os.Getenv("PAGE_SCREENSHOT"); keep != "" {
		b, err := os.ReadFile(shot)
		if err == nil {
			err = os.WriteFile(keep, b, 0o644)
		}
		if err != nil {
			t.Errorf("keeping the screenshot: %v", err)
		}
	}
}

// checkScreenshot checks that the screenshot at path is a 1280×2000 PNG
// with something drawn on it: many colours, not a blank or an error page.
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("chromium made no screenshot")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2000 {
		t.Errorf("the screenshot is %v, want 1280×2000", b)
	}
	colours := map[[3]uint32]bool{}
	for y := 0; y < img.Bounds().Dy(); y += 4 {
		for x := 0; x < img.Bounds().Dx(); x += 4 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
		}
	}
	if len(colours) < 200 {
		t.Errorf("the screenshot has %d colours: the thumbnails are not drawn", len(colours))
	}
	t.Logf("screenshot %s: %d colours", path, len(colours))
}
