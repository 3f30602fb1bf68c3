package batch_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
)

// boundLedger notes how long each record of a job's end is given.
type boundLedger struct {
	batch.Ledger
	mu     sync.Mutex
	bounds []time.Duration
}

func (l *boundLedger) Record(ctx context.Context, a *batch.Entry) error {
	if d, ok := ctx.Deadline(); ok && a.State != batch.Answered {
		l.mu.Lock()
		l.bounds = append(l.bounds, time.Until(d))
		l.mu.Unlock()
	}
	return l.Ledger.Record(ctx, a)
}

// A run that was not told to stop gives each job's end its full bound
// (10 s), not the shorter bound of a run that was cancelled (5 s): the
// job's own context, cancelled once the worker goes on, is not the run's.
func TestAttackAnEndRecordedBehindItsJobKeepsTheFullBound(t *testing.T) {
	f := newFixture(t)
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf(`{"op":"audio/text-to-music","prompt":"tune %d"}`, i))
	}
	f.write(t, lines...)
	l := &boundLedger{Ledger: f.ledger}
	r, err := batch.New(f.c, l, f.store, batch.Options{Concurrency: 4, Base: filepath.Dir(f.jobs)})
	require.NoError(t, err)
	sum, err := checkAndRun(r, batch.File(f.jobs))
	require.NoError(t, err)
	assert.Equal(t, 20, sum.Done)
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Len(t, l.bounds, 20)
	for i, b := range l.bounds {
		assert.Greater(t, b, 8*time.Second, "record %d of a run never cancelled was given %v", i, b)
	}
}
