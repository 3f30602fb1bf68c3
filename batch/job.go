package batch

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/opcall"
)

// The life of one job, in the order it lives it: do decides from its last
// attempt, read with the others of its lookup; claim takes its next
// attempt in the ledger; the starter lets it begin, and send sends it
// through the starter's gate, which lets an attempt out only while the
// run's lease is proven; then save.go saves its answer and records it.

// do takes one job as far as this run can. A claim the ledger no longer
// allows (another worker moved the job meanwhile) is decided again from
// the job's last attempt as the ledger gave it, a few times at most.
func (ru *run) do(ctx context.Context, t *task) {
	if ru.st.closed.Err() != nil || ctx.Err() != nil {
		return
	}
	last, live := t.last, t.live
	for range 3 {
		switch decide(last, &ru.o, live) {
		case actCall:
			last, live = ru.send(ctx, t, last)
		case actDownload:
			last, live = ru.redownload(ctx, last)
		case actCheck:
			last, live = ru.checkDone(ctx, t, last)
		case actLeave:
			ru.skip(last, func(s *Summary) { s.tally(last) })
			return
		case actElsewhere:
			ru.elsewhere(last)
			return
		}
		if last == nil {
			return
		}
	}
	ru.elsewhere(last)
}

// maxRecheck bounds the jobs in flight elsewhere that a run checks again
// at its end: memory stays flat however many there are.
const maxRecheck = 4096

// elsewhere counts a job left to another worker's run that goes, and
// keeps its key to check again at the run's end.
func (ru *run) elsewhere(rec *record) {
	ru.skip(rec, func(s *Summary) {
		s.Elsewhere++
		if len(ru.away) < maxRecheck {
			ru.away = append(ru.away, rec.Job)
		}
	})
}

// recheck checks again, as the run ends, the jobs it left to other
// workers: one whose claim still stands while its run is now gone (its
// worker was killed meanwhile) is counted claimed by a worker that is
// gone, not in flight.
func (ru *run) recheck(ctx context.Context) {
	ru.mu.Lock()
	keys := ru.away
	ru.mu.Unlock()
	for len(keys) > 0 && ctx.Err() == nil {
		n := min(len(keys), MaxLast)
		found, err := ru.ledger.Last(ctx, keys[:n])
		if err != nil {
			return
		}
		keys = keys[n:]
		for _, l := range found {
			if l.State == Claimed && l.Run != ru.token && !l.Live {
				ru.count(func(s *Summary) { s.Elsewhere--; s.Claimed++ })
			}
		}
	}
}

// cancelled reports whether err is the end of ctx rather than a failure
// of the ledger: the job read or claimed with it was not started.
func cancelled(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
}

// skip counts with f a job this run leaves as it is, rec its last attempt:
// a job that started, as one this run claims.
func (ru *run) skip(rec *record, f func(s *Summary)) {
	ru.started.Add(1)
	ru.count(f)
	ru.event(JobSkipped, rec)
}

// claim claims rec's attempt while the run's lease is proven. It reports
// claimed when it did; otherwise the job's last attempt as the ledger now
// holds it, to decide again, or nothing when the run stops (the lease is
// in doubt, the budget spent, the ledger failed): the job did not start.
func (ru *run) claim(ctx context.Context, rec *record) (claimed bool, last *record, live bool) {
	if !ru.lease.held() {
		return false, nil, false
	}
	c := &Claim{Entry: *rec, ResendUnknown: ru.o.ResendUnknown, RepayLost: ru.o.RepayLost}
	if rec.Kind == KindCall {
		c.Share = ru.spend.share(rec.Op)
	}
	res, err := ru.ledger.Claim(ctx, c)
	switch {
	case err == nil && res.Claimed:
		ru.started.Add(1)
		ru.changed.Add(1)
		ru.event(JobStarted, rec)
		return true, nil, false
	case err == nil && res.Last != nil:
		return false, res.Last, res.Live
	case err == nil:
		// Refused with no attempt to decide from: the job did not start.
	case errors.Is(err, ErrBudgetSpent):
		ru.spend.spent(err)
		ru.st.closeRun()
	case errors.Is(err, ErrLeaseLost):
		ru.lease.lose(fmt.Errorf("%w: %w", errLeaseInDoubt, err))
		ru.failLedger(context.Cause(ru.lease.lost), nil)
	case !cancelled(ctx, err):
		ru.failLedger(err, nil)
	}
	return false, nil, false
}

// errNotStarted stops the first request of a job once the run is stopping.
var errNotStarted = errors.New("batch: stopping: not sent")

// errLeaseInDoubt stops any request of a job once the run's lease is in
// doubt: another worker may soon send the job again.
var errLeaseInDoubt = errors.New("the run's lease is in doubt")

// A starter decides, under one lock, whether a job may send its first
// request. A job may wait in the client (for a rate limit, or a pause a 429
// asked for) after a worker took it; once the run is stopping, such a job
// is cancelled without sending anything, as is a job waiting before a
// retry (its last attempt was not sent or refused: nothing of it is in
// flight), while jobs with an attempt in flight are let finish: they may
// be paid for. A spent budget only closes the run: no job starts any
// more, while the calls that took their shares are sent.
type starter struct {
	mu       sync.Mutex
	stopping context.Context // done once stop is called
	stopAll  context.CancelFunc
	closed   context.Context // done once stop or closeRun is called
	closeRun context.CancelFunc
	inFlight int // jobs with an attempt out and not ended
}

// A jobRun is one job between a worker taking it and its end.
type jobRun struct {
	cancel context.CancelFunc
	// idle is set while nothing of the job is in flight (before its first
	// request, and while it waits before a retry), when a stop cancels
	// it; calling it keeps stop from doing so. Guarded by starter.mu.
	idle     func() bool
	requests atomic.Int32
}

func newStarter() *starter {
	ctx, cancel := context.WithCancel(context.Background())
	closed, closeRun := context.WithCancel(ctx)
	return &starter{stopping: ctx, stopAll: cancel, closed: closed, closeRun: closeRun}
}

// begin starts a job under ctx, or reports false once the run is closed.
func (s *starter) begin(ctx context.Context) (*jobRun, context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Err() != nil {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(ctx)
	return &jobRun{cancel: cancel, idle: context.AfterFunc(s.stopping, cancel)}, ctx, true
}

// gate is the middleware of every request of the job r, the one place a
// send passes the lease check: an attempt goes out only while the run's
// lease l is proven (a job whose lease is in doubt is cancelled), and its
// first attempt only while the run is not stopping. It counts the
// attempts.
func (s *starter) gate(r *jobRun, l *lease) creative.Middleware {
	return func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
		s.mu.Lock()
		var refused error
		switch {
		case !l.held():
			refused = errLeaseInDoubt
			r.cancel()
		case r.idle != nil && s.stopping.Err() != nil:
			refused = errNotStarted
		}
		if refused != nil {
			s.mu.Unlock()
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, refused
		}
		if r.idle != nil {
			r.idle()
			r.idle = nil
			s.inFlight++
		}
		s.mu.Unlock()
		r.requests.Add(1)
		return next(req)
	}
}

// retryWait is the call trace of the job r that tells the starter when
// the job waits before a retry: from the end of an attempt the retry
// policy sends again (it was not sent, or refused) to the next attempt's
// send (its gate), nothing of the job is in flight, so a stop cancels it
// at once, as it does a job that has not sent. The job then ends as its
// last attempt did, not sent or refused, and a rerun sends it.
func (s *starter) retryWait(r *jobRun) *creative.CallTrace {
	return &creative.CallTrace{AttemptDone: func(_ context.Context, a creative.AttemptInfo) {
		if !a.Retry || a.Verdict != creative.VerdictNotSent && a.Verdict != creative.VerdictRefused {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.idle == nil {
			r.idle = context.AfterFunc(s.stopping, r.cancel)
			s.inFlight--
		}
	}}
}

// end ends the job r.
func (s *starter) end(r *jobRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.cancel()
	if r.idle != nil {
		r.idle()
	} else {
		s.inFlight--
	}
}

// stop lets no job send its first request any more, cancels those waiting
// to, and returns how many jobs are in flight.
func (s *starter) stop() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopAll()
	return s.inFlight
}

// maybePaid reports whether the job's last attempt, rec, may have been
// paid: its outcome is unknown, or it is a call's claim that never ended.
func maybePaid(rec *record) bool {
	return rec != nil && (rec.State == Unknown || rec.State == Claimed && rec.Kind != KindDownload)
}

// send claims the next attempt of t after last and sends its request; an
// earlier attempt that may have been paid is sent again on the caller's
// say-so (Options.ResendUnknown). When the ledger did not allow the claim,
// it returns the job's last attempt as claim does, to decide again; else
// nil.
func (ru *run) send(ctx context.Context, t *task, last *record) (*record, bool) {
	jr, ctx, ok := ru.st.begin(ctx)
	if !ok {
		return nil, false
	}
	defer ru.st.end(jr)
	after := maybePaid(last)
	rec := &record{Record: Record{Job: t.key, ID: t.job.ID, Line: t.job.Line, Op: t.op.Name, Attempt: nextAttempt(last), State: Claimed,
		Fields: t.vals, Worker: ru.o.Worker, Run: ru.token, Time: time.Now().UTC()}, Kind: KindCall, Stem: t.stem()}
	if ok, last, live := ru.claim(ctx, rec); !ok {
		return last, live
	}
	start := time.Now()
	req, closeFiles, err := ru.checker.files.request(t)
	var res any
	var resp *http.Response
	if err == nil {
		// The budget first: the lease is checked last, right before the send.
		opts := append([]creative.Option{creative.WithMiddleware(ru.spend.gate(ru, t.op.Name), ru.st.gate(jr, ru.lease)),
			creative.WithCallTrace(ru.st.retryWait(jr)), creative.WithResponseInto(&resp)}, ru.o.CallOptions...)
		res, err = opcall.Call(ctx, ru.c, t.op, req, opts...)
		closeFiles()
	}
	rec.Requests = int(jr.requests.Load())
	if resp != nil {
		rec.RequestID = resp.Header.Get("X-Request-Id")
	}
	if err != nil {
		if why := everyJobAlike(err); why != "" {
			ru.stopFor(why, err)
		}
		rec.State = Classify(err)
		if rec.Requests == 0 {
			rec.State = Refused // nothing went out
		}
		rec.Error = strings.TrimPrefix(err.Error(), "creative: ")
		if after && rec.State != Unknown {
			// This attempt did nothing (not sent, refused, failed), but an
			// earlier one may have been paid: the job stays maybe paid, so
			// that only a run with ResendUnknown sends it again.
			rec.State = Unknown
			rec.Error += "; an earlier attempt may have been paid"
		}
		ru.finish(ctx, rec, start, nil)
		return nil, false
	}
	ru.save(ctx, rec, res, start)
	return nil, false
}

// nextAttempt is the number of the attempt after last.
func nextAttempt(last *record) int {
	if last == nil {
		return 1
	}
	return last.Attempt + 1
}

// everyJobAlike says, in a few words, why err is an answer every job of
// the run would get alike (the key refused, a base URL that does not
// answer as the service: no such path, or a web page where the service
// answers JSON or media), or "" for an answer of this job alone, such as
// one too large or of the wrong shape, which fails its job only.
func everyJobAlike(err error) string {
	ae, ok := errors.AsType[*creative.APIError](err)
	if !ok {
		return ""
	}
	mt, _, _ := mime.ParseMediaType(ae.Header.Get("Content-Type"))
	switch {
	case ae.StatusCode == http.StatusUnauthorized || ae.StatusCode == http.StatusForbidden:
		return "the service refused the access key (HTTP " + http.StatusText(ae.StatusCode) + ")"
	case ae.StatusCode == http.StatusNotFound || ae.StatusCode == http.StatusMethodNotAllowed:
		return "the base URL does not answer as the service (HTTP " + http.StatusText(ae.StatusCode) + ")"
	case ae.StatusCode/100 == 2 && mt == "text/html":
		return "the base URL does not answer as the service (a web page)"
	}
	return ""
}

// checkDone checks that a done job's files are in place, and downloads
// them again (free) when some are gone and its answer had links. When its
// answer had none (its bytes came in the answer, which is kept nowhere
// else), only paying again writes them: on the caller's say-so
// (Options.RepayLost).
func (ru *run) checkDone(ctx context.Context, t *task, last *record) (*record, bool) {
	for _, f := range last.Files {
		ok, err := ru.store.Exists(ctx, f)
		if err != nil {
			if !cancelled(ctx, err) {
				ru.started.Add(1)
				ru.failLedger(&storeError{err}, nil)
			}
			return nil, false
		}
		if !ok && len(last.URLs) > 0 {
			return ru.redownload(ctx, last)
		}
		if !ok && ru.o.RepayLost {
			return ru.send(ctx, t, last)
		}
		if !ok {
			ru.skip(last, func(s *Summary) { s.Missing++ })
			return nil, false
		}
	}
	ru.skip(last, func(s *Summary) { s.DoneBefore++ })
	return nil, false
}

// redownload claims the attempt after last, an answered job's, to fetch
// its files again.
func (ru *run) redownload(ctx context.Context, last *record) (*record, bool) {
	rec := *last
	rec.Attempt, rec.Kind, rec.State, rec.Worker, rec.Run = last.Attempt+1, KindDownload, Claimed, ru.o.Worker, ru.token
	rec.Files, rec.Error, rec.Requests, rec.Seconds, rec.Lost = nil, "", 0, 0, false
	rec.Time = time.Now().UTC()
	if ok, last, live := ru.claim(ctx, &rec); !ok {
		return last, live
	}
	ru.download(ctx, &rec, time.Now())
	return nil, false
}
