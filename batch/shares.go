package batch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
)

// The shares of a cap of the Budget are a chain of objects,
// ledger/budget/<cap>/<position>.json: the first at position 0, each
// next one where the one before it ends (its position plus its size), each
// made by an exclusive create. A taker that finds its position taken reads
// that share and moves past it, so the chain has no gap and no overlap
// whoever takes at once, and its end is what was taken of the cap.

// A share is the object that holds one share of the budget.
type share struct {
	Size  int64     `json:"size"`
	Limit int64     `json:"limit"`
	Op    string    `json:"op"`
	Time  time.Time `json:"time"`
}

func shareKey(what string, pos int64) string {
	return fmt.Sprintf("%s%s/%020d.json", budgetPrefix, what, pos)
}

// beyond is a+b, or the largest int64 where that is beyond it: a position
// past every budget.
func beyond(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// takeOf takes size from c at its next position, moving past the shares
// other workers took first.
func (s *spender) takeOf(ctx context.Context, c *counter, size int64, op string) error {
	if !c.loaded {
		last, walked, err := lastShare(ctx, s.store, c.what)
		if err != nil {
			return fmt.Errorf("batch: reading the budget: %w", err)
		}
		c.next, c.known, c.loaded = last.end, last.hint(), true
		if walked > hintEvery {
			c.unhinted = hintEvery // a long walk: the next run starts here
		}
	}
	for {
		if c.next < 0 || size > c.limit-c.next {
			s.why = fmt.Errorf("%w: %s", ErrBudgetSpent, c.said(c.next))
			return s.why
		}
		b, _ := json.Marshal(share{Size: size, Limit: c.limit, Op: op, Time: time.Now().UTC()})
		key := shareKey(c.what, c.next)
		err := s.store.Create(ctx, key, b)
		if err == nil {
			c.known = hint{Start: c.next, End: c.next + size, Limit: c.limit}
			c.next += size
			c.unhinted++
			return nil
		}
		if !errors.Is(err, ErrExist) {
			return fmt.Errorf("batch: taking a share of the budget: %w", err)
		}
		sh, err := readShare(ctx, s.store, key)
		if err != nil {
			return fmt.Errorf("batch: reading the budget: %w", err)
		}
		c.known = hint{Start: c.next, End: beyond(c.next, sh.Size), Limit: sh.Limit}
		c.next = c.known.End
	}
}

// hintEvery is how many shares a run takes of a cap between two writes of
// its hint.
const hintEvery = 16

// A hint names a share of a cap's chain that was taken, as a worker last
// saw the chain: where the share starts and ends, and the limit it gave.
// lastShare checks that share and walks the chain from its end, a read a
// share, rather than list every share of the cap. A run writes its cap's
// hint after every hintEvery shares it takes, after a long walk, and at
// its end. A hint left behind by a later write of another worker costs
// reads, never a wrong answer; one that names no share of the chain (the
// shares were removed) is not used.
type hint struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	Limit int64 `json:"limit"`
}

func hintKey(what string) string { return budgetPrefix + what + ".hint.json" }

// A dueHint is a hint to write, for the cap what.
type dueHint struct {
	what string
	h    hint
}

// dueHints returns the hints of the caps whose run took at least every
// shares since their last hint, and takes them for written.
func (s *spender) dueHints(every int) []dueHint {
	var due []dueHint
	for _, c := range []*counter{s.calls, s.spend} {
		if c != nil && c.unhinted >= every && c.known.End > 0 {
			due = append(due, dueHint{c.what, c.known})
			c.unhinted = 0
		}
	}
	return due
}

// writeHints writes hints. A hint is only a place to start from: a failed
// write is not an error of the run.
func (s *spender) writeHints(ctx context.Context, due []dueHint) {
	for _, d := range due {
		b, _ := json.Marshal(d.h)
		_ = s.store.Put(ctx, hintKey(d.what), b)
	}
}

// readShare reads the share at key; one that does not parse (it cannot
// be: shares are made whole) counts as the whole budget, so that nothing
// more is taken after it.
func readShare(ctx context.Context, s Store, key string) (share, error) {
	b, err := s.Get(ctx, key)
	if err != nil {
		return share{}, err
	}
	var sh share
	if json.Unmarshal(b, &sh) != nil || sh.Size < 1 {
		sh.Size = math.MaxInt64 / 2
	}
	return sh, nil
}

// A lastShareOf is the last share of a cap, where it starts, and where the
// next one starts; all zero when no share was taken.
type lastShareOf struct {
	share
	pos, end int64
}

// hint is the hint that names the share.
func (l lastShareOf) hint() hint { return hint{Start: l.pos, End: l.end, Limit: l.Limit} }

// maxWalk is how many shares lastShare reads from a hint before it lists
// the cap's shares instead.
const maxWalk = 64

// lastShare finds the last share of a cap: from its hint, checked against
// the share it names, and a read of each share taken since (walked says
// how many), else by a listing of every share of the cap (walked is then
// maxWalk and more).
func lastShare(ctx context.Context, s Store, what string) (last lastShareOf, walked int, err error) {
	b, err := s.Get(ctx, hintKey(what))
	if errors.Is(err, ErrNotExist) {
		return listLastShare(ctx, s, what)
	}
	if err != nil {
		return lastShareOf{}, 0, err
	}
	var h hint
	if json.Unmarshal(b, &h) != nil || h.Start < 0 || h.End <= h.Start || h.End > h.Limit {
		return listLastShare(ctx, s, what)
	}
	sh, err := readShare(ctx, s, shareKey(what, h.Start))
	switch {
	case errors.Is(err, ErrNotExist) || err == nil && sh.Size != h.End-h.Start:
		return listLastShare(ctx, s, what) // the hint names no share of the chain
	case err != nil:
		return lastShareOf{}, 0, err
	}
	last = lastShareOf{sh, h.Start, h.End}
	for walked = range maxWalk {
		sh, err := readShare(ctx, s, shareKey(what, last.end))
		if errors.Is(err, ErrNotExist) {
			return last, walked, nil
		}
		if err != nil {
			return lastShareOf{}, 0, err
		}
		last = lastShareOf{sh, last.end, beyond(last.end, sh.Size)}
	}
	return listLastShare(ctx, s, what)
}

// listLastShare lists the shares of a cap and reads the last one.
func listLastShare(ctx context.Context, s Store, what string) (lastShareOf, int, error) {
	last, n := "", 0
	for key, err := range s.List(ctx, budgetPrefix+what+"/") {
		if err != nil {
			return lastShareOf{}, 0, err
		}
		last = key
		n++
	}
	if last == "" {
		return lastShareOf{}, 0, nil
	}
	pos, err := strconv.ParseInt(strings.TrimSuffix(last[strings.LastIndex(last, "/")+1:], ".json"), 10, 64)
	if err != nil || pos < 0 {
		return lastShareOf{}, 0, fmt.Errorf("batch: %s is no share of the budget", last)
	}
	sh, err := readShare(ctx, s, last)
	if err != nil {
		return lastShareOf{}, 0, err
	}
	return lastShareOf{sh, pos, beyond(pos, sh.Size)}, maxWalk + n, nil
}

// A BudgetStatus says what the runs of a ledger took of their Budget.
type BudgetStatus struct {
	// Calls is how many calls took a share; CallsLimit is MaxCalls as the
	// last of them gave it (0: no call was capped).
	Calls, CallsLimit int64
	// Spent is what the calls cost, by their prices; SpendLimit is
	// MaxSpend as the last of them gave it (0: no spending was capped).
	Spent, SpendLimit float64
}

// ReadBudget reads what the runs of the ledger in store took of their
// budget: for each cap, its hint and the shares taken since (a read each),
// or a listing of its shares.
func ReadBudget(ctx context.Context, store Store) (BudgetStatus, error) {
	calls, _, err := lastShare(ctx, store, "calls")
	if err != nil {
		return BudgetStatus{}, err
	}
	spend, _, err := lastShare(ctx, store, "spend")
	if err != nil {
		return BudgetStatus{}, err
	}
	return BudgetStatus{Calls: calls.end, CallsLimit: calls.Limit,
		Spent: float64(spend.end) / microUnits, SpendLimit: float64(spend.Limit) / microUnits}, nil
}
