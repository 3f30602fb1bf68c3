package batch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"

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
	taken  int   // shares this run took
	ownEnd int64 // the end of the last of them
}

// newSpender checks b and returns what takes its shares, or nil when it
// caps nothing.
func newSpender(store Store, b Budget) (*spender, error) {
	if b.MaxCalls < 0 || !(b.MaxSpend >= 0) || math.IsInf(b.MaxSpend, 1) {
		return nil, fmt.Errorf("batch: MaxCalls and MaxSpend must be 0 (no cap) or above, got %d and %v", b.MaxCalls, b.MaxSpend)
	}
	s := &spender{store: store, prices: map[string]int64{}}
	for op, p := range b.Prices {
		if _, ok := ops.Lookup(op); !ok {
			return nil, fmt.Errorf("batch: a price for %q, which is no operation", op)
		}
		if !(p >= 0) || math.IsInf(p, 1) {
			return nil, fmt.Errorf("batch: the price of %s must be 0 or above, got %v", op, p)
		}
		s.prices[op] = int64(math.Round(p * microUnits))
	}
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

// take takes the share of one call of op, or says why it cannot.
func (s *spender) take(ctx context.Context, op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
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

// takeOf takes size from c at its next position, moving past the shares
// other workers took first.
func (s *spender) takeOf(ctx context.Context, c *counter, size int64, op string) error {
	if !c.loaded {
		last, err := lastShare(ctx, s.store, c.what)
		if err != nil {
			return fmt.Errorf("batch: reading the budget: %w", err)
		}
		c.next, c.loaded = last.end, true
	}
	for {
		if c.next+size > c.limit {
			s.why = fmt.Errorf("%w: %s", ErrBudgetSpent, c.said(c.next))
			if c.taken%hintEvery != 0 {
				s.hint(ctx, c) // where a status of the spent budget starts
			}
			return s.why
		}
		b, _ := json.Marshal(share{Size: size, Limit: c.limit, Op: op, Time: time.Now().UTC()})
		key := shareKey(c.what, c.next)
		err := s.store.Create(ctx, key, b)
		if err == nil {
			c.next += size
			c.ownEnd = c.next
			if c.taken++; c.taken%hintEvery == 0 {
				s.hint(ctx, c)
			}
			return nil
		}
		if !errors.Is(err, ErrExist) {
			return fmt.Errorf("batch: taking a share of the budget: %w", err)
		}
		sh, err := readShare(ctx, s.store, key)
		if err != nil {
			return fmt.Errorf("batch: reading the budget: %w", err)
		}
		c.next += sh.Size
	}
}

// hintEvery is how many shares a run takes of a cap between two writes of
// its hint.
const hintEvery = 16

// A hint says where a cap's shares went on to, as a worker last saw them:
// the end of a share that was taken, and the limit it gave. The shares
// are a chain (each starts where the one before it ends), so lastShare
// walks it from the hint, a read a share, rather than list every share of
// the cap. A hint is never ahead of the chain, as it is written after the
// share it names was taken; one left behind by a later write of another
// worker costs reads, never a wrong answer.
type hint struct {
	End   int64 `json:"end"`
	Limit int64 `json:"limit"`
}

func hintKey(what string) string { return budgetPrefix + what + ".hint.json" }

// hint writes c's hint: the end of the last share this run took, whose
// limit is this run's. It is only a place to start from: a failed write
// is not an error of the run.
func (s *spender) hint(ctx context.Context, c *counter) {
	if c.taken == 0 {
		return
	}
	b, _ := json.Marshal(hint{End: c.ownEnd, Limit: c.limit})
	_ = s.store.Put(ctx, hintKey(c.what), b)
}

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

// A lastShareOf is the last share of a cap, and where the next one starts.
type lastShareOf struct {
	share
	end int64
}

// maxWalk is how many shares lastShare reads from a hint before it lists
// the cap's shares instead.
const maxWalk = 256

// lastShare finds the last share of a cap, and where the next one starts:
// by its hint and a read of each share taken since (see hint), else by a
// listing of every share of the cap.
func lastShare(ctx context.Context, s Store, what string) (lastShareOf, error) {
	b, err := s.Get(ctx, hintKey(what))
	if errors.Is(err, ErrNotExist) {
		return listLastShare(ctx, s, what)
	}
	if err != nil {
		return lastShareOf{}, err
	}
	var h hint
	if json.Unmarshal(b, &h) != nil || h.End < 0 {
		return listLastShare(ctx, s, what)
	}
	last := lastShareOf{share{Limit: h.Limit}, h.End}
	for range maxWalk {
		sh, err := readShare(ctx, s, shareKey(what, last.end))
		if errors.Is(err, ErrNotExist) {
			return last, nil
		}
		if err != nil {
			return lastShareOf{}, err
		}
		last = lastShareOf{sh, last.end + sh.Size}
	}
	return listLastShare(ctx, s, what)
}

// listLastShare lists the shares of a cap and reads the last one.
func listLastShare(ctx context.Context, s Store, what string) (lastShareOf, error) {
	last := ""
	for key, err := range s.List(ctx, budgetPrefix+what+"/") {
		if err != nil {
			return lastShareOf{}, err
		}
		last = key
	}
	if last == "" {
		return lastShareOf{}, nil
	}
	pos, err := strconv.ParseInt(strings.TrimSuffix(last[strings.LastIndex(last, "/")+1:], ".json"), 10, 64)
	if err != nil {
		return lastShareOf{}, fmt.Errorf("batch: %s is no share of the budget", last)
	}
	sh, err := readShare(ctx, s, last)
	if err != nil {
		return lastShareOf{}, err
	}
	return lastShareOf{sh, pos + sh.Size}, nil
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
	calls, err := lastShare(ctx, store, "calls")
	if err != nil {
		return BudgetStatus{}, err
	}
	spend, err := lastShare(ctx, store, "spend")
	if err != nil {
		return BudgetStatus{}, err
	}
	return BudgetStatus{Calls: calls.end, CallsLimit: calls.Limit,
		Spent: float64(spend.end) / microUnits, SpendLimit: float64(spend.Limit) / microUnits}, nil
}
