package batch_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/creativetest"
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

// gatedLedger holds every record of a job's end until release is
// closed, refuses the fenced-th (as a ledger whose run was taken over
// does), and counts the records in flight.
type gatedLedger struct {
	batch.Ledger
	release  chan struct{}
	fenced   int32
	ends     atomic.Int32
	inFlight atomic.Int32
	held     atomic.Int32
	mu       sync.Mutex
	refused  map[string]bool
}

func (l *gatedLedger) Record(ctx context.Context, a *batch.Entry) error {
	if a.State == batch.Answered && !a.Lost && a.Error == "" {
		return l.Ledger.Record(ctx, a)
	}
	l.inFlight.Add(1)
	defer l.inFlight.Add(-1)
	n := l.ends.Add(1)
	l.held.Add(1)
	select {
	case <-l.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if n == l.fenced {
		l.mu.Lock()
		l.refused[a.Job] = true
		l.mu.Unlock()
		return fmt.Errorf("attack: %w", batch.ErrFenced)
	}
	return l.Ledger.Record(ctx, a)
}

// While the ends of jobs wait for the ledger, the run neither reports
// them ended nor returns; an end the ledger refuses is never reported
// done, its paid answer is handed back, and every job reported done has
// its record and its files.
func TestAttackEndsWaitingForTheLedgerAreNotReportedAndARefusedOneNeverDone(t *testing.T) {
	f := newFixture(t)
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf(`{"op":"audio/text-to-music","prompt":"tune %d"}`, i))
	}
	f.write(t, lines...)
	l := &gatedLedger{Ledger: f.ledger, release: make(chan struct{}), fenced: 3, refused: map[string]bool{}}
	var mu sync.Mutex
	ended := map[string]batch.State{}
	r, err := batch.New(f.c, l, f.store, batch.Options{Concurrency: 4, Base: filepath.Dir(f.jobs), OnEvent: func(e batch.Event) {
		if e.Type == batch.JobEnded {
			mu.Lock()
			ended[e.Record.Job] = e.Record.State
			mu.Unlock()
		}
	}})
	require.NoError(t, err)
	type result struct {
		sum batch.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := checkAndRun(r, batch.File(f.jobs))
		done <- result{sum, err}
	}()
	// Every worker's end waits: at most Concurrency of them.
	require.Eventually(t, func() bool { return l.held.Load() == 4 }, 10*time.Second, time.Millisecond)
	mu.Lock()
	require.Empty(t, ended, "a job reported ended before the ledger took its end")
	mu.Unlock()
	select {
	case <-done:
		t.Fatal("the run returned while ends were waiting for the ledger")
	default:
	}
	close(l.release)
	res := <-done
	require.Zero(t, l.inFlight.Load(), "the run returned with records in flight")
	var le *batch.LedgerError
	require.ErrorAs(t, res.err, &le)
	require.ErrorIs(t, res.err, batch.ErrFenced)
	require.Len(t, l.refused, 1)
	for job := range l.refused {
		require.NotEqual(t, batch.Done, ended[job], "the refused end is reported done")
		require.Len(t, le.Unrecorded, 1, "the refused end's paid answer is handed back")
		require.Equal(t, job, le.Unrecorded[0].Job)
	}
	// Every job reported done is done in the ledger, with its files.
	doneJobs := ledgertest.RequireDoneRecorded(t, f.ledger, f.store, ended)
	require.Equal(t, res.sum.Done, doneJobs)
	require.Equal(t, f.srv.Count("audio/text-to-music"), int(l.ends.Load()), "every call sent has its end tried")
}

// indexCounter counts the writes of index.html, and makes each check of
// an output take a second, so that a rerun lasts many of the page's
// periods.
type indexCounter struct {
	batch.Store
	writes atomic.Int32
}

func (s *indexCounter) NewWriter(ctx context.Context, key string, meta map[string]string) (io.WriteCloser, error) {
	if key == batch.IndexFile {
		s.writes.Add(1)
	}
	return s.Store.NewWriter(ctx, key, meta)
}

func (s *indexCounter) Exists(ctx context.Context, key string) (bool, error) {
	time.Sleep(time.Second)
	return s.Store.Exists(ctx, key)
}

// A rerun that claims and ends nothing (jobs done, or maybe paid) leaves
// the page alone while it runs.
func TestAttackARerunThatChangesNothingLeavesThePageAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, creativetest.WithInMemoryNetwork())
		lines := imageJobs(12)
		f.write(t, lines...)
		sum, err := f.run(t, batch.Options{Concurrency: 2})
		require.NoError(t, err)
		require.Equal(t, 12, sum.Done)
		// A maybe paid job.
		f.write(t, append(lines, `{"op":"audio/text-to-music","prompt":"maybe paid"}`)...)
		f.srv.Fail("audio/text-to-music", creativetest.Fault{Drop: true})
		_, _ = f.run(t, batch.Options{Concurrency: 2})
		calls := len(f.srv.Requests())

		s := &indexCounter{Store: f.store}
		r, err := batch.New(f.c, f.ledger, s, batch.Options{Concurrency: 2, Base: filepath.Dir(f.jobs), IndexEvery: 100 * time.Millisecond})
		require.NoError(t, err)
		sum, err = checkAndRun(r, batch.File(f.jobs))
		require.NoError(t, err)
		require.Equal(t, 12, sum.DoneBefore, "%+v", sum)
		require.Equal(t, 1, sum.Unknown+sum.Claimed, "%+v", sum)
		require.Equal(t, calls, len(f.srv.Requests()), "the rerun sent nothing")
		require.Zero(t, s.writes.Load(), "a rerun that claimed and ended nothing rewrote the page while it ran")
	})
}

// hungLedger holds every record of a job's end until its context ends.
type hungLedger struct {
	batch.Ledger
	hung atomic.Int32
}

func (l *hungLedger) Record(ctx context.Context, a *batch.Entry) error {
	if a.State == batch.Answered && !a.Lost && a.Error == "" {
		return l.Ledger.Record(ctx, a)
	}
	l.hung.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// A run cancelled while its ends wait for a ledger that does not answer
// returns within the bound of a record (10 s from the cancel), not after
// the ends queued behind them had each waited a bound of their own.
func TestAttackACancelledRunWaitsForItsRecordsWithinOneBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, creativetest.WithInMemoryNetwork())
		var lines []string
		for i := range 8 {
			lines = append(lines, fmt.Sprintf(`{"op":"audio/text-to-music","prompt":"tune %d"}`, i))
		}
		f.write(t, lines...)
		l := &hungLedger{Ledger: f.ledger}
		r, err := batch.New(f.c, l, f.store, batch.Options{Concurrency: 2, Base: filepath.Dir(f.jobs)})
		require.NoError(t, err)
		checked, err := r.Check(context.Background(), batch.File(f.jobs))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := r.Run(ctx, checked)
			done <- err
		}()
		// Two ends hang, and the workers' next ends wait behind them.
		synctest.Wait()
		require.Equal(t, int32(2), l.hung.Load())
		start := time.Now()
		cancel()
		<-done
		took := time.Since(start)
		require.LessOrEqual(t, took, 10*time.Second, "a cancelled run waited %v for its records", took)
	})
}
