package faults

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"os/exec"
	"strings"

	"github.com/creativegen/creative-go/batch"
)

// The budget of a schedule: whether its workers run under a cap and
// which, drawn from its seed, and the cap's invariants, checked against
// the calls the service's front counted and the shares in the ledger.
//
// What the cap promises (batch/budget.go, Ledger.Claim): what every run
// took of the cap is one row of the ledger for the whole fleet; a call
// takes its share in the transaction of its claim, only if what was taken
// stays within its own worker's limit, and a retry of an attempt that may
// be paid takes one more. So a worker given a larger cap goes on past the
// others' (that is how a spent budget is raised), while the workers given
// the smaller cap stop once the fleet's total reaches theirs: what the
// workers of each limit sent that may be paid is within that limit.

// cliEnv, set, runs the test binary as the creative command.
const cliEnv = "FAULTS_CLI"

// prices are the prices under a cap on spending, neither a multiple of
// the other.
var prices = map[string]float64{image: 0.04, speech: 0.015}

// A fleetCap is the budget drawn for a schedule's workers: one for all of
// them (zero: no cap), except the worker who (-1: none), given a larger
// one of the same kind.
type fleetCap struct {
	fleet, larger batch.Budget
	who           int
}

// of is the budget of the schedule's worker w; a taker gets its worker's.
func (c fleetCap) of(w int) batch.Budget {
	if w == c.who {
		return c.larger
	}
	return c.fleet
}

func capped(b batch.Budget) bool { return b.MaxCalls > 0 || b.MaxSpend > 0 }

// limitOf is b's limit, in the unit its shares count: calls, or
// millionths of the unit of the prices.
func limitOf(b batch.Budget) int64 {
	if b.MaxCalls > 0 {
		return int64(b.MaxCalls)
	}
	return micro(b.MaxSpend)
}

// sizeOf is the size of the share of a call of op under b.
func sizeOf(b batch.Budget, op string) int64 {
	if b.MaxCalls > 0 {
		return 1
	}
	return micro(b.Prices[op])
}

func micro(v float64) int64 { return int64(math.Round(v * 1e6)) }

// drawCap draws the budget of the workers: none, --max-calls below the
// number of jobs, or --max-spend below what all jobs cost (and at least
// the dearest price, as a price above the cap is refused); and, a third
// of the time, one worker with a larger cap of the same kind.
func (s *schedule) drawCap(nWorkers int) fleetCap {
	c := fleetCap{who: -1}
	n := len(s.ops)
	switch s.rng.IntN(3) {
	case 0:
		return c
	case 1:
		c.fleet = batch.Budget{MaxCalls: 1 + s.rng.IntN(n-1)}
		c.larger = batch.Budget{MaxCalls: c.fleet.MaxCalls + 1 + s.rng.IntN(n)}
	case 2:
		var total, top int64
		for _, op := range s.ops {
			total += micro(prices[op])
		}
		for _, p := range prices {
			top = max(top, micro(p))
		}
		x := top + s.rng.Int64N(total-top)
		c.fleet = batch.Budget{MaxSpend: float64(x) / 1e6, Prices: prices}
		c.larger = batch.Budget{MaxSpend: float64(x+1+s.rng.Int64N(total)) / 1e6, Prices: prices}
	}
	if s.rng.IntN(3) == 0 {
		c.who = s.rng.IntN(nWorkers)
	}
	return c
}

// refused reports whether the service answered status to say it did
// nothing (a retry reuses the attempt's share).
func refused(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// A budgetJSON is the "budget" of batch status --json.
type budgetJSON struct {
	Calls, Spend *spentLeft
}

type spentLeft struct{ Limit, Spent, Left float64 }

// A statusBudget is what batch status --json said of the budget; read is
// false when it said nothing (the failure is one of the schedule's).
type statusBudget struct {
	read   bool
	budget *budgetJSON
}

// budgetStatus runs creative batch status --json on the ledger (the test
// binary, run as the command) and returns its "budget".
func (s *schedule) budgetStatus() statusBudget {
	cmd := exec.Command(os.Args[0], "batch", "status", "--json", "--out", s.out, "--ledger", s.ledger)
	cmd.Env = append(append(os.Environ(), s.env...), cliEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		s.fail("creative batch status --json: %v: %s", err, stderr.String())
		return statusBudget{}
	}
	var st struct{ Budget *budgetJSON }
	if err := json.Unmarshal(out, &st); err != nil {
		s.fail("creative batch status --json: %v: %s", err, out)
		return statusBudget{}
	}
	return statusBudget{read: true, budget: st.Budget}
}

// checkBudget checks the cap's invariants: what the front counted as
// maybe paid from the capped workers of each limit (every attempt but
// those answered 408, 429 or 503) is within that limit; what the ledger's
// budget took covers it all and is within the largest limit; and batch
// status's budget is the ledger's. The rerun and the resend run, which
// have no cap, take nothing, so the ledger read now is the one batch
// status read when the capped workers had ended.
func (s *schedule) checkBudget(ctx context.Context, l batch.Ledger, calls []call) {
	fleet := s.cap.fleet
	what := "calls"
	if fleet.MaxSpend > 0 {
		what = "spend"
	}
	st, err := l.Status(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	taken, lim := st.Budget.Calls, st.Budget.CallsLimit
	other := st.Budget.Spent > 0
	if what == "spend" {
		taken, lim, other = micro(st.Budget.Spent), micro(st.Budget.SpendLimit), st.Budget.Calls > 0 && st.Budget.CallsLimit > 0
	}
	if !capped(fleet) {
		s.ty.add(s.ty.budget, "no cap", 1)
		if taken > 0 || s.status.read && s.status.budget != nil {
			s.fail("no worker had a cap, and the ledger took %d, batch status shows %+v", taken, s.status.budget)
		}
		return
	}
	limits := map[int64]bool{limitOf(fleet): true}
	if s.cap.who >= 0 {
		limits[limitOf(s.cap.larger)] = true
		s.ty.add(s.ty.budget, "a larger cap", 1)
	}
	s.ty.add(s.ty.budget, what, 1)
	var paid, top int64
	byLimit := map[int64]int64{}
	for _, c := range calls {
		p := s.proc(c.worker)
		if p == nil || !capped(p.cfg.Budget) || refused(c.status) {
			continue
		}
		size := sizeOf(fleet, s.ops[c.prompt])
		paid += size
		byLimit[limitOf(p.cfg.Budget)] += size
	}
	for l := range limits {
		top = max(top, l)
	}
	for l, sum := range byLimit {
		if sum > l {
			s.fail("the workers with the limit %d sent %d of %s that may be paid, past it", l, sum, what)
		}
	}
	switch {
	case paid > taken:
		s.fail("%d of %s may be paid, counted at the service; the ledger's budget took %d", paid, what, taken)
	case taken > top:
		s.fail("the ledger's budget took %d of %s, past the largest limit %d", taken, what, top)
	case taken > 0 && !limits[lim]:
		s.fail("the ledger's last share of %s was taken under the limit %d, which no worker had (%v)", what, lim, limits)
	case other:
		s.fail("the ledger took of a cap no worker had: %+v", st.Budget)
	}
	if len(limits) > 1 && taken > limitOf(fleet) {
		s.ty.add(s.ty.budget, "the larger cap went past the fleet's", 1)
	}
	s.ty.add(s.ty.budget, what+" maybe paid", int(paid))
	s.ty.add(s.ty.budget, what+" taken", int(taken))
	for _, p := range s.procs {
		if p.rep != nil && p.rep.Spent != "" {
			s.ty.add(s.ty.budget, "workers told the budget is spent", 1)
		}
	}
	s.checkStatus(what, taken, lim, paid)
}

// checkStatus checks batch status's budget against the ledger's.
func (s *schedule) checkStatus(what string, taken, lim, paid int64) {
	if !s.status.read {
		return
	}
	var sl, other *spentLeft
	if b := s.status.budget; b != nil {
		sl, other = b.Calls, b.Spend
		if what == "spend" {
			sl, other = other, sl
		}
		if other != nil {
			s.fail("batch status shows a cap no worker had: %+v", *b)
		}
	}
	if taken == 0 {
		if sl != nil {
			s.fail("nothing was taken, and batch status shows %+v", *sl)
		}
		return
	}
	if sl == nil {
		s.fail("batch status shows no budget; the ledger took %d of %s", taken, what)
		return
	}
	unit := func(v float64) int64 { return micro(v) }
	if what == "calls" {
		unit = func(v float64) int64 { return int64(math.Round(v)) }
	}
	spent, limit, left := unit(sl.Spent), unit(sl.Limit), unit(sl.Left)
	switch {
	case spent != taken || limit != lim || left != max(0, limit-spent):
		s.fail("batch status shows %+v of %s; the ledger took %d, the last share under the limit %d", *sl, what, taken, lim)
	case spent < paid:
		s.fail("batch status shows %v of %s taken; %d may be paid, counted at the service", sl.Spent, what, paid)
	}
}
