package faults

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/creativegen/creative-go/batch"
)

// The budget of a schedule: whether its workers run under a cap and
// which, drawn from its seed, and the cap's invariants, checked against
// the calls the service's front counted and the shares in the ledger.
//
// What the cap promises (batch/budget.go, batch/shares.go): the shares of
// a cap are one chain in the ledger for the whole fleet, and each share
// records the limit of the worker that took it; a worker takes a share
// only if it ends within its own limit, and sends an attempt that may be
// paid only with a share of its own. So a worker given a larger cap goes
// on past the others' (that is how a spent budget is raised), while the
// workers given the smaller cap stop once the chain, whoever took it,
// reaches theirs: every share ends within the limit it records, and what
// the workers of each limit sent that may be paid is covered, attempt by
// attempt, by shares taken under that limit before the attempt reached
// the service.

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
	cmd := exec.Command(os.Args[0], "batch", "status", "--json", "--out", s.out)
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

// A shareOf is a share of the budget as the ledger holds it.
type shareOf struct {
	Size, Limit int64
	Op          string
	Time        time.Time
	pos         int64
}

// shares reads the chain of shares of the cap what, checking that it is
// one: each share starts where the one before ends, counts a call of its
// operation under b, and ends within the limit it records, which is one
// given to a worker.
func (s *schedule) shares(ctx context.Context, store batch.Store, what string, b batch.Budget, limits map[int64]bool) (chain []shareOf, end int64) {
	var keys []string
	for key, err := range store.List(ctx, "ledger/budget/") {
		if err != nil {
			s.t.Fatal(err)
		}
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if key == "ledger/budget/"+what+".hint.json" {
			continue
		}
		if !capped(b) || !strings.HasPrefix(key, "ledger/budget/"+what+"/") {
			s.fail("%s is in the ledger, and no worker had that cap", key)
			continue
		}
		pos, err := strconv.ParseInt(strings.TrimSuffix(path.Base(key), ".json"), 10, 64)
		if err != nil {
			s.fail("%s is no share", key)
			continue
		}
		data, err := store.Get(ctx, key)
		if err != nil {
			s.t.Fatal(err)
		}
		sh := shareOf{pos: pos}
		if err := json.Unmarshal(data, &sh); err != nil {
			s.fail("%s: %v: %s", key, err, data)
			continue
		}
		switch {
		case pos != end:
			s.fail("the shares are no chain: %s starts at %d, the one before it ends at %d", key, pos, end)
		case sh.Size != sizeOf(b, sh.Op):
			s.fail("%s counts %d for a call of %s, whose share is %d", key, sh.Size, sh.Op, sizeOf(b, sh.Op))
		case !limits[sh.Limit]:
			s.fail("%s was taken under the limit %d, which no worker had (%v)", key, sh.Limit, limits)
		case pos+sh.Size > sh.Limit:
			s.fail("%s ends at %d, past the limit %d it was taken under", key, pos+sh.Size, sh.Limit)
		}
		end = pos + sh.Size
		chain = append(chain, sh)
	}
	return chain, end
}

// checkBudget checks the cap's invariants: what the front counted as
// maybe paid from the capped workers (every attempt but those answered
// 408, 429 or 503) is covered by the shares taken, under each worker's
// limit, before it arrived; it is within the cap; and batch status's
// budget is the ledger's chain: taken at least what the front counted,
// and never above the limit. The rerun and the resend run, which have no
// cap, take no share, so the ledger read now is the one batch status read
// when the capped workers had ended.
func (s *schedule) checkBudget(ctx context.Context, store batch.Store, calls []call) {
	fleet := s.cap.fleet
	what := "calls"
	if fleet.MaxSpend > 0 {
		what = "spend"
	}
	limits := map[int64]bool{limitOf(fleet): true}
	if s.cap.who >= 0 && capped(fleet) {
		limits[limitOf(s.cap.larger)] = true
	}
	chain, taken := s.shares(ctx, store, what, fleet, limits)
	if !capped(fleet) {
		s.ty.add(s.ty.budget, "no cap", 1)
		if s.status.read && s.status.budget != nil {
			s.fail("no worker had a cap, and batch status shows a budget: %+v", *s.status.budget)
		}
		return
	}
	s.ty.add(s.ty.budget, what, 1)
	if len(limits) > 1 {
		s.ty.add(s.ty.budget, "a larger cap", 1)
	}

	// The attempts that may be paid, by the limit of their worker and
	// their operation, in the order they arrived.
	type class struct {
		limit int64
		op    string
	}
	arrived := map[class][]time.Time{}
	var paid int64
	byLimit := map[int64]int64{}
	for _, c := range calls {
		p := s.proc(c.worker)
		if p == nil || !capped(p.cfg.Budget) || refused(c.status) {
			continue
		}
		op, l := s.ops[c.prompt], limitOf(p.cfg.Budget)
		arrived[class{l, op}] = append(arrived[class{l, op}], c.at)
		paid += sizeOf(fleet, op)
		byLimit[l] += sizeOf(fleet, op)
	}
	for cl, ats := range arrived {
		var took []time.Time
		for _, sh := range chain {
			if sh.Limit == cl.limit && sh.Op == cl.op {
				took = append(took, sh.Time)
			}
		}
		slices.SortFunc(ats, time.Time.Compare)
		slices.SortFunc(took, time.Time.Compare)
		n := 0 // the shares taken by the i+1st arrival
		for i, at := range ats {
			for n < len(took) && !took[n].After(at) {
				n++
			}
			if n < i+1 {
				s.fail("%d calls of %s that may be paid, by the workers with the limit %d, reached the service by %v; %d shares of it were taken by then",
					i+1, cl.op, cl.limit, at.Format("15:04:05.000"), n)
				break
			}
		}
	}
	for l, sum := range byLimit {
		if sum > l {
			s.fail("the workers with the limit %d sent %d of %s that may be paid", l, sum, what)
		}
	}
	if len(limits) > 1 && taken > limitOf(fleet) {
		s.ty.add(s.ty.budget, "the larger cap went past the fleet's", 1)
	}
	if paid > taken {
		s.fail("%d of %s may be paid, counted at the service; the ledger's shares took %d", paid, what, taken)
	}
	s.ty.add(s.ty.budget, what+" maybe paid", int(paid))
	s.ty.add(s.ty.budget, what+" taken", int(taken))
	for _, p := range s.procs {
		if p.rep != nil && p.rep.Spent != "" {
			s.ty.add(s.ty.budget, "workers told the budget is spent", 1)
		}
	}
	s.checkStatus(what, chain, taken, paid)
}

// checkStatus checks batch status's budget against the ledger's chain of
// shares.
func (s *schedule) checkStatus(what string, chain []shareOf, taken, paid int64) {
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
	if len(chain) == 0 {
		if sl != nil {
			s.fail("no share was taken, and batch status shows %+v", *sl)
		}
		return
	}
	if sl == nil {
		s.fail("batch status shows no budget; the ledger holds %d shares of %s", len(chain), what)
		return
	}
	unit := func(v float64) int64 { return micro(v) }
	if what == "calls" {
		unit = func(v float64) int64 { return int64(math.Round(v)) }
	}
	spent, limit, left := unit(sl.Spent), unit(sl.Limit), unit(sl.Left)
	last := chain[len(chain)-1]
	switch {
	case spent != taken || limit != last.Limit || left != max(0, limit-spent):
		s.fail("batch status shows %+v of %s; the ledger's shares took %d, the last under the limit %d", *sl, what, taken, last.Limit)
	case spent < paid:
		s.fail("batch status shows %v of %s taken; %d may be paid, counted at the service", sl.Spent, what, paid)
	case spent > limit:
		s.fail("batch status shows %v of %s taken, above its limit %v", sl.Spent, what, sl.Limit)
	}
}
