package cli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/time/rate"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/internal/ops"
)

// batchFlags are the flags of creative batch.
type batchFlags struct {
	out           string
	concurrency   int
	rate          float64
	shard         string
	dryRun        bool
	resendUnknown bool
	repayExpired  bool
	allowOutside  bool
	maxFile       int64 // --max-download-bytes
	startOver     bool
	maxCalls      int
	maxSpend      float64
	prices        []string // OP=PRICE
	pricesFile    string
	ledger        string // --ledger, or $CREATIVE_LEDGER
}

// resultsFile is the log of finished jobs under --out, for people: the
// ledger, --out/ledger.db, is the record the runs read.
const resultsFile = "results.jsonl"

func (a *app) batchCommand() *cobra.Command {
	f := &batchFlags{}
	cmd := &cobra.Command{
		Use:   "batch JOBS.jsonl",
		Short: "Run a file of jobs, one JSON object per line, paying for each once",
		Long: `The jobs file
  One job per line: a JSON object whose "op" names the operation
  ("image/text-to-image", "audio/enhance", ...) and whose other keys are
  its fields, named as in the API ("prompt", "numberOfResults", "styleId",
  ...). Id fields take ids or labels; file fields ("audio", "image") take
  a path inside the folder of JOBS.jsonl (--allow-outside lifts that). An
  optional "id" names the job and its files. creative batch fields lists
  every operation's fields, with an example line each:

    {"op":"image/text-to-image","id":"fox","prompt":"a fox in the snow","numberOfResults":2,"styleId":"anime"}
    {"op":"audio/text-to-speech","prompt":"Welcome!","voiceId":"female 1"}
    {"op":"image/re-imagine","image":"photos/cat.png"}

  Every line is checked before anything is sent: a bad line stops the run
  with exit status 2, naming the line, the field and why, and nothing is
  created under --out.

Paying once
  A job is its "id", or its content (operation, fields, the content of its
  files) and its occurrence among identical lines: inserting, deleting or
  reordering lines never pays for a job again; an edited line is a new
  job. Each job is claimed in the ledger, the SQLite database
  --out/ledger.db, before its request is sent, so runs sharing --out (at
  once or in turn, on this machine) pay for each job once, and its answer
  is recorded there before anything is downloaded. A folder on a network
  file system is refused: workers on several machines share a PostgreSQL
  ledger, --ledger postgres://... (or $CREATIVE_LEDGER), and a bucket URL
  --out holds the outputs only.

Outputs
  Files go under --out, named by the id (or the zero-padded line number)
  and the operation: 000003-text-to-image-<mark>.png,
  fox-text-to-image-1.png. --out/results.jsonl logs each job as it ends,
  with its state: done, failed (the service said no; nothing was paid),
  refused (not sent, or 429/503), unknown (may have been paid), answered
  (paid, files not all downloaded). --out/index.html shows every job to a
  person (thumbnails, players, texts, states), opens from disk, and is
  kept current while the run goes. sqlite3 reads the ledger: see creative
  batch status --help.

Running again
  A rerun sends failed, refused and never-started jobs; downloads again
  what was answered and not downloaded, and what is done but whose files
  are gone (free); never pays again for an answered job, nor sends a job
  whose outcome is unknown, unless asked: --resend-unknown sends again the
  unknown ones and those claimed by a worker that is gone (this may pay
  twice), not those in flight on a worker still running (on this machine
  the jobs of a killed worker are sent at once; with PostgreSQL once its
  session's lock is gone and its heartbeat is 120s old by the database's
  clock); --repay-expired pays again for
  answered jobs whose links have expired.

Rate, shards, Ctrl-C and SIGTERM
  --rate bounds the requests sent per second over all workers, retries and
  downloads included; a 429 or 503 answer with Retry-After pauses every
  worker for the time it asks. --shard I/N runs only the jobs whose line
  number modulo N is I. The first Ctrl-C or SIGTERM stops starting jobs at
  once (also those waiting for --rate or a pause) and gives the calls and
  downloads in flight --grace (default 10s) to finish and be recorded;
  then they are abandoned: a call cut off is recorded unknown (maybe paid:
  creative batch status lists it, --resend-unknown sends it again), an
  answered job whose download was cut off stays answered (a rerun fetches
  it without paying), and the summary says what was left. A second signal
  ends the process at once (exit status 131): its calls in flight stay
  claimed in the ledger, maybe paid. While the jobs file is read (from
  "-", standard input, say), a signal ends the process at once.

The jobs file
  Read through a gate: a FIFO, a device or a socket is refused at once
  (exit status 2), never waited on; "-" reads the jobs from standard
  input, once, as a stream.

Answers the check refuses
  An answer that is not what its operation promises (a format the check
  does not know, another kind, a file cut short) was paid for all the
  same: it is kept whole as <name>.rejected.<ext> beside the outputs, the
  job stays answered and its error names the file; batch status lists
  such files, and a rerun checks them again without paying.

Exit status
  0 when every job is done, 1 when some are not (see the summary), 2 on a
  usage error, a bad line, or an --out folder or ledger that cannot be
  used (nothing was sent), 130 when interrupted (after the grace), 131
  when a second signal ended it at once. A key the service refuses (401,
  403) stops the run at its first answer, with exit status 1: nothing
  more is sent.`,
		Example: `  creative batch jobs.jsonl --out results --concurrency 8 --rate 5
  creative batch jobs.jsonl --out results --dry-run
  creative batch status --out results
  creative batch fields image/text-to-image`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("want one JOBS.jsonl file, got %d arguments", len(args))
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return []cobra.Completion{"jsonl", "json"}, cobra.ShellCompDirectiveFilterFileExt
		},
		Annotations: map[string]string{takesBuckets: "jobs,out"},
		RunE: ran(func(cmd *cobra.Command, args []string) error {
			return a.runBatch(cmd.Context(), args[0], f)
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&f.out, "out", ".", "folder of the outputs, the ledger and results.jsonl")
	fs.StringVar(&f.ledger, "ledger", "", "the ledger: a postgres:// URL shared by workers on several machines, or a local folder for ledger.db (default: --out, or $"+envLedger+")")
	fs.IntVar(&f.concurrency, "concurrency", 4, "jobs run at once")
	fs.Float64Var(&f.rate, "rate", 0, "most requests sent per second over all jobs, retries and downloads included (0: no limit)")
	fs.StringVar(&f.shard, "shard", "", "run only the jobs whose line number modulo N is I, given as I/N")
	fs.BoolVar(&f.dryRun, "dry-run", false, "check every line, and print per operation the calls a run would make and the jobs it would download or leave; send nothing, write nothing")
	fs.BoolVar(&f.resendUnknown, "resend-unknown", false, "send again the jobs whose outcome is unknown, and those claimed by a worker that is gone, not those in flight on a running worker (they may have been paid: this may pay twice)")
	fs.BoolVar(&f.repayExpired, "repay-expired", false, "pay again for answered jobs whose links expired before they were downloaded")
	fs.BoolVar(&f.allowOutside, "allow-outside", false, "let file fields name files outside the jobs file's folder")
	fs.Int64Var(&f.maxFile, "max-download-bytes", 4<<30, "most bytes of each file an answer links to: a run writes at most this per link, --max-links links per job")
	fs.BoolVar(&f.startOver, "start-over", false, "when --out holds files of earlier runs and no ledger (ledger.db missing or empty), move those files into a folder earlier-<time>/ there and begin a new ledger, paying for every job again")
	fs.IntVar(&f.maxCalls, "max-calls", 0, "most calls that may be paid sent by every run and worker on this ledger together (0: no cap)")
	fs.Float64Var(&f.maxSpend, "max-spend", 0, "most those calls may cost, priced by --price or --prices (0: no cap)")
	fs.StringArrayVar(&f.prices, "price", nil, "the price of one call of an operation, as OP=PRICE (repeatable; *=PRICE prices the others), for --max-spend")
	fs.StringVar(&f.pricesFile, "prices", "", "a file of prices, one OP=PRICE a line (# starts a comment), for --max-spend")
	_ = cmd.MarkFlagDirname("out")
	cmd.AddCommand(a.batchStatusCommand(), a.batchFieldsCommand())
	// Usage and flags first, the rest after them.
	cmd.SetHelpTemplate(proseAfterUsage)
	return cmd
}

// proseAfterUsage is the help of a command whose Long is long: its Short,
// then its usage, examples and flags, then the Long.
const proseAfterUsage = `{{.Short}}

{{.UsageString}}
{{.Long | trimTrailingWhitespaces}}
`

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

// checkFlags finds the usage errors of the flags.
func (f *batchFlags) check() (shardI, shardN int, err error) {
	if f.concurrency < 1 {
		return 0, 0, usagef("--concurrency must be 1 or more, got %d", f.concurrency)
	}
	if !(f.rate >= 0) || math.IsInf(f.rate, 1) {
		return 0, 0, usagef("--rate must be 0 (no limit) or a positive number, got %v", f.rate)
	}
	if f.maxCalls < 0 || !(f.maxSpend >= 0) || math.IsInf(f.maxSpend, 1) {
		return 0, 0, usagef("--max-calls and --max-spend must be 0 (no cap) or above")
	}
	return parseShard(f.shard)
}

// budget reads --max-calls, --max-spend and the prices.
func (f *batchFlags) budget() (batch.Budget, error) {
	b := batch.Budget{MaxCalls: f.maxCalls, MaxSpend: f.maxSpend}
	type priced struct{ line, where string }
	var lines []priced
	for _, l := range f.prices {
		lines = append(lines, priced{l, "--price " + strings.TrimSpace(l)})
	}
	if f.pricesFile != "" {
		data, err := readInput(f.pricesFile, 1<<20)
		if err != nil {
			return b, usagef("--prices: %v", err)
		}
		n := 0
		for line := range strings.Lines(string(data)) {
			n++
			if line, _, _ = strings.Cut(line, "#"); strings.TrimSpace(line) != "" {
				lines = append(lines, priced{line, fmt.Sprintf("%s:%d", f.pricesFile, n)})
			}
		}
	}
	given := map[string]string{} // where each operation was priced
	for _, l := range lines {
		op, price, ok := strings.Cut(l.line, "=")
		p, err := strconv.ParseFloat(strings.TrimSpace(price), 64)
		if !ok || err != nil {
			return b, usagef("a price must be OP=PRICE (OP may be * for the operations not priced), such as image/text-to-image=0.04, got %q", strings.TrimSpace(l.line))
		}
		op = strings.TrimSpace(op)
		if first, twice := given[op]; twice {
			return b, usagef("%s is priced twice, by %s and by %s: give one price", op, first, l.where)
		}
		given[op] = l.where
		if b.Prices == nil {
			b.Prices = map[string]float64{}
		}
		b.Prices[op] = p
	}
	if len(b.Prices) > 0 && b.MaxSpend == 0 {
		return b, usagef("prices are for --max-spend, which is not given")
	}
	if b.MaxSpend > 0 && len(b.Prices) == 0 {
		return b, usagef("--max-spend needs the price of each operation the jobs call: --price OP=PRICE or --prices FILE")
	}
	return b, nil
}

func (a *app) runBatch(ctx context.Context, path string, f *batchFlags) error {
	ignoreSIGPIPE(a)
	shardI, shardN, err := f.check()
	if err != nil {
		return err
	}
	opts := []creative.Option{creative.WithHTTPClient(batchHTTPClient(f.concurrency))}
	if f.rate > 0 {
		opts = append(opts, creative.WithRateLimiter(rate.NewLimiter(rate.Limit(f.rate), 1)))
	}
	var c *creative.Client
	closeClient := func() {}
	if !f.dryRun {
		// A missing key or base URL is a usage error before anything is
		// created.
		if c, closeClient, err = a.newClient(opts...); err != nil {
			return err
		}
	}
	defer closeClient()
	budget, err := f.budget()
	if err != nil {
		return err
	}
	o := batch.Options{Concurrency: f.concurrency, Base: filepath.Dir(path), AllowOutside: f.allowOutside,
		ResendUnknown: f.resendUnknown, RepayLost: f.repayExpired, Shard: shardI, Shards: shardN, MaxDownloadBytes: f.maxFile, Budget: budget}
	jobs, doneJobs, err := a.openJobs(path)
	if err != nil {
		return err
	}
	defer doneJobs()
	if isURL(path) {
		// The jobs file and the files its lines name, from a bucket or
		// through a file:// URL.
		fsys, name, closeJobs, err := a.buckets.openJobs(ctx, path)
		if err != nil {
			return usagef("%v", err)
		}
		defer closeJobs.Close()
		o.FS, jobs = fsys, batch.JSONL(func() (io.ReadCloser, error) { return fsys.Open(name) })
	}
	f.ledger = cmp.Or(f.ledger, a.getenv(envLedger))
	checker, err := batch.New(c, nil, nil, o)
	if err != nil {
		return usagef("%v", err)
	}
	checked, err := checker.Check(ctx, jobs)
	if err != nil {
		return a.checkFailed(path, err)
	}
	if f.dryRun {
		return a.dryRunReport(ctx, checked, f, o)
	}
	if err := checkEarlier(a.con, f.out, f.ledger, f.startOver); err != nil {
		return err
	}
	p, err := a.buckets.openPlace(ctx, f.out, f.ledger)
	if err != nil {
		return err
	}
	defer p.Close()
	return a.runChecked(ctx, c, p, checked, f, o)
}

// checkFailed reports the bad lines of a jobs file.
func (a *app) checkFailed(path string, err error) error {
	var ce *batch.CheckError
	if !errors.As(err, &ce) {
		return usagef("batch: %v", strings.TrimPrefix(err.Error(), "batch: "))
	}
	for _, le := range ce.Lines {
		where := fmt.Sprintf("%s:%d: ", path, le.Line)
		if le.Column > 0 {
			where += fmt.Sprintf("column %d: ", le.Column)
		}
		if le.Field != "" {
			where += le.Field + ": "
		}
		fmt.Fprintln(a.con, "creative: "+where+oneLine(le.Err.Error()))
	}
	if more := ce.Count - len(ce.Lines); more > 0 {
		fmt.Fprintf(a.con, "creative: ... and %d more\n", more)
	}
	return usagef("batch: %s in %s; nothing was sent", plural(ce.Count, "bad line"), path)
}

// plural says "1 bad line" or "2 bad lines".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// dryRunReport prints, per operation, the calls a run would make, then
// what it would download or leave. It creates nothing.
func (a *app) dryRunReport(ctx context.Context, checked *batch.Checked, f *batchFlags, o batch.Options) error {
	if err := checkEarlier(io.Discard, f.out, f.ledger, false); err != nil && !f.startOver {
		return err
	}
	var ledger batch.Ledger
	if hasLedger(f.out, f.ledger) {
		p, err := a.buckets.openPlace(ctx, f.out, f.ledger)
		if err != nil {
			return err
		}
		defer p.Close()
		ledger = p.ledger
	}
	r, err := batch.New(nil, ledger, nil, o)
	if err != nil {
		return err
	}
	plan, err := r.Plan(ctx, checked)
	if err != nil {
		return err
	}
	calls := 0
	for _, op := range ops.All {
		if n := plan.Calls[op.Name]; n > 0 {
			fmt.Fprintf(a.stdout, "%-26s %d\n", op.Name, n)
			calls += n
		}
	}
	shard := ""
	if f.shard != "" {
		shard = " in shard " + f.shard
	}
	fmt.Fprintf(a.stdout, "%s would be made%s (%s checked", plural(calls, "call"), shard, plural(checked.Jobs(), "job"))
	s := plan.Summary
	for _, part := range []struct {
		n    int
		text string
	}{
		{s.DoneBefore, "done already"},
		{plan.Downloads, "to download again, without paying"},
		{s.Unknown + s.Claimed, "unknown, left alone (--resend-unknown sends them)"},
		{s.Lost, "answered with expired links, left alone (--repay-expired pays again)"},
	} {
		if part.n > 0 {
			fmt.Fprintf(a.stdout, ", %d %s", part.n, part.text)
		}
	}
	fmt.Fprintln(a.stdout, "); nothing was sent")
	return nil
}

// batchHTTPClient is the client a batch's calls go through: its pool
// keeps an idle connection for each worker, where the SDK's own keeps 128
// a host.
func batchHTTPClient(concurrency int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = max(256, 2*concurrency)
	t.MaxIdleConnsPerHost = max(128, 2*concurrency)
	return &http.Client{Transport: t}
}

// runChecked runs the checked jobs, logging each as it ends, and prints
// the summary.
func (a *app) runChecked(ctx context.Context, c *creative.Client, p *place, checked *batch.Checked, f *batchFlags, o batch.Options) error {
	log, err := openLog(ctx, p, f.out)
	if err != nil {
		return err
	}
	defer log.close()
	var ended atomic.Int64
	d := a.startDisplay()
	bar := d.counter(int64(checked.InShard()), func() string {
		return fmt.Sprintf("batch %d/%d", ended.Load(), checked.InShard())
	})
	w := &batchWatch{}
	o.OnEvent = func(e batch.Event) {
		if e.Type == batch.JobStarted {
			return
		}
		if e.Type == batch.JobEnded {
			log.write(&e.Record)
			w.ended(&e.Record)
		}
		ended.Add(1)
		if bar != nil {
			bar.Increment()
		}
	}
	o.IndexEvery = 5 * time.Second
	if a.g.timeout > 0 {
		// Downloads too are bounded by --timeout, as a single command's.
		o.CallOptions = append(o.CallOptions, creative.WithTimeout(a.g.timeout))
	}
	r, err := batch.New(c, p.ledger, p.out, o)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.sending.Store(true)
	stopWatching := a.watchBatchSignals(r, cancel, w)
	start := time.Now()
	sum, err := r.Run(ctx, checked)
	stopWatching()
	d.stop()
	fmt.Fprintf(a.con, "creative: batch: %s in %.1fs; results in %s\n", printable(summaryText(sum)), time.Since(start).Seconds(), printable(log.path))
	if spent := r.Spent(); spent != nil {
		fmt.Fprintf(a.con, "creative: %v: no more jobs were claimed (batch status shows the budget)\n", spent)
	}
	if n := w.rejected.Load(); n > 0 {
		fmt.Fprintf(a.con, "creative: batch: %s not what their operation promises, kept as *%s.* files beside the outputs (batch status lists them; a rerun checks them again without paying)\n", plural(int(n), "answer"), batch.Rejected)
	}
	if w.abandoned.Load() {
		fmt.Fprintln(a.con, "creative: batch: "+w.leftText())
	}
	ictx := context.WithoutCancel(ctx)
	if w.interrupted.Load() {
		// A process told to stop ends before it is killed: the page of a
		// large ledger waits for the next run.
		var cancel, stop context.CancelFunc
		ictx, cancel = context.WithTimeout(ictx, indexAfterSignal)
		defer cancel()
		ictx, stop = a.stopBy(ictx)
		defer stop()
	}
	if ierr := r.WriteIndex(ictx); ierr != nil {
		fmt.Fprintf(a.con, "creative: batch: %s could not be written: %v\n", batch.IndexFile, ierr)
	}
	if log.err != nil {
		fmt.Fprintf(a.con, "creative: batch: %s could not be written (%v); the ledger holds every result\n", log.path, log.err)
	}
	return batchExit(a, sum, err, w.interrupted.Load())
}

// indexAfterSignal bounds the writing of the results page once a signal
// came.
const indexAfterSignal = 5 * time.Second

// A batchWatch follows a run's signals and its jobs' ends: what a signal
// left, and the answers kept as rejected.
type batchWatch struct {
	interrupted atomic.Bool // a signal came
	abandoned   atomic.Bool // the grace ended, or a second signal came: what was in flight was cut off
	calls       atomic.Int64
	downloads   atomic.Int64
	rejected    atomic.Int64
}

// ended counts a job that ended: after what was in flight was cut off, a
// call left maybe paid, or an answer left waiting for its download.
func (w *batchWatch) ended(rec *batch.Record) {
	if strings.Contains(rec.Error, batch.Rejected) {
		w.rejected.Add(1)
	}
	if !w.abandoned.Load() {
		return
	}
	switch {
	case rec.State == batch.Unknown:
		w.calls.Add(1)
	case rec.State == batch.Answered && !rec.Lost:
		w.downloads.Add(1)
	}
}

// leftText says what the end of the grace left, and how to go on.
func (w *batchWatch) leftText() string {
	var parts []string
	if n := int(w.calls.Load()); n > 0 {
		parts = append(parts, plural(n, "call")+" in flight "+was(n)+" abandoned: maybe paid, see creative batch status; a rerun with --resend-unknown sends "+them(n)+" again")
	}
	if n := int(w.downloads.Load()); n > 0 {
		parts = append(parts, plural(n, "download")+" left: a rerun fetches "+them(n)+" without paying")
	}
	if len(parts) == 0 {
		return "nothing in flight was left when the grace ended"
	}
	return strings.Join(parts, "; ")
}

// was is "was" or "were", for n things.
func was(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// watchBatchSignals stops starting jobs on the first Ctrl-C or SIGTERM,
// and gives the calls and downloads in flight --grace to end; then, or at
// a second signal, it cancels them: the runner records each call cut off
// as maybe paid (unknown) and each answered job as waiting for its
// download.
func (a *app) watchBatchSignals(r *batch.Runner, cancel context.CancelFunc, w *batchWatch) func() {
	done, watching := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watching)
		select {
		case <-a.signals:
		case <-done:
			return
		}
		w.interrupted.Store(true)
		inFlight := r.Stop()
		a.atLineStart()
		what := plural(inFlight, "call") + " in flight"
		if inFlight == 0 {
			what, inFlight = "the downloads of answered jobs", 2 // a rerun's, say: they are not counted as calls
		}
		fmt.Fprintf(a.con, "creative: batch: stopping: letting %s finish for up to %v (--grace), then abandoning %s (Ctrl-C again to cancel them now)\n",
			what, a.g.grace, them(inFlight))
		timer := time.NewTimer(a.g.grace)
		defer timer.Stop()
		select {
		case <-a.signals:
			a.atLineStart()
			fmt.Fprintln(a.con, "creative: batch: cancelling the calls in flight")
		case <-timer.C:
			fmt.Fprintln(a.con, "creative: batch: the grace ended: abandoning the calls and downloads in flight")
		case <-done:
			return
		}
		w.abandoned.Store(true)
		cancel()
	}()
	return func() { close(done); <-watching }
}

// them is "it" or "them", for n things.
func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// batchExit turns the end of a run into the command's error.
func batchExit(a *app, sum batch.Summary, err error, interrupted bool) error {
	var le *batch.LedgerError
	if errors.As(err, &le) {
		for _, rec := range le.Unrecorded {
			fmt.Fprintf(a.con, "creative: batch: paid and not recorded: line %d %s%s: %s\n", rec.Line, rec.Op, requestID(rec), paidAnswer(rec))
		}
		for _, rec := range le.MaybePaid {
			fmt.Fprintf(a.con, "creative: batch: sent, maybe paid, and not recorded as such: line %d %s%s\n", rec.Line, rec.Op, requestID(rec))
		}
		return err
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if interrupted {
		return errInterrupted
	}
	// A job another worker is running is that worker's to report.
	if notDone := sum.Jobs - sum.Done - sum.DoneBefore - sum.Elsewhere; notDone > 0 {
		return fmt.Errorf("batch: %d of %s not done", notDone, plural(sum.Jobs, "job"))
	}
	return nil
}

// requestID names the service's request id of rec, when it has one.
func requestID(rec batch.Record) string {
	if rec.RequestID == "" {
		return ""
	}
	return " (request id " + rec.RequestID + ")"
}

// paidAnswer says where a paid answer is.
func paidAnswer(rec batch.Record) string {
	var parts []string
	if len(rec.URLs) > 0 {
		parts = append(parts, "links "+strings.Join(rec.URLs, " "))
	}
	if len(rec.Files) > 0 {
		parts = append(parts, "files "+strings.Join(rec.Files, " "))
	}
	if rec.Text != "" {
		parts = append(parts, "text "+strconv.Quote(rec.Text))
	}
	if len(parts) == 0 {
		return "its answer could not be kept"
	}
	return strings.Join(parts, "; ")
}

// summaryText words a run's summary: what each kind of job is, and what a
// rerun does with it.
func summaryText(s batch.Summary) string {
	parts := []string{strconv.Itoa(s.Done+s.DoneBefore) + " done"}
	if s.DoneBefore > 0 {
		parts[0] += fmt.Sprintf(" (%d before this run)", s.DoneBefore)
	}
	add := func(n int, text string) {
		if n > 0 {
			parts = append(parts, strconv.Itoa(n)+" "+text)
		}
	}
	add(s.Failed, "failed (the service said no: see results.jsonl; a rerun sends them again, and an unchanged line fails the same way unless its cause changed)")
	add(s.Refused, "refused or not sent (a rerun sends them again)")
	add(s.Unknown, "unknown (may have been paid: --resend-unknown to send again)")
	add(s.Claimed, "claimed and not ended by a worker that is gone (may have been paid; batch status lists them, --resend-unknown sends them again)")
	add(s.Waiting, "waiting for a download (a rerun downloads them without paying again)")
	add(s.Lost, "answered whose links expired (--repay-expired to pay for them again)")
	add(s.Missing, "done whose files are gone and cannot be fetched again")
	add(s.Elsewhere, "in flight on another worker that is still running")
	add(s.NotStarted, "not started")
	if s.Stopped != "" {
		parts = append(parts, "stopped: "+s.Stopped)
	}
	return strings.Join(parts, ", ")
}

// batchStatusCommand reports the ledger of an --out folder.
func (a *app) batchStatusCommand() *cobra.Command {
	var out, ledger string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status --out DIR",
		Short: "Count the jobs of a batch's ledger by state and list the unknown ones",
		Long: `Read the ledger of --out (or --ledger) and print how many jobs are in each state, for
every run and worker that shared the folder, and what was taken of the
budget (--max-calls, --max-spend); then list the jobs whose outcome is unknown (sent, with no answer recorded,
by a worker that is gone: they may have been paid for, and are sent
again only with creative batch --resend-unknown). Jobs in flight on a
worker still running are counted, not listed.

--json prints one JSON object for scripts: "jobs", "states" (jobs by
state), "inFlight", "lost", "budget" (when a run was given a cap:
"calls" and "spend", each with its "limit", what was "spent" and what is
"left"), and "review", every job to review before --resend-unknown with
its job key, line, id, op, state, worker, time, requestId and error.

In a folder the ledger is the SQLite database DIR/ledger.db, which the
sqlite3 shell reads too:

  sqlite3 DIR/ledger.db "SELECT state, count(*) FROM jobs GROUP BY state"

Its tables, and more queries, are in docs/fleet.md.`,
		Args:        noArgs,
		Annotations: map[string]string{takesBuckets: "out"},
		RunE: ran(func(cmd *cobra.Command, _ []string) error {
			ledger = cmp.Or(ledger, a.getenv(envLedger))
			if !hasLedger(out, ledger) {
				return usagef("batch status: %s holds no ledger", out)
			}
			p, err := a.buckets.openPlace(cmd.Context(), out, ledger)
			if err != nil {
				return err
			}
			defer p.Close()
			if asJSON {
				return a.printStatusJSON(cmd.Context(), p.ledger)
			}
			return a.printStatus(cmd.Context(), p)
		}),
	}
	cmd.Flags().StringVar(&out, "out", ".", "folder (or bucket URL) of the batch")
	cmd.Flags().StringVar(&ledger, "ledger", "", "the ledger, when not ledger.db in --out: a postgres:// URL or a local folder (default $"+envLedger+")")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the counts and every job to review as one JSON object")
	_ = cmd.MarkFlagDirname("out")
	return cmd
}

func (a *app) printStatus(ctx context.Context, p *place) error {
	store := p.ledger
	var unknown []batch.Record
	const maxListed = 100
	n := 0
	st, err := batch.ReadStatus(ctx, store, func(r batch.Record) {
		n++
		if len(unknown) < maxListed {
			unknown = append(unknown, r)
		}
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s in the ledger\n", plural(st.Jobs, "job"))
	for _, s := range []batch.State{batch.Done, batch.Answered, batch.Failed, batch.Refused, batch.Unknown, batch.Claimed} {
		if c := st.States[s]; c > 0 {
			fmt.Fprintf(a.stdout, "%-9s %d\n", s, c)
		}
	}
	if st.InFlight > 0 {
		fmt.Fprintf(a.stdout, "(%d claimed in flight on a worker still running)\n", st.InFlight)
	}
	if st.Lost > 0 {
		fmt.Fprintf(a.stdout, "(%d answered whose links expired: --repay-expired pays for them again)\n", st.Lost)
	}
	b, err := batch.ReadBudget(ctx, store)
	if err != nil {
		return err
	}
	if b.CallsLimit > 0 {
		fmt.Fprintf(a.stdout, "budget: %d of %d calls taken, %d left\n", b.Calls, b.CallsLimit, max(0, b.CallsLimit-b.Calls))
	}
	if b.SpendLimit > 0 {
		fmt.Fprintf(a.stdout, "budget: %s of %s spent, %s left\n", amount(b.Spent), amount(b.SpendLimit), amount(max(0, b.SpendLimit-b.Spent)))
	}
	if n > 0 {
		fmt.Fprintf(a.stdout, "\n%s may have been paid (unknown, or claimed and never ended):\n", plural(n, "job"))
		for _, r := range unknown {
			name := "line " + strconv.Itoa(r.Line)
			if r.ID != "" {
				name = "id " + r.ID
			}
			fmt.Fprintf(a.stdout, "%s\t%s\t%s\t%s\t%s\t%s\n", printable(r.Job), printable(name), printable(r.Op), printable(string(r.State)), printable(r.Worker), r.Time.Format(time.RFC3339))
		}
		if n > len(unknown) {
			fmt.Fprintf(a.stdout, "... and %d more\n", n-len(unknown))
		}
	}
	if st.States[batch.Answered] > 0 {
		return a.printRejected(ctx, p.out)
	}
	return nil
}

// printRejected lists the answers kept as rejected (see batch.Rejected):
// paid for, not what their operation promises.
func (a *app) printRejected(ctx context.Context, store batch.Store) error {
	const maxListed = 100
	n := 0
	for key, err := range store.List(ctx, "") {
		if err != nil {
			return err
		}
		if !strings.Contains(key, batch.Rejected) {
			continue
		}
		if n == 0 {
			fmt.Fprintln(a.stdout, "\nanswers kept as rejected (paid for, not what their operation promises; a rerun checks them again without paying):")
		}
		if n++; n <= maxListed {
			fmt.Fprintln(a.stdout, printable(key))
		}
	}
	if n > maxListed {
		fmt.Fprintf(a.stdout, "... and %d more\n", n-maxListed)
	}
	return nil
}

// reviewJob is a job to review before --resend-unknown, as batch status
// --json gives it.
type reviewJob struct {
	Job       string    `json:"job"`
	Line      int       `json:"line"`
	ID        string    `json:"id,omitempty"`
	Op        string    `json:"op"`
	State     string    `json:"state"`
	Worker    string    `json:"worker,omitempty"`
	Time      time.Time `json:"time"`
	RequestID string    `json:"requestId,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// printStatusJSON prints the status as one JSON object, the jobs to review
// written as they are read: however many there are, none is held.
func (a *app) printStatusJSON(ctx context.Context, store batch.Ledger) error {
	w := bufio.NewWriter(a.stdout)
	_, _ = io.WriteString(w, `{"review":[`)
	n := 0
	st, err := batch.ReadStatus(ctx, store, func(r batch.Record) {
		if n > 0 {
			_ = w.WriteByte(',')
		}
		n++
		b, _ := json.Marshal(reviewJob{r.Job, r.Line, r.ID, r.Op, string(r.State), r.Worker, r.Time, r.RequestID, r.Error})
		_, _ = w.Write(printableJSON(b))
	})
	if err != nil {
		return err
	}
	b, err := batch.ReadBudget(ctx, store)
	if err != nil {
		return err
	}
	rest, _ := json.Marshal(struct {
		Jobs     int                 `json:"jobs"`
		States   map[batch.State]int `json:"states"`
		InFlight int                 `json:"inFlight"`
		Lost     int                 `json:"lost"`
		Budget   *budgetJSON         `json:"budget,omitempty"`
	}{st.Jobs, st.States, st.InFlight, st.Lost, budgetOf(b)})
	_, _ = fmt.Fprintf(w, "],%s\n", printableJSON(rest[1:]))
	return w.Flush()
}

// budgetJSON is what batch status --json says of the budget.
type budgetJSON struct {
	Calls *spentLeft `json:"calls,omitempty"`
	Spend *spentLeft `json:"spend,omitempty"`
}

// spentLeft is one cap of the budget: what was taken of it, and what is left.
type spentLeft struct {
	Limit float64 `json:"limit"`
	Spent float64 `json:"spent"`
	Left  float64 `json:"left"`
}

// budgetOf is the budget as batch status --json gives it: nil when no run
// had one.
func budgetOf(b batch.BudgetStatus) *budgetJSON {
	var out budgetJSON
	if b.CallsLimit > 0 {
		out.Calls = &spentLeft{float64(b.CallsLimit), float64(b.Calls), float64(max(0, b.CallsLimit-b.Calls))}
	}
	if b.SpendLimit > 0 {
		out.Spend = &spentLeft{b.SpendLimit, roundMicro(b.Spent), roundMicro(max(0, b.SpendLimit-b.Spent))}
	}
	if out.Calls == nil && out.Spend == nil {
		return nil
	}
	return &out
}

// amount shows an amount of money as its prices were given, to the
// millionth the budget counts in.
func amount(v float64) string { return strconv.FormatFloat(roundMicro(v), 'f', -1, 64) }

func roundMicro(v float64) float64 { return math.Round(v*1e6) / 1e6 }
