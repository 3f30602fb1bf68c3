package batch

// How an attempt's end is recorded and counted: within a bound of its own,
// shorter once the run is told to stop; what a record the ledger refused
// hands back; and when a failed download means that its links died with
// the fake that served them.

import (
	"context"
	"errors"
	"math"
	"syscall"
	"time"

	"github.com/creativegen/creative-go/batch/page"
)

// finish records rec as it ends this run, and counts it once the ledger
// took it; err, when the Store's, stops the run first. Its outputs are
// durable already, so the worker goes on to its next job while the record
// commits with others' (at most Concurrency wait so): Run returns only
// once every record landed, and a kill before that leaves the job claimed
// (maybe paid), as a kill a moment before the record would.
func (ru *run) finish(ctx context.Context, rec *record, start time.Time, err error) {
	if _, ok := errors.AsType[*storeError](err); ok {
		ru.failLedger(err, nil)
	}
	rec.Seconds = math.Round(time.Since(start).Seconds()*1000) / 1000
	rec.Time = time.Now().UTC()
	// At most Concurrency ends wait so, unless the run is told to stop:
	// then each is written at once, within the shorter bound, rather than
	// after those before it took theirs.
	slot := true
	select {
	case ru.recording <- struct{}{}:
	case <-ctx.Done():
		slot = false
	}
	// The bound is the job's as it ends: its context is cancelled once the
	// worker goes on, which is no stop of the run.
	bound := recordBound(ctx)
	ru.records.Go(func() {
		defer func() {
			if slot {
				<-ru.recording
			}
		}()
		if err := ru.record(ctx, rec, bound); err != nil {
			ru.unrecorded(rec, err)
		}
		ru.end(rec)
	})
}

// recordTimeout bounds each record's write: a record is written even once
// the run's context ended (the call ended, and may have been paid), within
// a time of its own.
const recordTimeout = 10 * time.Second

// record writes rec's answer or end in the ledger, even when ctx was
// cancelled, within bound: recordBound(ctx) as the job ends. The ledger
// takes it only while the attempt is its job's last and this run is not
// gone (fencing, checked in the transaction): when another worker took
// the job over meanwhile, the record is refused (ErrFenced), so the job
// is not shown done twice and a second payment is not hidden behind a
// done record; the run's LedgerError hands the answer back.
func (ru *run) record(ctx context.Context, rec *record, bound time.Duration) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	return ru.ledger.Record(wctx, rec)
}

// abandonedWrite bounds each record written after the run's context was
// cancelled.
const abandonedWrite = 5 * time.Second

// recordBound is the bound of a record written now under ctx:
// recordTimeout, or abandonedWrite once the run was cancelled (a caller's
// grace ended: a process told to stop ends before it is killed; a record
// not written in time leaves the job as the ledger had it, claimed (maybe
// paid) or answered).
func recordBound(ctx context.Context) time.Duration {
	if ctx.Err() != nil {
		return abandonedWrite
	}
	return recordTimeout
}

// end counts rec as it ends this run, and tells of it.
func (ru *run) end(rec *record) {
	ru.count(func(s *Summary) {
		s.Requests += rec.Requests
		s.tally(rec)
	})
	ru.changed.Add(1)
	ru.event(JobEnded, rec)
}

// unrecorded stops the run because rec could not be recorded, hands a paid
// answer, or a job sent whose outcome the ledger lacks, to the
// LedgerError, and leaves rec as the ledger has it: answered when its
// links were recorded before, else claimed (maybe paid).
func (ru *run) unrecorded(rec *record, err error) {
	var paid *record
	if rec.State == Answered || rec.State == Done {
		cp := *rec
		paid = &cp
	}
	ru.failLedger(err, paid)
	if paid == nil && (rec.Requests > 0 || errors.Is(err, ErrFenced)) {
		ru.maybePaid(rec)
	}
	state := Claimed
	if len(rec.URLs) > 0 && rec.State != Answered {
		state = Answered // the links were recorded before
	}
	rec.State, rec.Lost = state, false
	rec.Error = "not recorded in the ledger (" + err.Error() + "): see the run's error for the answer"
}

// servedByAGoneFake reports whether err, a download's, says that the
// service on this machine that served the links (a fake's: no real
// service links to this machine) is no longer there: its connection was
// refused. Its links died with it, as an expired link does.
func servedByAGoneFake(urls []string, err error) bool {
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	for _, u := range urls {
		if !page.OnThisMachine(u) {
			return false
		}
	}
	return len(urls) > 0
}
