package batch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A LedgerError reports a ledger that could not be written, or a lease
// that could no longer be proven: the run stopped starting jobs at once.
// Unrecorded holds the answers that were paid for and could not be
// recorded (their URLs, texts and files), so that the caller can show
// them; nothing else holds them. MaybePaid holds the other jobs this run
// sent whose end the ledger does not hold as this run saw it: each may
// have been paid.
type LedgerError struct {
	Err        error
	Unrecorded []Record
	MaybePaid  []Record
}

// Error says that the ledger failed, and how many paid answers it lacks.
func (e *LedgerError) Error() string {
	s := fmt.Sprintf("batch: the ledger could not be written, so the run stopped: %v", e.Err)
	if n := len(e.Unrecorded); n > 0 {
		s += fmt.Sprintf(" (%s paid for and not recorded)", plural(n, "answer"))
	}
	if n := len(e.MaybePaid); n > 0 {
		s += fmt.Sprintf(" (%s sent and maybe paid, not recorded as such)", plural(n, "job"))
	}
	return s
}

// Unwrap returns the store's error.
func (e *LedgerError) Unwrap() error { return e.Err }

// A run is one Run of a Runner.
//
// A job lives its stages in this order, each in one place, and a reader
// follows them file by file: the run's lease (keepBeating, lease.go);
// then for each job its check, claim and send through the lease's gate
// (do, claim, send: job.go); then the saving of its answer and its record
// (save, record: save.go).
type run struct {
	*Runner
	token   string // names the run in the ledger
	session Session
	lease   *lease
	mu      sync.Mutex
	sum     Summary
	fatal   *LedgerError // guarded by mu
	halt    error        // a refusal that every job would meet; guarded by mu
	away    []string     // jobs left to other workers' runs, to check at the end; guarded by mu
	started atomic.Int64
	changed atomic.Int64 // claims and ends of jobs, for keepIndex
	// records are the ends being recorded, recording their bound (see
	// finish).
	records   sync.WaitGroup
	recording chan struct{}
}

// Run runs the jobs Check passed, reading them again. Jobs done, claimed
// by another worker, or maybe paid are not sent again (see Options); a
// ledger that cannot be written, or a lease that can no longer be proven,
// stops the run with a *LedgerError, and an answer that every job would
// get alike (the key refused) stops it with that answer. Run returns when
// every started job has ended, or when ctx is cancelled (which cancels the
// calls in flight).
func (r *Runner) Run(ctx context.Context, c *Checked) (Summary, error) {
	if r.ledger == nil || r.store == nil {
		return Summary{}, errors.New("batch: a Runner without a Ledger and a Store can check and plan, not run")
	}
	ru := &run{Runner: r, token: newRunToken(), lease: newLease(r.o.Lease), recording: make(chan struct{}, r.o.Concurrency)}
	ru.sum.Jobs = c.mine
	stopBeats, err := ru.keepBeating(ctx, func(err error) { ru.failLedger(err, nil) })
	if err != nil {
		ru.sum.NotStarted = c.mine
		return ru.sum, &LedgerError{Err: err}
	}
	defer stopBeats() // stopped after the workers: every claim has ended
	queue := make(chan *task, r.o.Concurrency)
	readErr := make(chan error, 1)
	go func() {
		defer close(queue)
		readErr <- ru.feed(ctx, c, queue)
	}()
	defer ru.keepIndex(ctx)()
	var wg sync.WaitGroup
	for range r.o.Concurrency {
		wg.Go(func() {
			for t := range queue {
				ru.do(ctx, t)
			}
		})
	}
	wg.Wait()
	ru.records.Wait()
	ru.recheck(ctx)
	ru.mu.Lock()
	defer ru.mu.Unlock()
	ru.sum.NotStarted = c.mine - int(ru.started.Load())
	if ru.fatal != nil {
		return ru.sum, ru.fatal
	}
	// The reader sent its error before the queue closed.
	return ru.sum, cmp.Or(ru.halt, <-readErr, ctx.Err())
}

// keepIndex rewrites index.html every Options.IndexEvery while jobs are
// claimed and end, until the returned func is called: a run that claims
// and ends none leaves it alone. A page that cannot be written is left as
// it was, since the ledger, not the page, is the record. A page that
// took long to write (a ledger of a million jobs) waits ten times as long
// before the next, so that the run's own work comes first.
func (ru *run) keepIndex(ctx context.Context) (stop func()) {
	if ru.o.IndexEvery <= 0 {
		return func() {}
	}
	var written int64
	var next time.Time
	return every(ru.o.IndexEvery, func() {
		if n := ru.changed.Load(); n != written && !time.Now().Before(next) {
			written = n
			start := time.Now()
			_ = WriteIndex(ctx, ru.ledger, ru.store)
			next = time.Now().Add(10 * time.Since(start))
		}
	})
}

// feed sends the tasks to the workers until all are sent or the run stops.
func (ru *run) feed(ctx context.Context, c *Checked, queue chan<- *task) error {
	for t, err := range ru.lookup(ctx, c) {
		if _, ok := errors.AsType[*LineError](err); ok {
			return fmt.Errorf("batch: the jobs changed while they ran: %w", err)
		}
		if err != nil {
			if ctx.Err() == nil {
				ru.failLedger(err, nil)
			}
			return nil
		}
		select {
		case queue <- t:
		case <-ru.st.closed.Done():
			return nil
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// count updates the summary under the lock.
func (ru *run) count(f func(s *Summary)) {
	ru.mu.Lock()
	f(&ru.sum)
	ru.mu.Unlock()
}

func (ru *run) event(typ EventType, rec *record) {
	if ru.o.OnEvent != nil {
		ru.o.OnEvent(Event{Type: typ, Record: rec.Record})
	}
}

// failLedger stops the run because the ledger could not be written, or the
// lease is in doubt; paid, when not nil, is an answer that nothing holds
// now.
func (ru *run) failLedger(err error, paid *record) {
	ru.st.stop()
	ru.mu.Lock()
	defer ru.mu.Unlock()
	if ru.fatal == nil {
		ru.fatal = &LedgerError{Err: err}
		ru.sum.Stopped = "the ledger could not be written (see the error)"
		if errors.Is(err, errLeaseInDoubt) {
			ru.sum.Stopped = "the run's lease is in doubt: its heartbeats could not be written in time (see the error)"
		}
	}
	if paid != nil {
		ru.fatal.Unrecorded = append(ru.fatal.Unrecorded, paid.Record)
	}
}

// maybePaid hands rec, sent by this run and not recorded as it ended, to
// the run's LedgerError.
func (ru *run) maybePaid(rec *record) {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	if ru.fatal != nil {
		ru.fatal.MaybePaid = append(ru.fatal.MaybePaid, rec.Record)
	}
}

// stopFor stops the run for an answer every job would get alike (why, in
// one line): nothing more is claimed or sent.
func (ru *run) stopFor(why string, err error) {
	ru.st.stop()
	ru.mu.Lock()
	defer ru.mu.Unlock()
	if ru.halt == nil {
		ru.halt = fmt.Errorf("batch: %s, so the run stopped: %w", why, err)
		ru.sum.Stopped = cmp.Or(ru.sum.Stopped, why)
	}
}
