package batch_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/creativetest"
)

// heldRecords is a Ledger whose records wait until release is closed, and
// which counts the claims it made.
type heldRecords struct {
	*ledgertest.Memory
	release chan struct{}
	claims  atomic.Int32
}

func (l *heldRecords) Claim(ctx context.Context, c *batch.Claim) (batch.ClaimResult, error) {
	res, err := l.Memory.Claim(ctx, c)
	if err == nil && res.Claimed {
		l.claims.Add(1)
	}
	return res, err
}

func (l *heldRecords) Record(ctx context.Context, a *batch.Entry) error {
	<-l.release
	return l.Memory.Record(ctx, a)
}

// A worker claims and sends its next job while the end of its last one is
// being recorded (its outputs are durable already), at most Concurrency
// ends waiting so; the run tells of a job's end, and returns, only once
// the ledger took its record.
func TestAWorkerGoesOnWhileItsRecordCommitsAndTheRunEndsAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, creativetest.WithInMemoryNetwork())
		f.write(t, imageJobs(3)...)
		l := &heldRecords{Memory: f.ledger, release: make(chan struct{})}
		var ended atomic.Int32
		r, err := batch.New(f.c, l, f.store, batch.Options{Concurrency: 1, Base: filepath.Dir(f.jobs), OnEvent: func(e batch.Event) {
			if e.Type == batch.JobEnded {
				ended.Add(1)
			}
		}})
		require.NoError(t, err)
		var sum batch.Summary
		ran := make(chan error, 1)
		go func() {
			var err error
			sum, err = checkAndRun(r, batch.File(f.jobs))
			ran <- err
		}()
		synctest.Wait()
		// One worker: the first job's record waits, the second job was
		// claimed and sent, and its end waits for the first's record.
		assert.Equal(t, int32(2), l.claims.Load())
		assert.Equal(t, 2, f.srv.Count("image/text-to-image"))
		assert.Zero(t, ended.Load(), "no job told ended before its record")
		select {
		case <-ran:
			t.Fatal("the run returned before its records landed")
		default:
		}
		close(l.release)
		require.NoError(t, <-ran)
		assert.Equal(t, 3, sum.Done)
		assert.Equal(t, int32(3), ended.Load())
		assert.Equal(t, 3, f.srv.Count("image/text-to-image"))
		for e, err := range f.ledger.Jobs(t.Context(), false) {
			require.NoError(t, err)
			assert.Equal(t, batch.Done, e.State)
		}
	})
}
