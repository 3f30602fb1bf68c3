package creative

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync/atomic"
)

// This file is the call trace: hooks a call runs as it starts, as each
// attempt starts and is judged by the retry policy, and as it ends, for
// telemetry (the module github.com/creativegen/creative-go/otel builds
// OpenTelemetry spans and metrics on it). Without a CallTrace nothing here
// runs.

// A Verdict is what an attempt, or a whole call, may have cost, as the
// retry policy judged it.
type Verdict string

// The verdicts of an attempt or a call.
const (
	// VerdictAnswered: an answer that sending again would not change (a
	// success, a 400 or another 4xx).
	VerdictAnswered Verdict = "answered"
	// VerdictNotSent: the request did not reach the service whole; nothing
	// was done (ErrNotSent).
	VerdictNotSent Verdict = "not_sent"
	// VerdictRefused: the service said it did not do the work (408, 429,
	// 503: ErrRefused).
	VerdictRefused Verdict = "refused"
	// VerdictUnknown: the request arrived whole and no definitive answer
	// came back; the work may be done and paid (ErrOutcomeUnknown).
	VerdictUnknown Verdict = "unknown"
)

// verdictOf is the exported name of an attempt's kind.
func verdictOf(k attemptKind) Verdict {
	return [...]Verdict{VerdictAnswered, VerdictNotSent, VerdictRefused, VerdictUnknown}[k]
}

// VerdictOf is the verdict of a call that ended with err: VerdictUnknown
// when err matches ErrOutcomeUnknown, VerdictNotSent for ErrNotSent,
// VerdictRefused for ErrRefused, and VerdictAnswered otherwise (nil
// included).
func VerdictOf(err error) Verdict {
	switch {
	case err == nil:
		return VerdictAnswered
	case errors.Is(err, ErrOutcomeUnknown):
		return VerdictUnknown
	case errors.Is(err, ErrNotSent):
		return VerdictNotSent
	case errors.Is(err, ErrRefused):
		return VerdictRefused
	}
	return VerdictAnswered
}

// A CallTrace is a set of hooks a call runs at its stages, as
// httptrace.ClientTrace is for one HTTP request: for telemetry. Give it
// with WithCallTrace. Any hook may be nil. Hooks run on the goroutine
// that is making the call (CallDone on the one that closes a streamed
// answer) and must be quick. A call refused before it enters the pipeline
// (a *ValidationError, a client-only option given to a call) runs none.
type CallTrace struct {
	// CallStart runs once as the call enters the pipeline, before its
	// first attempt. The context it returns (nil keeps ctx) is the call's
	// from then on: each attempt's request carries a context derived from
	// it, and the other hooks of this CallTrace get it.
	CallStart func(ctx context.Context, c CallInfo) context.Context
	// AttemptStart runs as each attempt starts, before it waits for the
	// Client's pause and rate limiter. The context it returns (nil keeps
	// ctx) is the attempt's: middleware and the transport see it in the
	// request, and AttemptDone gets it.
	AttemptStart func(ctx context.Context, a AttemptInfo) context.Context
	// AttemptDone runs once for each attempt that started, with the retry
	// policy's verdict. For the attempt whose answer the call keeps, it
	// runs once that answer was read or failed, just before CallDone: an
	// answer cut off while it was read makes its verdict VerdictUnknown.
	AttemptDone func(ctx context.Context, a AttemptInfo)
	// CallDone runs once as the call ends: with nil once its answer was
	// read and closed (a streamed answer, such as speech, when its caller
	// closes it), or with the call's error.
	CallDone func(ctx context.Context, c CallInfo, err error)
}

// CallInfo describes a call to a CallTrace.
type CallInfo struct {
	// Operation is the operation's name ("image/text-to-image"), the
	// method and path of Execute ("POST /image/v2/new-thing"), or
	// "download".
	Operation string
	// Host and Port are where the call goes (the base URL's, or a
	// Download's).
	Host string
	Port int
	// Attempts is how many attempts were made (in CallDone).
	Attempts int
	// Verdict is what the call may have cost (in CallDone): VerdictOf its
	// error.
	Verdict Verdict
	// StatusCode is the last answer's status, 0 when none came (in
	// CallDone).
	StatusCode int
	// RequestID is the last answer's request id, when it had one (in
	// CallDone): redacted and bounded, as the *APIError's.
	RequestID string
}

// AttemptInfo describes one attempt to a CallTrace.
type AttemptInfo struct {
	// Operation is as in CallInfo.
	Operation string
	// Attempt counts the call's attempts from 1.
	Attempt int
	// Verdict is the retry policy's word on the attempt (in AttemptDone).
	Verdict Verdict
	// Retry says the retry policy sends the request again, after a
	// backoff (in AttemptDone). A call whose context ends during that
	// backoff makes no further attempt: CallInfo.Attempts counts those
	// made.
	Retry bool
	// Reason says why the attempt is retried or, for a failure, why not
	// (in AttemptDone), such as "refused (HTTP 503)" or "outcome unknown:
	// not sent again, the service may have done the work".
	Reason string
	// StatusCode is the answer's status, 0 when none came (in AttemptDone).
	StatusCode int
	// RequestID is the answer's request id, redacted and bounded, as the
	// *APIError's (in AttemptDone).
	RequestID string
	// Err is the attempt's failure when no answer came, or the call's when
	// the answer kept failed as it was read (in AttemptDone).
	Err error
}

// WithCallTrace makes calls run the hooks of t (see CallTrace). Given to
// New, every call runs them; given to a call, that call runs them after
// the Client's. A CallTrace given twice (to New and to a call) runs once.
// Each CallTrace's hooks get the contexts its own hooks returned. The module github.com/creativegen/creative-go/otel makes
// OpenTelemetry spans and metrics with it.
func WithCallTrace(t *CallTrace) Option {
	return func(s *settings) error {
		if t == nil {
			return errors.New("creative: WithCallTrace: nil *CallTrace")
		}
		if !slices.Contains(s.traces, t) {
			s.traces = append(s.traces[:len(s.traces):len(s.traces)], t)
		}
		return nil
	}
}

// callTrace is what a traced call keeps of its trace.
type callTrace struct {
	ctxs    []context.Context // the call's, as each CallTrace's CallStart left it
	actxs   []context.Context // the attempt's, as each AttemptStart left it
	info    CallInfo
	pending *AttemptInfo // the kept answer's attempt, told at the end
	ended   atomic.Bool
}

// traceStart runs CallStart and returns the call's context.
func (cl *call) traceStart(ctx context.Context, host string, port int) context.Context {
	n := len(cl.s.traces)
	ctxs := make([]context.Context, 2*n)
	ct := &callTrace{info: CallInfo{Operation: cl.op, Host: host, Port: port}, ctxs: ctxs[:n], actxs: ctxs[n:]}
	for i, t := range cl.s.traces {
		if t.CallStart != nil {
			if c := t.CallStart(ctx, ct.info); c != nil {
				ctx = c
			}
		}
		ct.ctxs[i], ct.actxs[i] = ctx, ctx
	}
	cl.ct = ct
	return ctx
}

// traceAttempt runs AttemptStart for the attempt about to be sent as req,
// and returns req with the attempt's context.
func (cl *call) traceAttempt(req *http.Request) *http.Request {
	ct := cl.ct
	ctx := req.Context()
	a := AttemptInfo{Operation: cl.op, Attempt: cl.attempts}
	for i, t := range cl.s.traces {
		if t.AttemptStart != nil {
			if c := t.AttemptStart(ctx, a); c != nil {
				ctx = c
			}
		}
		ct.actxs[i] = ctx
	}
	if ctx == req.Context() {
		return req
	}
	return req.WithContext(ctx)
}

// traceVerdict tells AttemptDone the verdict v of the last attempt, which
// got resp or err; the attempt whose answer the call keeps is told at the
// end (traceEnd).
func (cl *call) traceVerdict(resp *http.Response, err error, v verdict, retried bool) {
	a := AttemptInfo{Operation: cl.op, Attempt: cl.attempts, Verdict: verdictOf(v.kind), Retry: retried}
	switch {
	case retried:
		a.Reason = v.kind.String()
	case v.why != "":
		a.Reason = v.why
	case v.retry:
		a.Reason = "retries ran out"
	case v.kind == attemptUnknown:
		a.Reason = "outcome unknown: not sent again, the service may have done the work"
	}
	if resp != nil {
		a.StatusCode = resp.StatusCode
		a.RequestID = cl.requestIDOf(resp.Header)
		if retried {
			a.Reason += " (HTTP " + strconv.Itoa(resp.StatusCode) + ")"
		}
		cl.ct.info.StatusCode, cl.ct.info.RequestID = a.StatusCode, a.RequestID
	}
	if err != nil {
		a.Err = cl.told(err)
	}
	if resp != nil && !retried {
		cl.ct.pending = &a
		return
	}
	cl.traceAttemptDone(a)
}

func (cl *call) traceAttemptDone(a AttemptInfo) {
	for i, t := range cl.s.traces {
		if t.AttemptDone != nil {
			t.AttemptDone(cl.ct.actxs[i], a)
		}
	}
}

// traceEnd ends a traced call with err, once: the kept answer's attempt
// first, then the call.
func (cl *call) traceEnd(err error) {
	ct := cl.ct
	if ct == nil || ct.ended.Swap(true) {
		return
	}
	if a := ct.pending; a != nil {
		if err != nil && a.Verdict == VerdictAnswered && errors.Is(err, ErrOutcomeUnknown) {
			a.Verdict, a.Reason = VerdictUnknown, "the answer was cut off: the service may have done the work"
		}
		if a.Err == nil {
			a.Err = err
		}
		cl.traceAttemptDone(*a)
	}
	ct.info.Attempts, ct.info.Verdict = cl.attempts, VerdictOf(err)
	for i, t := range cl.s.traces {
		if t.CallDone != nil {
			t.CallDone(ct.ctxs[i], ct.info, err)
		}
	}
}

// traceHost is where r goes, for CallInfo.
func (c *Client) traceHost(r *request) (string, int) {
	u := c.base
	if r.rawURL != "" {
		if p, err := url.Parse(r.rawURL); err == nil {
			u = p
		}
	}
	port, _ := strconv.Atoi(portOf(u))
	return u.Hostname(), port
}
