package batch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/opcall"
)

// A LedgerError reports a ledger that could not be written: the run
// stopped starting jobs at once. Unrecorded holds the answers that were
// paid for and could not be recorded (their URLs, texts and files), so
// that the caller can show them; nothing else holds them.
type LedgerError struct {
	Err        error
	Unrecorded []Record
}

// Error says that the ledger failed, and how many paid answers it lacks.
func (e *LedgerError) Error() string {
	s := fmt.Sprintf("batch: the ledger could not be written, so the run stopped: %v", e.Err)
	if n := len(e.Unrecorded); n > 0 {
		s += fmt.Sprintf(" (%s paid for and not recorded)", plural(n, "answer"))
	}
	return s
}

// Unwrap returns the store's error.
func (e *LedgerError) Unwrap() error { return e.Err }

// A run is one Run of a Runner.
type run struct {
	*Runner
	token   string // names the run in its records and its heartbeat
	mu      sync.Mutex
	sum     Summary
	fatal   *LedgerError
	started atomic.Int64
	ended   atomic.Int64 // jobs that ended, for keepIndex
}

// Run runs the jobs Check passed, reading them again. Jobs done, claimed
// by another worker, or maybe paid are not sent again (see Options); a
// ledger that cannot be written stops the run with a *LedgerError. Run
// returns when every started job has ended, or when ctx is cancelled
// (which cancels the calls in flight).
func (r *Runner) Run(ctx context.Context, c *Checked) (Summary, error) {
	if r.store == nil {
		return Summary{}, errors.New("batch: a Runner without a Store can check and plan, not run")
	}
	ru := &run{Runner: r, token: newRunToken()}
	ru.sum.Jobs = c.mine
	stopBeats, err := ru.keepBeating(ctx)
	if err != nil {
		ru.sum.NotStarted = c.mine
		return ru.sum, &LedgerError{Err: err}
	}
	defer stopBeats() // stopped after the workers: every claim has ended
	queue := make(chan *task)
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
	ru.sum.NotStarted = c.mine - int(ru.started.Load())
	if ru.fatal != nil {
		return ru.sum, ru.fatal
	}
	if err := <-readErr; err != nil {
		return ru.sum, err
	}
	return ru.sum, ctx.Err()
}

// keepIndex rewrites index.html every Options.IndexEvery while jobs end,
// until the returned func is called; a page that cannot be written is left
// as it was, since the ledger, not the page, is the record. A page that
// took long to write (a ledger of a million jobs) waits ten times as long
// before the next, so that the run's own work comes first.
func (ru *run) keepIndex(ctx context.Context) (stop func()) {
	if ru.o.IndexEvery <= 0 {
		return func() {}
	}
	written := int64(-1)
	var next time.Time
	return every(ru.o.IndexEvery, func() {
		if n := ru.ended.Load(); n != written && !time.Now().Before(next) {
			written = n
			start := time.Now()
			_ = WriteIndex(ctx, ru.store)
			next = time.Now().Add(10 * time.Since(start))
		}
	})
}

// feed sends the tasks to the workers until all are sent or the run stops.
func (ru *run) feed(ctx context.Context, c *Checked, queue chan<- *task) error {
	for t, err := range ru.tasks(c) {
		if err != nil {
			return fmt.Errorf("batch: the jobs changed while they ran: %w", err)
		}
		select {
		case queue <- t:
		case <-ru.st.stopping.Done():
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

// failLedger stops the run because the ledger could not be written; paid,
// when not nil, is an answer that nothing holds now.
func (ru *run) failLedger(err error, paid *record) {
	ru.st.stop()
	ru.mu.Lock()
	defer ru.mu.Unlock()
	if ru.fatal == nil {
		ru.fatal = &LedgerError{Err: err}
	}
	if paid != nil {
		ru.fatal.Unrecorded = append(ru.fatal.Unrecorded, paid.Record)
	}
}

// do takes one job as far as this run can.
func (ru *run) do(ctx context.Context, t *task) {
	select {
	case <-ru.st.stopping.Done():
		return
	default:
	}
	if ctx.Err() != nil {
		return
	}
	ru.started.Add(1)
	last, n, act, err := ru.assess(ctx, t.key)
	if cancelled(ctx, err) {
		ru.started.Add(-1)
		return
	}
	if err != nil {
		ru.failLedger(err, nil)
		return
	}
	switch act {
	case actCall:
		ru.call(ctx, t, n+1)
	case actDownload:
		ru.redownload(ctx, last, n+1)
	case actCheck:
		ru.checkDone(ctx, last, n+1)
	case actLeave:
		ru.skip(last, func(s *Summary) { s.countLeft(last) })
	case actElsewhere:
		ru.skip(last, func(s *Summary) { s.Elsewhere++ })
	}
}

// cancelled reports whether err is the end of ctx rather than a failure
// of the Store: the job read or claimed with it was not started.
func cancelled(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
}

// skip counts with f a job this run leaves as it is, rec its last attempt.
func (ru *run) skip(rec *record, f func(s *Summary)) {
	ru.count(f)
	ru.event(JobSkipped, rec)
}

// claimOrSkip claims rec's attempt, or reports false when another worker
// has it or the ledger failed.
func (ru *run) claimOrSkip(ctx context.Context, rec *record) bool {
	err := putStage(ctx, ru.store, rec, stageClaim)
	if errors.Is(err, ErrExist) {
		ru.skip(rec, func(s *Summary) { s.Elsewhere++ })
		return false
	}
	if cancelled(ctx, err) {
		ru.started.Add(-1)
		return false
	}
	if err != nil {
		ru.failLedger(err, nil)
		return false
	}
	ru.event(JobStarted, rec)
	return true
}

// call claims attempt n of t and sends its request.
func (ru *run) call(ctx context.Context, t *task, n int) {
	jr, ctx, ok := ru.st.begin(ctx)
	if !ok {
		ru.started.Add(-1)
		return
	}
	defer ru.st.end(jr)
	rec := &record{Record: Record{Job: t.key, ID: t.job.ID, Line: t.job.Line, Op: t.op.Name, Attempt: n, State: Claimed,
		Fields: t.vals, Worker: ru.o.Worker, Run: ru.token, Time: time.Now().UTC()}, Kind: kindCall, Stem: t.stem()}
	if !ru.claimOrSkip(ctx, rec) {
		return
	}
	start := time.Now()
	req, closeFiles, err := ru.checker.files.request(t)
	var res any
	var resp *http.Response
	if err == nil {
		opts := append([]creative.Option{creative.WithMiddleware(ru.spend.gate(t.op.Name, ru.Stop), ru.st.gate(jr)), creative.WithResponseInto(&resp)}, ru.o.CallOptions...)
		res, err = opcall.Call(ctx, ru.c, t.op, req, opts...)
		closeFiles()
	}
	rec.Requests = int(jr.requests.Load())
	if resp != nil {
		rec.RequestID = resp.Header.Get("X-Request-Id")
	}
	if err != nil {
		rec.State = Classify(err)
		if rec.Requests == 0 {
			rec.State = Refused // nothing went out
		}
		rec.Error = strings.TrimPrefix(err.Error(), "creative: ")
		ru.finish(ctx, rec, start, nil)
		return
	}
	ru.save(ctx, rec, res, start)
}

// finish records rec as it ends this run and counts it; err, when the
// Store's, stops the run first.
func (ru *run) finish(ctx context.Context, rec *record, start time.Time, err error) {
	if _, ok := errors.AsType[*storeError](err); ok {
		ru.failLedger(err, nil)
	}
	rec.Seconds = math.Round(time.Since(start).Seconds()*1000) / 1000
	rec.Time = time.Now().UTC()
	// The record is written even when ctx was cancelled: the call ended.
	if err := putStage(context.WithoutCancel(ctx), ru.store, rec, stageEnd); err != nil {
		ru.unrecorded(rec, err)
	}
	ru.end(rec)
}

// end counts rec as it ends this run, and tells of it.
func (ru *run) end(rec *record) {
	ru.count(func(s *Summary) {
		s.Requests += rec.Requests
		switch {
		case rec.State == Done:
			s.Done++
		case rec.State == Failed:
			s.Failed++
		case rec.State == Refused:
			s.Refused++
		case rec.State == Answered && !rec.Lost:
			s.Waiting++
		default:
			s.countLeft(rec) // lost, claimed or unknown
		}
	})
	ru.ended.Add(1)
	ru.event(JobEnded, rec)
}

// unrecorded stops the run because rec could not be recorded, hands a paid
// answer to the LedgerError, and leaves rec as the ledger has it: answered
// when its links were recorded before, else claimed (maybe paid).
func (ru *run) unrecorded(rec *record, err error) {
	var paid *record
	if rec.State == Answered || rec.State == Done {
		cp := *rec
		paid = &cp
	}
	ru.failLedger(err, paid)
	state := Claimed
	if len(rec.URLs) > 0 && rec.State != Answered {
		state = Answered // the links were recorded before
	}
	rec.State, rec.Lost = state, false
	rec.Error = "not recorded in the ledger (" + err.Error() + "): see the run's error for the answer"
}

// checkDone checks that a done job's files are in place, and downloads
// them again (free) when some are gone and its answer had links.
func (ru *run) checkDone(ctx context.Context, last *record, n int) {
	for _, f := range last.Files {
		ok, err := ru.store.Exists(ctx, f)
		if cancelled(ctx, err) {
			ru.started.Add(-1)
			return
		}
		if err != nil {
			ru.failLedger(err, nil)
			return
		}
		if !ok && len(last.URLs) > 0 {
			ru.redownload(ctx, last, n)
			return
		}
		if !ok {
			ru.skip(last, func(s *Summary) { s.Missing++ })
			return
		}
	}
	ru.skip(last, func(s *Summary) { s.DoneBefore++ })
}

// redownload claims attempt n of an answered job to fetch its files again.
func (ru *run) redownload(ctx context.Context, last *record, n int) {
	rec := *last
	rec.Attempt, rec.Kind, rec.State, rec.Worker, rec.Run = n, kindDownload, Claimed, ru.o.Worker, ru.token
	rec.Files, rec.Error, rec.Requests, rec.Seconds, rec.Lost = nil, "", 0, 0, false
	rec.Time = time.Now().UTC()
	if !ru.claimOrSkip(ctx, &rec) {
		return
	}
	ru.download(ctx, &rec, time.Now())
}
