package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/ops"
)

// batchFlags are the flags of creative batch.
type batchFlags struct {
	out         string
	concurrency int
	rate        float64
	shard       string
	dryRun      bool
}

// resultsFile is the name of the record of finished jobs under --out.
const resultsFile = "results.jsonl"

func (a *app) batchCommand() *cobra.Command {
	f := &batchFlags{}
	cmd := &cobra.Command{
		Use:   "batch JOBS.jsonl",
		Short: "Run a file of jobs, one JSON object per line",
		Long: `Run many calls from a JSON Lines file: one job per line, a JSON object whose
"op" names the operation ("image/text-to-image", "audio/enhance", ...) and
whose other keys are the operation's fields named as in the API ("prompt",
"numberOfResults", "styleId", "voiceId", "typeId", "url", ...). Id fields
take ids or labels; file fields ("audio", "image") take a path relative to
the folder of JOBS.jsonl. An optional "id" names the job and its files; by
default the line number does.

Every line is checked before anything is sent: a bad line stops the run
with exit status 2, naming the line and why.

Outputs go under --out, named <id>.<ext> (or <id>-1.<ext>, <id>-2.<ext> ...
for several), and --out/results.jsonl gets one JSON line per finished job
(line, id, op, ok, files, urls, text, error, attempts, seconds, hash), written
as each job ends. A rerun with the same --out skips every job recorded ok
whose line is unchanged, so a paid call is not repeated; failed and edited
jobs run again.

--rate bounds the requests sent per second over all workers, retries and
downloads included; a 429 or 503 answer with Retry-After pauses every
worker for the time it asks.

The first Ctrl-C stops starting jobs (also those waiting for --rate or a
pause) and lets the calls in flight finish and be recorded; a second one
cancels them. --shard I/N runs only the jobs whose line number modulo N is
I, so N machines can share one file.

Exit status: 0 when every job is ok, 1 when some failed (see results.jsonl),
2 on a usage error or a bad line (nothing was sent), 130 when interrupted.`,
		Example: `  creative batch jobs.jsonl --out results --concurrency 8 --rate 5
  creative batch jobs.jsonl --dry-run
  creative batch jobs.jsonl --out results --shard "$JOB_COMPLETION_INDEX/4"

  jobs.jsonl:
  {"op":"image/text-to-image","id":"fox","prompt":"a fox in the snow","numberOfResults":2,"styleId":"anime"}
  {"op":"audio/text-to-speech","prompt":"Welcome!","voiceId":"female 1"}
  {"op":"image/re-imagine","image":"photos/cat.png"}`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("want one JOBS.jsonl file, got %d arguments", len(args))
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return []cobra.Completion{"jsonl", "json"}, cobra.ShellCompDirectiveFilterFileExt
		},
		RunE: ran(func(cmd *cobra.Command, args []string) error {
			return a.runBatch(cmd.Context(), args[0], f)
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&f.out, "out", ".", "directory for the results and results.jsonl")
	fs.IntVar(&f.concurrency, "concurrency", 4, "jobs run at once")
	fs.Float64Var(&f.rate, "rate", 0, "most requests sent per second over all jobs, retries and downloads included (0: no limit)")
	fs.StringVar(&f.shard, "shard", "", "run only the jobs whose line number modulo N is I, given as I/N")
	fs.BoolVar(&f.dryRun, "dry-run", false, "check every line and print the calls that would be made; send nothing")
	_ = cmd.MarkFlagDirname("out")
	return cmd
}

// A job is one valid line of a batch file.
type job struct {
	line int
	id   string
	hash string // of the line's bytes: an edited line is a new job
	b    binding
	p    *params
	// paid are the generated files' URLs of an earlier run whose call
	// succeeded but whose downloads did not: only the downloads are tried
	// again.
	paid []string
}

// A record is one line of results.jsonl.
type record struct {
	Line     int      `json:"line"`
	ID       string   `json:"id"`
	Op       string   `json:"op"`
	OK       bool     `json:"ok"`
	Files    []string `json:"files,omitempty"`
	URLs     []string `json:"urls,omitempty"`
	Text     string   `json:"text,omitempty"`
	Error    string   `json:"error,omitempty"`
	Attempts int      `json:"attempts"`
	Seconds  float64  `json:"seconds"`
	Hash     string   `json:"hash"`
}

// parseShard reads --shard I/N; the zero shard (0/1) is the whole file.
func parseShard(s string) (i, n int, err error) {
	if s == "" {
		return 0, 1, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, usagef("--shard must be I/N with 0 <= I < N, such as 0/4, got %q", s)
	}
	return i, n, nil
}

func (a *app) runBatch(ctx context.Context, path string, f *batchFlags) error {
	if f.concurrency < 1 {
		return usagef("--concurrency must be 1 or more, got %d", f.concurrency)
	}
	if !(f.rate >= 0) || math.IsInf(f.rate, 1) {
		return usagef("--rate must be 0 (no limit) or a positive number, got %v", f.rate)
	}
	shardI, shardN, err := parseShard(f.shard)
	if err != nil {
		return err
	}
	jobs, err := a.readJobs(ctx, path)
	if err != nil {
		return err
	}
	done, paid, err := readDone(filepath.Join(f.out, resultsFile))
	if err != nil {
		return err
	}
	var todo []*job
	skipped := 0
	for _, j := range jobs {
		if j.line%shardN != shardI {
			continue
		}
		if done[doneKey{j.line, j.hash}] {
			skipped++
			continue
		}
		j.paid = paid[doneKey{j.line, j.hash}]
		todo = append(todo, j)
	}
	if f.dryRun {
		return a.dryRunReport(todo, skipped, len(jobs), f)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return usagef("--out: %v", err)
	}
	rec, err := openResultLog(filepath.Join(f.out, resultsFile))
	if err != nil {
		return err
	}
	defer rec.close()
	if len(todo) == 0 {
		fmt.Fprintf(a.con, "creative: batch: nothing to do: %d jobs already recorded ok in %s\n", skipped, rec.path)
		return nil
	}
	return a.runJobs(ctx, todo, skipped, f, rec)
}

// idPattern is what a job's id may be: it names files.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// maxBadLines bounds how many bad lines are listed.
const maxBadLines = 20

// readJobs reads and checks every line of the file; any bad line is a
// usage error and nothing is sent.
func (a *app) readJobs(ctx context.Context, path string) ([]*job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("batch: %v", err)
	}
	dir := filepath.Dir(path)
	dry, err := newDryClient()
	if err != nil {
		return nil, err
	}
	var jobs []*job
	var bad []string
	ids := map[string]int{}
	for n, raw := range bytes.Split(data, []byte("\n")) {
		line := n + 1
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		j, err := parseJob(ctx, dry, line, raw, dir)
		if err == nil {
			if first, dup := ids[j.id]; dup {
				err = fmt.Errorf("id %q is also the id of line %d", j.id, first)
			} else {
				ids[j.id] = line
			}
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s:%d: %s", path, line, strings.TrimPrefix(oneLine(err.Error()), "creative: ")))
			continue
		}
		jobs = append(jobs, j)
	}
	if len(bad) > 0 {
		for _, b := range bad[:min(len(bad), maxBadLines)] {
			fmt.Fprintln(a.con, "creative: "+b)
		}
		if len(bad) > maxBadLines {
			fmt.Fprintf(a.con, "creative: ... and %d more\n", len(bad)-maxBadLines)
		}
		return nil, usagef("batch: %d bad lines in %s; nothing was sent", len(bad), path)
	}
	if len(jobs) == 0 {
		return nil, usagef("batch: %s holds no jobs", path)
	}
	return jobs, nil
}

// parseJob reads one line into a job and checks it as the SDK would,
// sending nothing.
func parseJob(ctx context.Context, dry *creative.Client, line int, raw []byte, dir string) (*job, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, errors.New("not a JSON object")
	}
	var name string
	if err := json.Unmarshal(obj["op"], &name); err != nil || name == "" {
		return nil, errors.New(`"op" must name the operation, such as "image/text-to-image"`)
	}
	op, ok := ops.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown op %q%s", name, suggestOp(name))
	}
	j := &job{line: line, id: strconv.Itoa(line), b: bindings[op.Name]}
	sum := sha256.Sum256(raw)
	j.hash = hex.EncodeToString(sum[:])
	if rawID, ok := obj["id"]; ok {
		if err := json.Unmarshal(rawID, &j.id); err != nil || !idPattern.MatchString(j.id) {
			return nil, errors.New(`"id" must be a string of letters, digits, ".", "_" or "-" (it names files), starting with a letter or digit`)
		}
	}
	j.p = newParams(op, func(field string) string { return field })
	for _, f := range op.Fields {
		if d, ok := j.b.defaults[f.Name]; ok {
			_ = j.p.setText(f, d)
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "op" || k == "id" {
			continue
		}
		f, ok := op.Field(k)
		if !ok {
			names := make([]string, len(op.Fields))
			for i, f := range op.Fields {
				names[i] = f.Name
			}
			return nil, fmt.Errorf("%s takes no field %q (it takes: %s)", op.Name, k, strings.Join(names, ", "))
		}
		if err := j.p.setJSON(f, obj[k], dir); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", op.Name, k, err)
		}
	}
	for _, f := range op.Fields {
		if j.b.required(f) && !j.p.has(f.Name) {
			return nil, fmt.Errorf("%s: %s is required", op.Name, f.Name)
		}
	}
	// The SDK's own checks, stopped before anything is sent.
	_, err := j.b.call(ctx, dry, j.p, creative.WithMiddleware(dryRun))
	if !errors.Is(err, errDry) {
		if err == nil {
			err = errors.New("the check sent nothing yet got an answer")
		}
		return nil, err
	}
	return j, nil
}

// suggestOp names the operations closest to a mistyped name.
func suggestOp(name string) string {
	var near []string
	for _, o := range ops.All {
		if strings.Contains(o.Name, name) || strings.Contains(name, o.Verb()) || levenshtein(name, o.Name) <= 3 {
			near = append(near, fmt.Sprintf("%q", o.Name))
		}
	}
	if len(near) == 0 {
		return " (see creative --help for the operations)"
	}
	return "; did you mean " + strings.Join(near, " or ") + "?"
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// errDry is what the dry-run middleware answers: the request passed every
// check the SDK makes before sending.
var errDry = errors.New("dry run: not sent")

// dryRun is a middleware that sends nothing: it stops the first attempt
// with errDry. The SDK does not retry a middleware's error, so a check
// costs no backoff.
func dryRun(req *http.Request, _ creative.MiddlewareNext) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	return nil, errDry
}

// newDryClient returns the client the lines are checked through: calls
// given creative.WithMiddleware(dryRun) run the SDK's validation and then
// fail with errDry instead of sending.
func newDryClient() (*creative.Client, error) {
	return creative.New(creative.WithBaseURL("http://127.0.0.1/"), creative.WithAccessKey("dry-run"))
}

func (a *app) dryRunReport(todo []*job, skipped, total int, f *batchFlags) error {
	counts := map[string]int{}
	downloads := 0
	for _, j := range todo {
		if j.paid != nil {
			downloads++
			continue
		}
		counts[j.p.op.Name]++
	}
	for _, op := range ops.All {
		if n := counts[op.Name]; n > 0 {
			fmt.Fprintf(a.stdout, "%-26s %d\n", op.Name, n)
		}
	}
	shard := ""
	if f.shard != "" {
		shard = " in shard " + f.shard
	}
	fmt.Fprintf(a.stdout, "%d calls would be made%s (%d jobs checked, %d already recorded ok", len(todo)-downloads, shard, total, skipped)
	if downloads > 0 {
		fmt.Fprintf(a.stdout, ", %d paid for but not downloaded", downloads)
	}
	fmt.Fprintln(a.stdout, "); nothing was sent")
	return nil
}

// doneKey identifies a job that finished ok: its line and its content.
type doneKey struct {
	line int
	hash string
}

// readDone reads results.jsonl, if there is one: the jobs recorded ok,
// and the URLs of jobs whose call succeeded but whose files were not all
// downloaded. Lines that do not parse (a crash in the middle of a write)
// are ignored.
func readDone(path string) (done map[doneKey]bool, paid map[doneKey][]string, err error) {
	done, paid = map[doneKey]bool{}, map[doneKey][]string{}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return done, paid, nil
	}
	if err != nil {
		return nil, nil, usagef("batch: %v", err)
	}
	for _, raw := range bytes.Split(data, []byte("\n")) {
		var r record
		if json.Unmarshal(raw, &r) != nil || r.Hash == "" {
			continue
		}
		k := doneKey{r.Line, r.Hash}
		switch {
		case r.OK:
			done[k] = true
		case len(r.URLs) > 0:
			paid[k] = r.URLs
		}
	}
	return done, paid, nil
}

// resultLog appends records to results.jsonl, one write per job, as jobs
// finish, so a crash loses nothing that finished.
type resultLog struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func openResultLog(path string) (*resultLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// A crash in the middle of a write leaves a line without its end:
	// end it, so the next record starts on a line of its own.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			_, _ = f.Write([]byte("\n"))
		}
	}
	return &resultLog{path: path, f: f}, nil
}

func (r *resultLog) write(rec record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err = r.f.Write(append(b, '\n'))
	return err
}

func (r *resultLog) close() error { return r.f.Close() }

// batchHTTPClient is the client a batch's calls go through: its pool
// keeps an idle connection for each worker, where the SDK's own keeps 128
// a host.
func batchHTTPClient(concurrency int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = max(256, 2*concurrency)
	t.MaxIdleConnsPerHost = max(128, 2*concurrency)
	return &http.Client{Transport: t}
}

// runJobs runs the jobs with f.concurrency workers through one client and
// records each as it ends.
func (a *app) runJobs(ctx context.Context, todo []*job, skipped int, f *batchFlags, rec *resultLog) error {
	opts := []creative.Option{creative.WithHTTPClient(batchHTTPClient(f.concurrency))}
	if f.rate > 0 {
		opts = append(opts, creative.WithRateLimit(f.rate, 1))
	}
	c, closeClient, err := a.newClient(opts...)
	if err != nil {
		return err
	}
	defer closeClient()

	// The first signal stops starting jobs; the second cancels the calls
	// in flight.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st := newStarter()
	stopStarting := make(chan struct{})
	var interrupted atomic.Bool
	watchDone, watching := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watching)
		select {
		case <-a.signals:
		case <-watchDone:
			return
		}
		interrupted.Store(true)
		close(stopStarting)
		inFlight := st.stop()
		a.atLineStart()
		fmt.Fprintf(a.con, "creative: batch: stopping: letting %d calls in flight finish (Ctrl-C again to cancel them)\n", inFlight)
		select {
		case <-a.signals:
			a.atLineStart()
			fmt.Fprintln(a.con, "creative: batch: cancelling the calls in flight")
			cancel()
		case <-watchDone:
		}
	}()

	var ok, failed atomic.Int32
	start := time.Now()
	d := a.startDisplay()
	bar := d.counter(int64(len(todo)), func() string {
		s := fmt.Sprintf("batch %d/%d", ok.Load()+failed.Load(), len(todo))
		if n := failed.Load(); n > 0 {
			s += fmt.Sprintf(" (%d failed)", n)
		}
		return s
	})
	queue := make(chan *job)
	go func() {
		defer close(queue)
		for _, j := range todo {
			select {
			case queue <- j:
			case <-stopStarting:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	var recErr error
	var recOnce sync.Once
	for range min(f.concurrency, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				r, started := a.runJob(ctx, st, c, j, f.out, d)
				if !started {
					continue
				}
				if r.OK {
					ok.Add(1)
				} else {
					failed.Add(1)
				}
				if err := rec.write(r); err != nil {
					recOnce.Do(func() { recErr = err })
				}
				if bar != nil {
					bar.Increment()
				}
			}
		}()
	}
	wg.Wait()
	// Wait for a signal's message, so it comes before the summary.
	close(watchDone)
	<-watching
	d.stop()

	notRun := len(todo) - int(ok.Load()+failed.Load())
	summary := fmt.Sprintf("creative: batch: %d ok, %d failed", ok.Load(), failed.Load())
	if skipped > 0 {
		summary += fmt.Sprintf(", %d skipped (recorded ok before)", skipped)
	}
	if notRun > 0 {
		summary += fmt.Sprintf(", %d not started", notRun)
	}
	summary += fmt.Sprintf(" in %.1fs; results in %s", time.Since(start).Seconds(), rec.path)
	fmt.Fprintln(a.con, summary)
	switch {
	case recErr != nil:
		return fmt.Errorf("batch: recording results: %w", recErr)
	case interrupted.Load():
		return errInterrupted
	case failed.Load() > 0:
		return fmt.Errorf("batch: %d of %d jobs failed; rerun to retry them", failed.Load(), len(todo))
	}
	return nil
}

// errNotStarted stops the first request of a job once the batch is
// stopping.
var errNotStarted = errors.New("batch stopping: not started")

// A starter decides, under one lock, whether a job may send its first
// request. A job waits for that in the client (for --rate, or a pause a 429
// asked for) after a worker took it; once the batch is stopping, such a
// job is cancelled without sending anything, while jobs that sent are let
// finish: they may be paid for.
type starter struct {
	mu       sync.Mutex
	stopping bool
	waiting  map[*jobRun]bool // jobs that have not sent yet
	inFlight int              // jobs that sent and have not ended
}

// A jobRun is one job between a worker taking it and its end.
type jobRun struct {
	cancel context.CancelFunc
	sent   bool // its first request went out; guarded by starter.mu
}

func newStarter() *starter { return &starter{waiting: map[*jobRun]bool{}} }

// begin starts a job under ctx, or reports false once the batch is
// stopping.
func (s *starter) begin(ctx context.Context) (*jobRun, context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &jobRun{cancel: cancel}
	s.waiting[r] = true
	return r, ctx, true
}

// gate is the middleware of every request of the job r: its first attempt
// goes out only while the batch is not stopping.
func (s *starter) gate(r *jobRun) creative.Middleware {
	return func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
		s.mu.Lock()
		if !r.sent {
			if s.stopping {
				s.mu.Unlock()
				if req.Body != nil {
					req.Body.Close()
				}
				return nil, errNotStarted
			}
			r.sent = true
			delete(s.waiting, r)
			s.inFlight++
		}
		s.mu.Unlock()
		return next(req)
	}
}

// end ends the job r and reports whether it was stopped before it sent
// anything (then it is not recorded: a rerun runs it).
func (s *starter) end(r *jobRun) (stopped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.cancel()
	delete(s.waiting, r)
	if r.sent {
		s.inFlight--
	}
	return !r.sent && s.stopping
}

// stop lets no job send its first request any more, cancels those waiting
// to, and returns how many jobs are in flight.
func (s *starter) stop() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
	for r := range s.waiting {
		r.cancel()
	}
	return s.inFlight
}

// runJob makes one job's call and writes its files, showing a line for it
// while it runs. started is false when the batch stopped the job before it
// sent anything.
func (a *app) runJob(ctx context.Context, st *starter, c *creative.Client, j *job, dir string, d *display) (r record, started bool) {
	run, ctx, ok := st.begin(ctx)
	if !ok {
		return r, false
	}
	defer func() { started = !st.end(run) }()
	r = record{Line: j.line, ID: j.id, Op: j.p.op.Name, Hash: j.hash}
	start := time.Now()
	status := newCallStatus(fmt.Sprintf("  line %d %s", j.line, j.p.op.Name))
	defer d.drop(d.status(status.String))
	opts := append([]creative.Option{creative.WithMiddleware(st.gate(run))}, status.track(a.logHandler())...)
	var res any
	var err error
	if j.paid != nil {
		// Paid for already: fetch the files, do not call again.
		us := make([]creative.URL, len(j.paid))
		for i, u := range j.paid {
			us[i] = creative.URL(u)
		}
		res = us
	} else {
		res, err = j.b.call(ctx, c, j.p, opts...)
	}
	r.Attempts = int(status.attempt.Load())
	if err == nil {
		s := &saver{dir: dir, c: c, status: status, opts: opts}
		var out saved
		out, err = s.save(ctx, j.id, res)
		r.Files, r.URLs, r.Text = out.files, out.urls, out.text
	}
	r.Seconds = math.Round(time.Since(start).Seconds()*1000) / 1000
	r.OK = err == nil
	if err != nil {
		r.Error = strings.TrimPrefix(oneLine(err.Error()), "creative: ")
		if len(r.URLs) > 0 {
			r.Error = "the call succeeded but its files were not all downloaded (a rerun downloads them, without calling again): " + r.Error
		}
	}
	return r, true
}
