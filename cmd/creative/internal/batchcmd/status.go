package batchcmd

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
)

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

Its tables, and more queries, are in docs/fleet.md. A bucket --out names
the ledger of its jobs in which-ledger.json: give that ledger with
--ledger (without it, status says which it is).`,
		Args:        cmdutil.NoArgs,
		Annotations: map[string]string{cmdutil.TakesBuckets: "out"},
		RunE: cmdutil.Ran(func(cmd *cobra.Command, _ []string) error {
			a.load()
			ledger = cmp.Or(ledger, a.getenv(envLedger))
			if !hasLedger(out, ledger) {
				if err := namedLedger(cmd.Context(), out); err != nil {
					return spoken(err)
				}
				return cmdutil.Usagef("batch status: %s holds no ledger", out)
			}
			p, err := a.buckets.openPlace(cmd.Context(), out, ledger, false)
			if err != nil {
				return spoken(err)
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
		fmt.Fprintf(a.stdout, "(%d answered whose links no longer work, expired or served by a fake service that is gone: --repay-expired pays for them again, and a rerun with --fake pays the fake, which is free)\n", st.Lost)
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
			fmt.Fprintf(a.stdout, "%s\t%s\t%s\t%s\t%s\t%s\n", cmdutil.Printable(r.Job), cmdutil.Printable(name), cmdutil.Printable(r.Op), cmdutil.Printable(string(r.State)), cmdutil.Printable(r.Worker), r.Time.Format(time.RFC3339))
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
			fmt.Fprintln(a.stdout, cmdutil.Printable(key))
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
		b, _ := json.Marshal(reviewJob{r.Job, r.Line, r.ID, r.Op, string(r.State), r.Worker, r.Time, r.RequestID, inFlags(r.Error)})
		_, _ = w.Write(cmdutil.PrintableJSON(b))
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
	_, _ = fmt.Fprintf(w, "],%s\n", cmdutil.PrintableJSON(rest[1:]))
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
