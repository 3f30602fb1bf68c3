package batch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/ops"
)

// A Budget caps what every run on a ledger may spend, all workers of a
// fleet together: each attempt of a call that may be paid takes its share
// of the budget in the ledger before it is sent, and once the budget is
// spent the run stops claiming jobs (Runner.Spent says why). A retry takes
// a share again unless the service refused the attempt before it (408,
// 429, 503: nothing was done), so an attempt whose outcome was unknown is
// counted as paid.
//
// Shares are taken by exclusive creates of keys under ledger/budget/: the
// share of a call is the range of the budget from one key's position to
// the next, and of two workers creating one key exactly one gets it, so
// neither races nor kills can overspend; a kill can only leave a share
// taken and not used.
type Budget struct {
	// MaxCalls, when above 0, caps the calls that may be paid sent by the
	// runs of the ledger, with the budget's share taken: a run started
	// after MaxCalls were sent sends nothing.
	MaxCalls int
	// MaxSpend, when above 0, caps their cost, each call priced by
	// Prices.
	MaxSpend float64
	// Prices is the price of one call of each operation, by its name
	// ("image/text-to-image"), in the unit of MaxSpend; with MaxSpend,
	// Runner.Check refuses a job of an operation without a price, before
	// anything is sent.
	Prices map[string]float64
}

// ErrBudgetSpent is matched by the error of a call not sent because the
// budget was spent, and by Runner.Spent after such a run.
var ErrBudgetSpent = errors.New("batch: the budget is spent")

// budgetPrefix holds the shares taken of the ledger's budget: one folder
// of calls, one of money (in millionths of the unit of the prices).
const budgetPrefix = ledgerPrefix + "budget/"

// microUnits is the number of units a price is counted in.
const microUnits = 1e6

// maxAmount bounds a price and MaxSpend, so that their sums in microUnits
// stay far from the limits of an int64.
const maxAmount = 1e12

// A spender takes the shares of a Runner's calls from the budget.
type spender struct {
	store        Store
	calls, spend *counter // nil when not capped
	prices       map[string]int64
	mu           sync.Mutex
	why          error // why the run stopped: the budget is spent, or a price missing
}

// A counter is one cap of the budget: the position of its next share.
type counter struct {
	what   string // "calls" or "spend"
	limit  int64
	next   int64
	loaded bool
	// known is the last share of the chain this run knows of (its own, or
	// one it read), and unhinted how many shares the run took since its
	// hint was last written (see hint).
	known    hint
	unhinted int
}

// newSpender checks b and returns what takes its shares, or nil when it
// caps nothing.
func newSpender(store Store, b Budget) (*spender, error) {
	if b.MaxCalls < 0 || !(b.MaxSpend >= 0) || b.MaxSpend > maxAmount {
		return nil, fmt.Errorf("batch: MaxCalls and MaxSpend must be 0 (no cap) or above, MaxSpend at most %g, got %d and %v", maxAmount, b.MaxCalls, b.MaxSpend)
	}
	prices, err := pricesOf(b)
	if err != nil {
		return nil, err
	}
	s := &spender{store: store, prices: prices}
	if b.MaxCalls > 0 {
		s.calls = &counter{what: "calls", limit: int64(b.MaxCalls)}
	}
	if b.MaxSpend > 0 {
		if len(b.Prices) == 0 {
			return nil, errors.New("batch: MaxSpend needs the price of each operation (Prices)")
		}
		s.spend = &counter{what: "spend", limit: int64(math.Round(b.MaxSpend * microUnits))}
	}
	if s.calls == nil && s.spend == nil {
		return nil, nil
	}
	return s, nil
}

// pricesOf checks b's prices and counts them in microUnits.
func pricesOf(b Budget) (map[string]int64, error) {
	prices := map[string]int64{}
	for op, p := range b.Prices {
		if _, ok := ops.Lookup(op); !ok {
			return nil, fmt.Errorf("batch: a price for %q, which is no operation", op)
		}
		if !(p >= 0) || p > maxAmount || b.MaxSpend > 0 && p > b.MaxSpend {
			return nil, fmt.Errorf("batch: the price of %s must be 0 or above and at most MaxSpend, got %v", op, p)
		}
		prices[op] = int64(math.Round(p * microUnits))
		if p > 0 {
			prices[op] = max(1, prices[op]) // a price is never free for being small
		}
	}
	return prices, nil
}

// priced refuses, before anything is sent, the job on line of an
// operation that has no price under a cap on spending.
func (s *spender) priced(op string, line int) error {
	if s == nil || s.spend == nil {
		return nil
	}
	if _, ok := s.prices[op]; !ok {
		return &LineError{Line: line, Field: "op", Err: fmt.Errorf("no price was given for %s, and the run has a cap on spending", op)}
	}
	return nil
}

// gate is the middleware of every attempt of one call of op: the outermost,
// so that an attempt the budget refuses has sent nothing. stop stops the
// run once the budget is spent.
func (s *spender) gate(op string, stop func() int) creative.Middleware {
	reuse := false // the last attempt was refused by the service: its share is unused
	return func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
		if s == nil {
			return next(req)
		}
		if !reuse {
			if err := s.take(req.Context(), op); err != nil {
				if req.Body != nil {
					_ = req.Body.Close()
				}
				if errors.Is(err, ErrBudgetSpent) {
					stop() // no job starts any more
				}
				return nil, err
			}
		}
		resp, err := next(req)
		reuse = err == nil && (resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests ||
			resp.StatusCode == http.StatusServiceUnavailable)
		return resp, err
	}
}

// take takes the share of one call of op, or says why it cannot. The
// hints due are written once the lock is let go.
func (s *spender) take(ctx context.Context, op string) error {
	s.mu.Lock()
	err := s.takeLocked(ctx, op)
	due := s.dueHints(hintEvery)
	s.mu.Unlock()
	s.writeHints(ctx, due)
	return err
}

func (s *spender) takeLocked(ctx context.Context, op string) error {
	if s.why != nil {
		return s.why
	}
	if s.calls != nil {
		if err := s.takeOf(ctx, s.calls, 1, op); err != nil {
			return err
		}
	}
	if s.spend != nil {
		price, ok := s.prices[op]
		if !ok {
			s.why = fmt.Errorf("%w: no price was given for %s, so no call of it is sent under a cap on spending", ErrBudgetSpent, op)
			return s.why
		}
		if price > 0 {
			return s.takeOf(ctx, s.spend, price, op)
		}
	}
	return nil
}

// finish writes the hints of the shares the run took since the last: a
// run's end is where the next run, or batch status, starts from.
func (s *spender) finish(ctx context.Context) {
	if s == nil {
		return
	}
	s.mu.Lock()
	due := s.dueHints(1)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hintTimeout)
	defer cancel()
	s.writeHints(ctx, due)
}

// hintTimeout bounds the write of the hints at a run's end.
const hintTimeout = 10 * time.Second

// said says how much of c is taken.
func (c *counter) said(taken int64) string {
	if c.what == "calls" {
		return fmt.Sprintf("%d of %d calls taken", taken, c.limit)
	}
	return fmt.Sprintf("%s of %s spent", money(taken), money(c.limit))
}

// money shows an amount counted in microUnits.
func money(n int64) string {
	return strconv.FormatFloat(float64(n)/microUnits, 'f', -1, 64)
}

// Spent returns, after a run that stopped because of its Budget, why: an
// error matching ErrBudgetSpent. It returns nil otherwise.
func (r *Runner) Spent() error {
	if r.spend == nil {
		return nil
	}
	r.spend.mu.Lock()
	defer r.spend.mu.Unlock()
	return r.spend.why
}
