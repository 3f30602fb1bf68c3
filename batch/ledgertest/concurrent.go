package ledgertest

// The rules under concurrency: claims of one job by many runs, the
// budget's caps under concurrent claims, and claims cancelled midway.

import (
	"context"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
)

func claimRace(t *testing.T, l batch.Ledger) {
	const runs, jobs = 8, 20
	var won [jobs]atomic.Int32
	var wg sync.WaitGroup
	for g := range runs {
		r, _ := begin(t, l)
		{
			wg.Go(func() {
				for i := range jobs {
					res, err := l.Claim(context.Background(), claim(jobKey(fmt.Sprint("race", (i+g)%jobs)), 1, r))
					if assert.NoError(t, err) && res.Claimed {
						won[(i+g)%jobs].Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	for i := range won {
		assert.EqualValues(t, 1, won[i].Load(), "job %d", i)
	}
}

func budgetRace(t *testing.T, l batch.Ledger) {
	var claimed, spent atomic.Int32
	var wg sync.WaitGroup
	for r := range 4 {
		run, _ := begin(t, l)
		for g := range 3 {
			wg.Go(func() {
				for i := range 10 {
					c := claim(jobKey(fmt.Sprint("b", r, g, i)), 1, run)
					c.Share = batch.Share{Calls: 1, MaxCalls: 100, Spend: 250_000, MaxSpend: 2_000_000} // 0.25 of 2
					res, err := l.Claim(context.Background(), c)
					switch {
					case errors.Is(err, batch.ErrBudgetSpent):
						spent.Add(1)
					case assert.NoError(t, err) && assert.True(t, res.Claimed):
						claimed.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	assert.EqualValues(t, 8, claimed.Load(), "2 / 0.25 calls")
	assert.EqualValues(t, 120-8, spent.Load())
	st, err := l.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, batch.BudgetStatus{Calls: 8, CallsLimit: 100, Spent: 2, SpendLimit: 2}, st.Budget)
}

// cancelledClaims claims many jobs at once, half of them with contexts
// cancelled while they may be in the engine (at seeded moments): every
// claim whose context stays live is made, and read back so, whatever the
// others' cancellations did to the transactions they were in.
func cancelledClaims(t *testing.T, l batch.Ledger) {
	a, _ := begin(t, l)
	const jobs = 240
	rng := mathrand.New(mathrand.NewPCG(7, 11))
	delays := make([]time.Duration, jobs)
	for i := range delays {
		delays[i] = time.Duration(rng.IntN(20000)) * time.Microsecond
	}
	errs := make([]error, jobs)
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			ctx := t.Context()
			if i%2 == 1 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				time.AfterFunc(delays[i], cancel)
			}
			res, err := l.Claim(ctx, claim(jobKey(fmt.Sprintf("cancel %d", i)), 1, a))
			if err == nil && !res.Claimed {
				err = fmt.Errorf("not claimed")
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := 0; i < jobs; i += 2 {
		require.NoError(t, errs[i], "claim %d, whose context was never cancelled", i)
		assert.Equal(t, batch.Claimed, last(t, l, jobKey(fmt.Sprintf("cancel %d", i))).State, "claim %d", i)
	}
}
