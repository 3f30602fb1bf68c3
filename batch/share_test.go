package batch_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/creativetest"
)

// refusals is a ledger that closes spent when it first refuses a claim
// for the budget.
type refusals struct {
	*ledgertest.Memory
	once  sync.Once
	spent chan struct{}
}

func (l *refusals) Claim(ctx context.Context, c *batch.Claim) (batch.ClaimResult, error) {
	res, err := l.Memory.Claim(ctx, c)
	if errors.Is(err, batch.ErrBudgetSpent) {
		l.once.Do(func() { close(l.spent) })
	}
	return res, err
}

// afterSpent is a rate limiter that lets an attempt go once the budget
// was refused to a claim: the attempt of a job that took its share first
// waits, as one waiting for --rate does, while the other job's claim is
// refused.
type afterSpent struct{ spent <-chan struct{} }

func (a afterSpent) Wait(ctx context.Context) error {
	select {
	case <-a.spent:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A call whose claim took its share of the budget is sent, though another
// job's claim finds the budget spent before it goes: the cap of 1 call
// over 2 jobs sends exactly 1, and the share taken is the call's. (The run
// stops claiming; a claimed call cancelled unsent would hold a share of
// the budget no call used, which no later run gets back.)
func TestACallThatTookItsShareIsSentWhenTheBudgetRunsOut(t *testing.T) {
	srv := creativetest.Start(t)
	l := &refusals{Memory: ledgertest.NewMemory(), spent: make(chan struct{})}
	c := srv.Client(creative.WithRateLimiter(afterSpent{l.spent}))
	f := newFixture(t)
	f.write(t, imageJobs(2)...)
	r, err := batch.New(c, l, f.store, batch.Options{Concurrency: 2, Base: filepath.Dir(f.jobs), Budget: batch.Budget{MaxCalls: 1}})
	require.NoError(t, err)
	sum, err := checkAndRun(r, batch.File(f.jobs))
	require.NoError(t, err)
	assert.Equal(t, 1, srv.Count("image/text-to-image"), "the call that took the share")
	assert.Equal(t, 1, sum.Done, "%+v", sum)
	b, err := batch.ReadBudget(context.Background(), l)
	require.NoError(t, err)
	assert.Equal(t, batch.BudgetStatus{Calls: 1, CallsLimit: 1}, b)
}
