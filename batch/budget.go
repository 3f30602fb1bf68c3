package batch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync/atomic"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/ops"
)

// A Budget caps what every run on a ledger may spend, all workers of a
// fleet together: each call takes its share of the budget in the ledger,
// in the transaction of its claim (see Ledger.Claim), and once the budget
// is spent the run stops claiming jobs (Runner.Spent says why). A retry
// takes a share again unless the service refused the attempt before it
// (408, 429, 503: nothing was done), so an attempt whose outcome was
// unknown is counted as paid. Amounts are counted in millionths of the
// prices' unit, a price rounded up (0.0000014 counts as 0.000002) and a
// cap down: the cap is never passed.
type Budget struct {
	// MaxCalls, when above 0, caps the calls that may be paid sent by the
	// runs of the ledger.
	MaxCalls int
	// MaxSpend, when above 0, caps their cost, each call priced by
	// Prices.
	MaxSpend float64
	// Prices is the price of one call of each operation, by its name
	// ("image/text-to-image"), in the unit of MaxSpend; "*" prices the
	// operations not named. With MaxSpend, Runner.Check refuses a job of
	// an operation without a price, before anything is sent.
	Prices map[string]float64
}

// DefaultPrice is the key of Budget.Prices that prices the operations not
// named.
const DefaultPrice = "*"

// ErrBudgetSpent is matched by the error of a call not sent because the
// budget was spent, and by Runner.Spent after such a run.
var ErrBudgetSpent = errors.New("batch: the budget is spent")

// microUnits is the number of units a price is counted in.
const microUnits = 1e6

// maxAmount bounds a price and MaxSpend, so that their sums in microUnits
// stay far from the limits of an int64.
const maxAmount = 1e12

// Micros counts an amount in millionths, rounded up: a price is never
// counted as less than it is. An amount within a rounding error of a
// whole millionth is that millionth (0.05 is 50000, not 50001).
func Micros(amount float64) int64 {
	m := amount * microUnits
	if r := math.Round(m); math.Abs(m-r) <= 1e-9*max(1, math.Abs(m)) {
		return int64(r)
	}
	return int64(math.Ceil(m))
}

// A spender says what the Runner's calls take of the budget.
type spender struct {
	maxCalls, maxSpend int64 // 0: not capped
	prices             map[string]int64
	why                atomic.Pointer[error] // why the run stopped: the budget is spent
}

// newSpender checks b and returns what takes its shares, or nil when it
// caps nothing.
func newSpender(b Budget) (*spender, error) {
	if b.MaxCalls < 0 || !(b.MaxSpend >= 0) || b.MaxSpend > maxAmount {
		return nil, fmt.Errorf("batch: MaxCalls and MaxSpend must be 0 (no cap) or above, MaxSpend at most %g, got %d and %v", maxAmount, b.MaxCalls, b.MaxSpend)
	}
	s := &spender{maxCalls: int64(b.MaxCalls), prices: map[string]int64{}}
	for op, p := range b.Prices {
		if _, ok := ops.Lookup(op); !ok && op != DefaultPrice {
			return nil, fmt.Errorf("batch: a price for %q, which is no operation", op)
		}
		if !(p >= 0) || p > maxAmount || b.MaxSpend > 0 && p > b.MaxSpend {
			return nil, fmt.Errorf("batch: the price of %s must be 0 or above and at most MaxSpend, got %v", op, p)
		}
		s.prices[op] = Micros(p)
	}
	if b.MaxSpend > 0 {
		if len(b.Prices) == 0 {
			return nil, errors.New("batch: MaxSpend needs the price of each operation (Prices)")
		}
		s.maxSpend = int64(math.Floor(b.MaxSpend*microUnits + 1e-6))
	}
	if s.maxCalls == 0 && s.maxSpend == 0 {
		return nil, nil
	}
	return s, nil
}

// price is the price of one call of op, and whether it has one.
func (s *spender) price(op string) (int64, bool) {
	if p, ok := s.prices[op]; ok {
		return p, true
	}
	p, ok := s.prices[DefaultPrice]
	return p, ok
}

// priced refuses, before anything is sent, the job on line of an
// operation that has no price under a cap on spending.
func (s *spender) priced(op string, line int) error {
	if s == nil || s.maxSpend == 0 {
		return nil
	}
	if _, ok := s.price(op); !ok {
		return &LineError{Line: line, Field: "op", Err: fmt.Errorf("no price was given for %s, and the run has a cap on spending", op)}
	}
	return nil
}

// share is what one call of op takes of the budget.
func (s *spender) share(op string) Share {
	if s == nil {
		return Share{}
	}
	p, _ := s.price(op)
	return Share{Calls: 1, MaxCalls: s.maxCalls, Spend: p, MaxSpend: s.maxSpend}
}

// spent stops the budget for why, an error matching ErrBudgetSpent.
func (s *spender) spent(why error) {
	if s != nil {
		s.why.CompareAndSwap(nil, &why)
	}
}

// gate is the middleware of every attempt of one call of op: the
// outermost, so that an attempt the budget refuses has sent nothing. The
// first attempt's share was taken with the claim; a later one takes
// another, unless the service refused the one before it.
func (s *spender) gate(ru *run, op string) creative.Middleware {
	take := false // the first attempt's share was taken with the claim
	return func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
		if s == nil {
			return next(req)
		}
		if take {
			if err := ru.ledger.Take(req.Context(), ru.token, s.share(op)); err != nil {
				if req.Body != nil {
					_ = req.Body.Close()
				}
				if errors.Is(err, ErrBudgetSpent) {
					s.spent(err)
					ru.st.closeRun() // no job starts any more
				}
				return nil, err
			}
		}
		resp, err := next(req)
		take = err != nil || !refusedStatus(resp.StatusCode)
		return resp, err
	}
}

// A BudgetStatus says what the runs of a ledger took of their budget.
type BudgetStatus struct {
	// Calls is how many calls took a share; CallsLimit is MaxCalls as the
	// last of them gave it (0: no call was capped).
	Calls, CallsLimit int64
	// Spent is what the calls cost, by their prices; SpendLimit is
	// MaxSpend as the last of them gave it (0: no spending was capped).
	Spent, SpendLimit float64
}

// ReadBudget reads what the runs of the ledger took of their budget.
func ReadBudget(ctx context.Context, l Ledger) (BudgetStatus, error) {
	st, err := l.Status(ctx)
	return st.Budget, err
}

// Spent returns, after a run that stopped because of its Budget, why: an
// error matching ErrBudgetSpent. It returns nil otherwise.
func (r *Runner) Spent() error {
	if r.spend == nil || r.spend.why.Load() == nil {
		return nil
	}
	return *r.spend.why.Load()
}
