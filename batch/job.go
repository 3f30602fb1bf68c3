package batch

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/opcall"
)

// The life of one job, in the order it lives it: do reads where the job
// stands (assess, and beating for a claim of another run) and decides;
// claim takes its next attempt; the starter lets it begin, and send sends
// it through the starter's gate, which lets an attempt out only while the
// run's lease is proven; then save.go saves its answer and records it.

// do takes one job as far as this run can.
func (ru *run) do(ctx context.Context, t *task) {
	if ru.st.stopping.Err() != nil || ctx.Err() != nil {
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
		ru.send(ctx, t, n+1, maybePaid(last))
	case actDownload:
		ru.redownload(ctx, last, n+1)
	case actCheck:
		ru.checkDone(ctx, last, n+1)
	case actLeave:
		ru.skip(last, func(s *Summary) { s.countLeft(last) })
	case actElsewhere:
		ru.elsewhere(last)
	}
}

// assess reads the last attempt of the job with key and says what a run
// does with it, reading a heartbeat only for a claim with no end.
func (r *Runner) assess(ctx context.Context, key string) (*record, int, action, error) {
	last, n, err := latest(ctx, r.store, key)
	if err != nil || last == nil || last.State != Claimed {
		return last, n, decide(last, &r.o, false), err
	}
	live, err := beating(ctx, r.store, last.Run)
	if err != nil || live {
		return last, n, decide(last, &r.o, live), err
	}
	// The claim's run looked gone: it may have ended the job, then itself,
	// between the two reads, so the claim is taken over only if it still
	// stands. When attempt n+1 is made, taking it over finds it taken.
	again, m, err := latest(ctx, r.store, key)
	if err == nil && m == n {
		last = again
	}
	return last, n, decide(last, &r.o, false), err
}

// A modTimer is a Store that tells when an object was last written, by
// its own clock (an object's modification time): a heartbeat's age is
// then read against the store's clock rather than the writer's.
type modTimer interface {
	ModTime(ctx context.Context, key string) (time.Time, error)
}

// beating reports whether the run with token still goes. A run whose lock
// is held on this machine goes, however long ago it beat; one whose lock
// is free is gone. Else its heartbeat says: missing, unreadable, of a
// process gone from this system, or older than its lease plus the skew
// allowance (by the store's clock where the store has one), it is gone.
// No token (an older ledger's record) is a run that is gone. An error is
// the Store's.
func beating(ctx context.Context, s Store, token string) (bool, error) {
	if !isRunToken(token) {
		return false, nil
	}
	switch probeRun(lockFolder(s), token) {
	case lockHeld:
		return true, nil
	case lockFree:
		return false, nil
	}
	b, err := s.Get(ctx, heartbeatKey(token))
	if errors.Is(err, ErrNotExist) {
		return false, nil
	}
	var hb heartbeat
	if err != nil || json.Unmarshal(b, &hb) != nil {
		return false, err
	}
	if hb.System != "" && hb.System == thisSystem() && processGone(hb.PID) {
		return false, nil // killed, on this system
	}
	written := hb.Time
	if mt, ok := s.(modTimer); ok {
		if t, err := mt.ModTime(ctx, heartbeatKey(token)); err == nil {
			written = t
		}
	}
	lt := timesOf(hb.lease())
	return time.Since(written) < lt.length+lt.skew, nil
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
	if ctx.Err() != nil {
		return
	}
	ru.mu.Lock()
	keys := ru.away
	ru.mu.Unlock()
	live := map[string]bool{}
	for _, key := range keys {
		last, _, err := latest(ctx, ru.store, key)
		if err != nil || last == nil || last.State != Claimed || last.Run == ru.token {
			continue
		}
		goes, seen := live[last.Run]
		if !seen {
			if goes, err = beating(ctx, ru.store, last.Run); err != nil {
				return
			}
			live[last.Run] = goes
		}
		if !goes {
			ru.count(func(s *Summary) { s.Elsewhere--; s.Claimed++ })
		}
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

// claim claims rec's attempt while the run's lease is proven, or reports
// false when another worker has it, the lease is in doubt or the ledger
// failed.
func (ru *run) claim(ctx context.Context, rec *record) bool {
	if !ru.lease.held() {
		ru.started.Add(-1)
		return false
	}
	err := putStage(ctx, ru.store, rec, stageClaim)
	if errors.Is(err, ErrExist) {
		ru.elsewhere(rec)
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

// errNotStarted stops the first request of a job once the run is stopping.
var errNotStarted = errors.New("batch: stopping: not sent")

// errLeaseInDoubt stops any request of a job once the run's lease is in
// doubt: another worker may soon send the job again.
var errLeaseInDoubt = errors.New("the run's lease is in doubt")

// A starter decides, under one lock, whether a job may send its first
// request. A job may wait in the client (for a rate limit, or a pause a 429
// asked for) after a worker took it; once the run is stopping, such a job
// is cancelled without sending anything, while jobs that sent are let
// finish: they may be paid for.
type starter struct {
	mu       sync.Mutex
	stopping context.Context // done once stop is called
	stopAll  context.CancelFunc
	inFlight int // jobs that sent and have not ended
}

// A jobRun is one job between a worker taking it and its end.
type jobRun struct {
	cancel   context.CancelFunc
	keep     func() bool // keeps stop from cancelling the job once it sent
	sent     bool        // its first request went out; guarded by starter.mu
	requests atomic.Int32
}

func newStarter() *starter {
	ctx, cancel := context.WithCancel(context.Background())
	return &starter{stopping: ctx, stopAll: cancel}
}

// begin starts a job under ctx, or reports false once the run is stopping.
func (s *starter) begin(ctx context.Context) (*jobRun, context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping.Err() != nil {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(ctx)
	return &jobRun{cancel: cancel, keep: context.AfterFunc(s.stopping, cancel)}, ctx, true
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
		case !r.sent && s.stopping.Err() != nil:
			refused = errNotStarted
		}
		if refused != nil {
			s.mu.Unlock()
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, refused
		}
		if !r.sent {
			r.sent = true
			r.keep()
			s.inFlight++
		}
		s.mu.Unlock()
		r.requests.Add(1)
		return next(req)
	}
}

// end ends the job r.
func (s *starter) end(r *jobRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.cancel()
	r.keep()
	if r.sent {
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
	return rec != nil && (rec.State == Unknown || rec.State == Claimed && rec.Kind != kindDownload)
}

// send claims attempt n of t and sends its request; after says that an
// earlier attempt may have been paid (it is sent again on the caller's
// say-so, Options.ResendUnknown).
func (ru *run) send(ctx context.Context, t *task, n int, after bool) {
	jr, ctx, ok := ru.st.begin(ctx)
	if !ok {
		ru.started.Add(-1)
		return
	}
	defer ru.st.end(jr)
	rec := &record{Record: Record{Job: t.key, ID: t.job.ID, Line: t.job.Line, Op: t.op.Name, Attempt: n, State: Claimed,
		Fields: t.vals, Worker: ru.o.Worker, Run: ru.token, Time: time.Now().UTC()}, Kind: kindCall, Stem: t.stem()}
	if !ru.claim(ctx, rec) {
		return
	}
	start := time.Now()
	req, closeFiles, err := ru.checker.files.request(t)
	var res any
	var resp *http.Response
	if err == nil {
		// The budget first: the lease is checked last, right before the send.
		opts := append([]creative.Option{creative.WithMiddleware(ru.spend.gate(t.op.Name, ru.Stop), ru.st.gate(jr, ru.lease)), creative.WithResponseInto(&resp)}, ru.o.CallOptions...)
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
		return
	}
	ru.save(ctx, rec, res, start)
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
	if !ru.claim(ctx, &rec) {
		return
	}
	ru.download(ctx, &rec, time.Now())
}
