package batch

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/opcall"
)

// The life of one job, in the order it lives it: do reads where the job
// stands and decides; claim takes its next attempt; send sends it through
// the starter's gate, which lets an attempt out only while the run's
// lease is proven; then save.go saves its answer and records it.

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
		ru.send(ctx, t, n+1)
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

// send claims attempt n of t and sends its request.
func (ru *run) send(ctx context.Context, t *task, n int) {
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
		opts := append([]creative.Option{creative.WithMiddleware(ru.st.gate(jr, ru.lease)), creative.WithResponseInto(&resp)}, ru.o.CallOptions...)
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
		ru.finish(ctx, rec, start, nil)
		return
	}
	ru.save(ctx, rec, res, start)
}

// everyJobAlike says, in a few words, why err is an answer every job of
// the run would get alike (the key refused, a base URL that does not
// answer as the service), or "" for an answer of this job alone.
func everyJobAlike(err error) string {
	ae, ok := errors.AsType[*creative.APIError](err)
	switch {
	case ok && (ae.StatusCode == http.StatusUnauthorized || ae.StatusCode == http.StatusForbidden):
		return "the service refused the access key (HTTP " + http.StatusText(ae.StatusCode) + ")"
	case ok && (ae.StatusCode == http.StatusNotFound || ae.StatusCode == http.StatusMethodNotAllowed):
		return "the base URL does not answer as the service (HTTP " + http.StatusText(ae.StatusCode) + ")"
	case errors.Is(err, creative.ErrUnexpectedResponse):
		return "the base URL does not answer as the service (an answer that is not the service's)"
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
