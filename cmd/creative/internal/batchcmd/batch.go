package batchcmd

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
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
	startOver     bool
	maxCalls      int
	maxSpend      float64
	prices        []string // OP=PRICE
	pricesFile    string
	ledger        string // --ledger, or $CREATIVE_LEDGER
}

// ResultsFile is the log of finished jobs under --out, for people: the
// ledger, --out/ledger.db, is the record the runs read.
const ResultsFile = "results.jsonl"

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
  are gone when its answer linked to them (free); never pays again for an
  answered or done job, nor sends a job whose outcome is unknown, unless
  asked: --resend-unknown sends again the unknown ones and those claimed
  by a worker that is gone (this may pay twice), not those in flight on a
  worker still running (on this machine the jobs of a killed worker are
  sent at once; with PostgreSQL once its session's lock is gone and its
  heartbeat is 30s old, or its heartbeat 120s old, by the database's
  clock); --repay-expired pays again for the jobs whose answer can no
  longer be fetched: answered ones whose links expired (or were a fake's
  that is gone), and done ones whose files are gone when their bytes came
  in the answer (an image as base64, speech), which is kept nowhere else.
  With --fake, where paying costs nothing, a rerun does that unasked.

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
		Annotations: map[string]string{cmdutil.TakesBuckets: "jobs,out"},
		RunE: cmdutil.Ran(func(cmd *cobra.Command, args []string) error {
			return spoken(a.runBatch(cmd.Context(), args[0], f))
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
	fs.BoolVar(&f.repayExpired, "repay-expired", false, "pay again for the jobs whose answer can no longer be fetched: links that expired (or a fake's that is gone), files gone whose bytes came in the answer (with --fake, always: it is free)")
	fs.BoolVar(&f.allowOutside, "allow-outside", false, "let file fields name files outside the jobs file's folder")
	fs.BoolVar(&f.startOver, "start-over", false, "when --out holds files of earlier runs and no ledger (ledger.db missing or empty), move those files into a folder earlier-<time>/ there and begin a new ledger, paying for every job again")
	fs.IntVar(&f.maxCalls, "max-calls", 0, "most calls that may be paid, counted over every run and worker on this ledger, earlier runs included: a rerun with the same cap sends nothing once it is spent (0: no cap)")
	fs.Float64Var(&f.maxSpend, "max-spend", 0, "most those calls may cost, priced by --price or --prices, counted over every run on this ledger as --max-calls is (0: no cap)")
	fs.StringArrayVar(&f.prices, "price", nil, "the price of one call of an operation, as OP=PRICE (repeatable; *=PRICE prices the others), for --max-spend")
	fs.StringVar(&f.pricesFile, "prices", "", "a file of prices, one OP=PRICE a line (# starts a comment), for --max-spend")
	_ = cmd.MarkFlagDirname("out")
	cmd.AddCommand(a.batchStatusCommand())
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
		return 0, 0, cmdutil.Usagef("--shard must be I/N with 0 <= I < N, such as 0/4, got %q", s)
	}
	return i, n, nil
}

// checkFlags finds the usage errors of the flags.
func (f *batchFlags) check() (shardI, shardN int, err error) {
	if f.concurrency < 1 {
		return 0, 0, cmdutil.Usagef("--concurrency must be 1 or more, got %d", f.concurrency)
	}
	if !(f.rate >= 0) || math.IsInf(f.rate, 1) {
		return 0, 0, cmdutil.Usagef("--rate must be 0 (no limit) or a positive number, got %v", f.rate)
	}
	if f.maxCalls < 0 || !(f.maxSpend >= 0) || math.IsInf(f.maxSpend, 1) {
		return 0, 0, cmdutil.Usagef("--max-calls and --max-spend must be 0 (no cap) or above")
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
		data, err := cmdutil.ReadInput(f.pricesFile, 1<<20)
		if err != nil {
			return b, cmdutil.Usagef("--prices: %v", err)
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
			return b, cmdutil.Usagef("a price must be OP=PRICE (OP may be * for the operations not priced), such as image/text-to-image=0.04, got %q", strings.TrimSpace(l.line))
		}
		op = strings.TrimSpace(op)
		if first, twice := given[op]; twice {
			return b, cmdutil.Usagef("%s is priced twice, by %s and by %s: give one price", op, first, l.where)
		}
		given[op] = l.where
		if b.Prices == nil {
			b.Prices = map[string]float64{}
		}
		b.Prices[op] = p
	}
	if len(b.Prices) > 0 && b.MaxSpend == 0 {
		return b, cmdutil.Usagef("prices are for --max-spend, which is not given")
	}
	if b.MaxSpend > 0 && len(b.Prices) == 0 {
		return b, cmdutil.Usagef("--max-spend needs the price of each operation the jobs call: --price OP=PRICE or --prices FILE")
	}
	return b, nil
}
