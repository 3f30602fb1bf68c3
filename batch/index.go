package batch

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"path"
	"strconv"
	"strings"

	"github.com/creativegen/creative-go/internal/ops"
)

// IndexFile is the name of the contact sheet WriteIndex writes.
const IndexFile = "index.html"

// maxIndexText bounds the text of a job shown on the contact sheet.
const maxIndexText = 2000

// WriteIndex writes index.html to store: a contact sheet of every job of
// the ledger, with its state, operation, line or id, request id and error,
// a thumbnail of each image (loaded lazily), a player for audio and video,
// and the writer's text; filterable by state and operation. It is one
// self-contained file (no script, font or style from elsewhere) that opens
// from disk, written as one object: a reader sees the old page or the new
// one. The ledger is read one job at a time; the page's script orders the
// jobs by line.
func WriteIndex(ctx context.Context, store Store) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := store.NewWriter(wctx, IndexFile, map[string]string{"content-type": "text/html; charset=utf-8"})
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	st := Status{States: map[State]int{}}
	fmt.Fprint(bw, indexHead)
	err = eachJob(ctx, store, func(rec *Record) error {
		st.add(rec)
		return writeJob(bw, rec)
	})
	fmt.Fprintf(bw, "</main>\n<p id=\"count\">%s</p>\n%s", html.EscapeString(statusLine(st)), indexTail)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		cancel() // the writer leaves nothing
		_ = w.Close()
		return err
	}
	return w.Close()
}

// statusLine counts the jobs by state for the page's footer.
func statusLine(st Status) string {
	parts := []string{plural(st.Jobs, "job")}
	for _, s := range []State{Done, Answered, Failed, Refused, Unknown, Claimed} {
		if n := st.States[s]; n > 0 {
			parts = append(parts, strconv.Itoa(n)+" "+string(s))
		}
	}
	return strings.Join(parts, ", ")
}

// writeJob writes the figure of one job.
func writeJob(w *bufio.Writer, rec *Record) error {
	state := string(rec.State)
	if rec.State == Answered && !rec.Lost {
		state = "waiting" // for a download
	}
	name := "line " + strconv.Itoa(rec.Line)
	if rec.ID != "" {
		name = rec.ID
	}
	e := html.EscapeString
	fmt.Fprintf(w, "<figure class=\"job %s\" data-state=\"%s\" data-op=\"%s\" data-line=\"%d\">\n", e(state), e(state), e(rec.Op), rec.Line)
	for _, f := range rec.Files {
		writeMedia(w, f)
	}
	if rec.Text != "" {
		text := rec.Text
		if len(text) > maxIndexText {
			text = text[:maxIndexText] + "…"
		}
		fmt.Fprintf(w, "<pre>%s</pre>\n", e(text))
	}
	fmt.Fprintf(w, "<figcaption><b>%s</b> %s <span class=\"state\">%s</span>", e(name), e(rec.Op), e(state))
	if rec.RequestID != "" {
		fmt.Fprintf(w, " <small>request %s</small>", e(rec.RequestID))
	}
	if rec.Error != "" {
		fmt.Fprintf(w, "<br><small class=\"err\">%s</small>", e(rec.Error))
	}
	_, err := fmt.Fprint(w, "</figcaption></figure>\n")
	return err
}

// writeMedia shows one output file by its kind.
func writeMedia(w *bufio.Writer, file string) {
	src := html.EscapeString(pathEscape(file))
	switch strings.ToLower(path.Ext(file)) {
	case ".png", ".jpg", ".jpeg", ".webp", ".gif":
		fmt.Fprintf(w, "<a href=\"%s\"><img loading=\"lazy\" decoding=\"async\" src=\"%s\" alt=\"%s\"></a>\n", src, src, html.EscapeString(file))
	case ".mp3", ".wav", ".ogg", ".flac":
		fmt.Fprintf(w, "<audio controls preload=\"none\" src=\"%s\"></audio>\n", src)
	case ".mp4", ".webm":
		fmt.Fprintf(w, "<video controls preload=\"metadata\" src=\"%s#t=0.1\"></video>\n", src)
	default:
		fmt.Fprintf(w, "<a href=\"%s\">%s</a>\n", src, html.EscapeString(file))
	}
}

// pathEscape escapes each segment of a relative link.
func pathEscape(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "%", "%25"), "#", "%23")
		segs[i] = strings.ReplaceAll(segs[i], "?", "%3F")
	}
	return strings.Join(segs, "/")
}

// opOptions are the operation filter's choices.
func opOptions() string {
	var b strings.Builder
	for _, o := range ops.All {
		fmt.Fprintf(&b, "<option>%s</option>", html.EscapeString(o.Name))
	}
	return b.String()
}

var indexHead = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>batch</title>
<style>
body{font:14px system-ui,sans-serif;margin:0;background:#f4f4f4;color:#222}
header{position:sticky;top:0;background:#fff;padding:.6em 1em;border-bottom:1px solid #ddd;display:flex;gap:1em;align-items:center}
main{display:grid;grid-template-columns:repeat(auto-fill,minmax(220px,1fr));gap:.8em;padding:1em}
figure{margin:0;background:#fff;border:1px solid #ddd;border-left:5px solid #999;padding:.5em;overflow:hidden}
figure.done{border-left-color:#2a2}figure.failed{border-left-color:#c22}figure.unknown,figure.claimed{border-left-color:#e90}
figure.waiting,figure.answered{border-left-color:#29c}figure.refused{border-left-color:#888}
img{width:100%;height:180px;object-fit:contain;background:#eee}
audio,video{width:100%}pre{white-space:pre-wrap;max-height:12em;overflow:auto;font-size:12px}
.err{color:#a00}.state{font-weight:600}#count{padding:0 1em 1em}
</style></head><body>
<header><b>batch</b>
<label>state <select id="state"><option value="">all</option><option>done</option><option>failed</option><option>refused</option><option>unknown</option><option>claimed</option><option>waiting</option><option>answered</option></select></label>
<label>operation <select id="op"><option value="">all</option>` + opOptions() + `</select></label>
<span id="shown"></span></header>
<main id="jobs">
`

const indexTail = `<script>
(function(){
var main=document.getElementById('jobs'),st=document.getElementById('state'),op=document.getElementById('op'),shown=document.getElementById('shown');
var jobs=Array.prototype.slice.call(main.children);
jobs.sort(function(a,b){return a.dataset.line-b.dataset.line;});
jobs.forEach(function(j){main.appendChild(j);});
function filter(){var n=0;jobs.forEach(function(j){var ok=(!st.value||j.dataset.state===st.value)&&(!op.value||j.dataset.op===op.value);j.hidden=!ok;if(ok)n++;});shown.textContent=n+' shown';}
st.onchange=filter;op.onchange=filter;filter();
})();
</script>
</body></html>
`
