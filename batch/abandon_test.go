package batch_test

import (
	"context"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

// stuckRecords is a Ledger whose Records, once stuck is set, never end
// before their context does: a ledger that stopped answering.
type stuckRecords struct {
	batch.Ledger
	stuck atomic.Bool
}

func (l *stuckRecords) Record(ctx context.Context, a *batch.Entry) error {
	if l.stuck.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return l.Ledger.Record(ctx, a)
}

// A run whose context is cancelled (a caller's grace ended) records each
// call in flight as maybe paid; each of those records has a short bound of
// its own, so that a ledger that stopped answering holds the run 5 s, not
// the 10 s a record has otherwise, and the calls come back in the
// LedgerError as maybe paid.
func TestACancelledRunRecordsItsCallsInFlightWithinAShortBound(t *testing.T) {
	for _, stuck := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			f := newFixture(t, creativetest.WithInMemoryNetwork())
			arrived := make(chan struct{}, 2)
			f.srv.Handle(creativetest.OpTextToImage, func(w http.ResponseWriter, r *http.Request) {
				arrived <- struct{}{}
				<-r.Context().Done()
			})
			f.write(t, imageJobs(2)...)
			store := &stuckRecords{Ledger: f.ledger}
			r, err := batch.New(f.c, store, f.store, batch.Options{Base: filepath.Dir(f.jobs), Concurrency: 2})
			require.NoError(t, err)
			checked, err := r.Check(context.Background(), batch.File(f.jobs))
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			type result struct {
				sum batch.Summary
				err error
			}
			ended := make(chan result, 1)
			go func() {
				sum, err := r.Run(ctx, checked)
				ended <- result{sum, err}
			}()
			<-arrived
			<-arrived
			store.stuck.Store(stuck)
			start := time.Now()
			cancel()
			res := <-ended
			took := time.Since(start)
			if !stuck {
				require.ErrorIs(t, res.err, context.Canceled)
				assert.Equal(t, 2, res.sum.Unknown, "each call in flight recorded maybe paid: %+v", res.sum)
				assert.Zero(t, took)
				return
			}
			var le *batch.LedgerError
			require.ErrorAs(t, res.err, &le)
			assert.Len(t, le.MaybePaid, 2, "handed back as maybe paid")
			assert.Equal(t, 5*time.Second, took, "each record bounded on its own, at once")
		})
	}
}
