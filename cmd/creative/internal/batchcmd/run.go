package batchcmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/page"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
	"github.com/creativegen/creative-go/internal/ops"
)

// runBatch runs the jobs file at path: its check, then its jobs, then
// the summary and the exit status.
func (a *app) runBatch(ctx context.Context, path string, f *batchFlags) error {
	a.load()
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
		ResendUnknown: f.resendUnknown, RepayLost: f.repayExpired || a.g.fake, Shard: shardI, Shards: shardN, MaxDownloadBytes: a.g.maxDownload, Budget: budget}
	jobs, doneJobs, err := cmdutil.OpenJobs(a.stdin, path)
	if err != nil {
		return err
	}
	defer doneJobs()
	if isURL(path) {
		// The jobs file and the files its lines name, from a bucket or
		// through a file:// URL.
		fsys, name, closeJobs, err := a.buckets.openJobs(ctx, path)
		if err != nil {
			return cmdutil.Usagef("%v", err)
		}
		defer closeJobs.Close()
		o.FS, jobs = fsys, batch.JSONL(func() (io.ReadCloser, error) { return fsys.Open(name) })
	}
	f.ledger = cmp.Or(f.ledger, a.getenv(envLedger))
	checker, err := batch.New(c, nil, nil, o)
	if err != nil {
		return cmdutil.Usagef("%v", err)
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
	p, err := a.buckets.openPlace(ctx, f.out, f.ledger, true)
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
		return cmdutil.Usagef("batch: %v", strings.TrimPrefix(err.Error(), "batch: "))
	}
	for _, le := range ce.Lines {
		where := fmt.Sprintf("%s:%d: ", path, le.Line)
		if le.Column > 0 {
			where += fmt.Sprintf("column %d: ", le.Column)
		}
		if le.Field != "" {
			where += le.Field + ": "
		}
		fmt.Fprintln(a.con, "creative: "+where+cmdutil.OneLine(inFlags(le.Err.Error())))
	}
	if more := ce.Count - len(ce.Lines); more > 0 {
		fmt.Fprintf(a.con, "creative: ... and %d more\n", more)
	}
	return cmdutil.Usagef("batch: %s in %s; nothing was sent", plural(ce.Count, "bad line"), path)
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
		p, err := a.buckets.openPlace(ctx, f.out, f.ledger, false)
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
		if a.g.fake && e.Record.State == batch.Answered && e.Record.Lost && fakesLinks(e.Record.URLs) {
			w.fakeLost.Add(1)
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
	fmt.Fprintf(a.con, "creative: batch: %s in %.1fs; results in %s\n", cmdutil.Printable(summaryText(sum, int(w.fakeLost.Load()))), time.Since(start).Seconds(), cmdutil.Printable(log.path))
	if spent := r.Spent(); spent != nil {
		fmt.Fprintln(a.con, "creative: batch: "+capSpent(context.WithoutCancel(ctx), p.ledger, f, spent)+"; no more jobs were claimed")
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
	fakeLost    atomic.Int64 // on the fake: answered, links served by a fake that is gone
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
	}
	failed := err != nil && (le != nil || !errors.Is(err, context.Canceled))
	if interrupted {
		// The status is the interruption's, whatever the run met during
		// the grace (a ledger that failed), which is said first.
		if failed {
			fmt.Fprintln(a.con, cmdutil.Printable("creative: "+strings.TrimPrefix(cmdutil.OneLine(err.Error()), "creative: ")))
		}
		return cmdutil.ErrInterrupted
	}
	if failed {
		return err
	}
	// A job another worker is running is that worker's to report.
	// A job done whose files are gone is done in the ledger, and its
	// files are not where they were promised.
	notDone := sum.Jobs - sum.Done - sum.DoneBefore - sum.Missing - sum.Elsewhere
	switch {
	case notDone > 0 && sum.Missing > 0:
		return fmt.Errorf("batch: %d of %s not done, and %d done whose files are gone", notDone, plural(sum.Jobs, "job"), sum.Missing)
	case notDone > 0:
		return fmt.Errorf("batch: %d of %s not done", notDone, plural(sum.Jobs, "job"))
	case sum.Missing > 0:
		return fmt.Errorf("batch: %s done whose files are gone", plural(sum.Missing, "job"))
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
// rerun does with it. Its done are the ledger's, as batch status counts
// them: those whose files are gone too. fakeLost of the lost were
// answered by a fake service that is gone.
func summaryText(s batch.Summary, fakeLost int) string {
	parts := []string{strconv.Itoa(s.Done+s.DoneBefore+s.Missing) + " done"}
	if before := s.DoneBefore + s.Missing; before > 0 {
		parts[0] += fmt.Sprintf(" (%d before this run)", before)
	}
	add := func(n int, text string) {
		if n > 0 {
			parts = append(parts, strconv.Itoa(n)+" "+text)
		}
	}
	add(s.Missing, "of them whose files are gone: their bytes came in the answer, which is kept nowhere else (--repay-expired pays for them again)")
	add(s.Failed, "failed (the service said no: see results.jsonl; a rerun sends them again, and an unchanged line fails the same way unless its cause changed)")
	add(s.Refused, "refused or not sent (a rerun sends them again)")
	add(s.Unknown, "unknown (may have been paid: --resend-unknown to send again)")
	add(s.Claimed, "claimed and not ended by a worker that is gone (may have been paid; batch status lists them, --resend-unknown sends them again)")
	add(s.Waiting, "waiting for a download (a rerun downloads them without paying again)")
	fakeLost = min(fakeLost, s.Lost)
	add(s.Lost-fakeLost, "answered whose links expired (--repay-expired to pay for them again)")
	add(fakeLost, "answered by a fake service that is gone: their links were that fake's and died with it (a rerun with --fake pays the fake again, which is free)")
	add(s.Elsewhere, "in flight on another worker that is still running")
	add(s.NotStarted, "not started")
	if s.Stopped != "" {
		parts = append(parts, "stopped: "+inFlags(s.Stopped))
	}
	return strings.Join(parts, ", ")
}

// fakesLinks reports whether urls are links a fake service on this
// machine served: they die with it.
func fakesLinks(urls []string) bool {
	for _, u := range urls {
		if !page.OnThisMachine(u) {
			return false
		}
	}
	return len(urls) > 0
}

// capSpent says which cap of the budget stopped a run, and that it counts
// every run on the ledger: a rerun with the same cap sends nothing more.
func capSpent(ctx context.Context, l batch.Ledger, f *batchFlags, spent error) string {
	b, err := batch.ReadBudget(ctx, l)
	switch {
	case err != nil:
		return inFlags(spent.Error())
	case f.maxCalls > 0 && b.Calls >= int64(f.maxCalls):
		return fmt.Sprintf("the cap of %s is spent (it counts every run on this ledger: raise --max-calls or use a new ledger)", plural(f.maxCalls, "call"))
	case f.maxSpend > 0:
		return fmt.Sprintf("the cap of %s to spend is spent (%s taken; it counts every run on this ledger: raise --max-spend or use a new ledger)", amount(f.maxSpend), amount(b.Spent))
	}
	return inFlags(spent.Error())
}
