package creative

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// This file is the retry side of a call: the policy (which answers and
// failures are retried, and after how long) and go-retryablehttp adapted to
// it. Only this file and transport.go import go-retryablehttp.

// send runs the attempts of cl's request through go-retryablehttp with the
// client's policy, and returns the last answer or the last failure.
func (cl *call) send(req *http.Request) (*http.Response, error) {
	rreq := &retryablehttp.Request{Request: req}
	if err := cl.setBody(rreq); err != nil {
		return nil, err
	}
	if _, isJSON := cl.body.(*jsonBody); isJSON && cl.direct && cl.c.plainHTTP {
		if resp, done, err := cl.firstAnswer(req); done {
			return resp, err
		}
	}
	cl.rc = retryablehttp.Client{
		HTTPClient:     &cl.hc,
		RetryWaitMin:   cl.s.waitMin,
		RetryWaitMax:   cl.s.waitMax,
		RetryMax:       cl.s.maxRetries,
		RequestLogHook: onAttemptHook, // they find the call in the request's context (callctx.go)
		CheckRetry:     checkRetryHook,
		ErrorHandler:   retryablehttp.PassthroughErrorHandler,
	}
	return cl.rc.Do(rreq)
}

// firstAnswer sends the first attempt of a plain call (an operation's
// JSON with the Client's settings, whose http.Client has no cookie jar and
// no Timeout) straight to the call's transport. A 2xx answer is the call's
// end: go-retryablehttp would hand it back after the same policy's word
// (checkRetry), and the http.Client would add nothing to it. Anything else
// (a failure, a redirect, an error status) is kept for go-retryablehttp,
// whose first attempt gets it from the transport instead of the network
// (replay): the http.Client follows or refuses the redirect and wraps the
// failure, the policy judges it, and any retry is sent, each as for any
// call. Nothing is sent twice.
func (cl *call) firstAnswer(req *http.Request) (resp *http.Response, done bool, err error) {
	cl.onAttempt(nil, req, 0)
	resp, err = cl.tr.RoundTrip(req)
	if err != nil || !answeredWell(resp.StatusCode) {
		cl.replay = &attemptOutcome{resp: resp, err: err}
		return nil, false, nil
	}
	// A 2xx is answered: never retried. A context that ended after it is
	// the error go-retryablehttp's PassthroughErrorHandler returns.
	_, err = cl.checkRetry(req.Context(), resp, nil)
	return resp, true, err
}

// attemptOutcome is what an attempt's transport returned.
type attemptOutcome struct {
	resp *http.Response
	err  error
}

// retrier holds go-retryablehttp's client of one call inside the call, so
// that it costs no allocation of its own.
type retrier struct{ rc retryablehttp.Client }

// setBody gives rreq the call's body, opened anew for each attempt. A JSON
// body's bytes are handed to each attempt by onAttempt, in the form
// net/http knows to be in memory (so the request goes out in one write),
// and its request has a GetBody only once an answer redirects it with a
// 307 or 308 (lendBody); any other body is opened by its own open, through
// go-retryablehttp, which stops the call when it fails. ContentLength is
// the body's own word.
func (cl *call) setBody(rreq *retryablehttp.Request) error {
	var err error
	switch b := cl.body.(type) {
	case nil:
		return nil
	case *jsonBody:
	default:
		ctx, stall := rreq.Context(), mayStall(b)
		err = rreq.SetBody(retryablehttp.ReaderFunc(func() (io.Reader, error) {
			r, err := b.open()
			if err != nil {
				return nil, err
			}
			if stall {
				r = untilDone(ctx, r)
			}
			return cl.tr.watch(r), nil
		}))
	}
	rreq.ContentLength = cl.body.size()
	return err
}

// onAttempt counts attempts, gives a JSON body to the attempt's request and
// clears what the transport saw of the last one; go-retryablehttp calls it
// before each attempt.
func (cl *call) onAttempt(_ retryablehttp.Logger, req *http.Request, i int) {
	if cl.replay != nil { // the first attempt was sent (firstAnswer)
		return
	}
	if b, ok := cl.body.(*jsonBody); ok {
		req.Body, _ = b.readCloser()
		cl.sent = req
	}
	cl.attempts = i + 1
	if cl.s.logger != nil { // the attempt's duration is logged (logAttempt)
		cl.started = time.Now()
	}
	if i > 0 { // a call's transport starts clear
		cl.tr.clear()
	}
}

// checkRetry is the client's retry policy as go-retryablehttp asks for it:
// it gathers what the attempt saw, decides with policy and logs the attempt
// with its kind.
func (cl *call) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	var now time.Time // read only when the answer may ask for a wait
	seen := attemptSeen{
		err:      err,
		written:  err != nil && cl.tr.written(), // kindOf reads it for a failure only
		free:     cl.body == nil,
		ctxDone:  ctx.Err() != nil,
		payAgain: cl.s.payAgain,
		bodySent: cl.body != nil && cl.body.sent(),
	}
	if resp != nil {
		seen.status = resp.StatusCode
		if asksWait(resp) {
			now = time.Now()
			seen.retryAfter, seen.asked = retryAfter(resp, now)
		}
	}
	seen.deadline, _ = ctx.Deadline()
	v := policy(seen, now)
	cl.last, cl.retryAfter = v, seen.retryAfter
	if v.kind == attemptUnknown {
		cl.unknowns++
	}
	cl.logAttempt(ctx, resp, err, v.kind)
	if cl.ct != nil {
		cl.traceVerdict(resp, err, v, v.retry && !seen.ctxDone && cl.attempts <= cl.s.maxRetries)
	}
	if seen.ctxDone {
		closeDropped(resp, err)
		return false, ctx.Err()
	}
	if v.retry {
		cl.rc.Backoff = cl.backoff // made only for a call that may retry
	}
	if v.retry && resp != nil && cl.attempts <= cl.s.maxRetries {
		// Another attempt follows. go-retryablehttp would now read up to
		// 4 KiB of this answer, before its backoff, to reuse the
		// connection: a body that drips would hold the retry until the
		// deadline. The last answer is kept whole, for its error.
		drain(resp.Body)
		resp.Body = http.NoBody
	}
	return v.retry, nil
}

// closeDropped closes the answer of an attempt whose call ends with its
// context's error: no one reads it. An answer that came with an error (a
// redirect refused) was closed by the http.Client.
func closeDropped(resp *http.Response, err error) {
	if resp != nil && err == nil {
		_ = resp.Body.Close()
	}
}

// lendBody gives the attempt's request, which http.Client follows
// redirects of, the GetBody of a JSON body, when an answer to it redirects
// with a 307 or 308: http.Client follows one only when it can send the
// body again, to the hop the redirect policy allowed (checkRedirect), and
// the transport hands no hop's GetBody to net/http (roundTrip).
func (cl *call) lendBody() {
	if b, ok := cl.body.(*jsonBody); ok && cl.sent != nil && cl.sent.GetBody == nil {
		cl.sent.GetBody = b.readCloser
	}
}

// drainWait bounds the time drain spends on a failed answer's body.
const drainWait = 100 * time.Millisecond

// drain reads what is left of a failed answer's body, up to 4 KiB, and
// closes it, so that its connection can serve the retry; it gives up after
// drainWait, so that a body that drips costs the connection, not the retry.
func drain(body io.ReadCloser) {
	t := time.AfterFunc(drainWait, func() { _ = body.Close() })
	defer t.Stop()
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 4<<10))
	_ = body.Close()
}

// An attemptKind is what a finished attempt may have cost. A failed attempt
// is one of three kinds, told apart by types and by what the transport saw
// (httptrace's WroteRequest), never by the text of an error.
type attemptKind int

const (
	// attemptAnswered: a success, or an answer that sending again does not
	// change (400 and the other 4xx, 501, 505, a redirect not followed).
	attemptAnswered attemptKind = iota
	// attemptNotSent: the request never reached the service whole (DNS,
	// dial, TLS, a connection closed or reset before the request was
	// written, a per-attempt timeout before that, a local failure).
	attemptNotSent
	// attemptRefused: the service answered that it did not do the work:
	// 408, 429 or 503, with or without Retry-After.
	attemptRefused
	// attemptUnknown: the request arrived whole and no definitive answer
	// came back (a reset, EOF or per-attempt timeout after it was written,
	// any other 5xx, an answer cut off). The work may be done and paid.
	attemptUnknown
)

func (o attemptKind) String() string {
	return [...]string{"answered", "not sent", "refused", "outcome unknown"}[o]
}

// attemptSeen is what one attempt saw, as the retry policy reads it.
type attemptSeen struct {
	status     int           // the answer's status; 0 when none came
	err        error         // the failure, when no answer came
	written    bool          // the request was written whole (httptrace)
	free       bool          // a request without a body (Download): sending it again costs nothing
	ctxDone    bool          // the call's context ended
	payAgain   bool          // WithRetryMayPayAgain
	bodySent   bool          // a one-shot upload went out: it cannot be sent again
	retryAfter time.Duration // the wait the answer asked for, when asked
	asked      bool          // the answer carried a Retry-After
	deadline   time.Time     // the call's deadline; zero when it has none
}

// A verdict is the policy's answer about one attempt.
type verdict struct {
	kind  attemptKind
	retry bool
	why   string // why a failure that could be retried was not
}

// policy is the retry policy: given what an attempt saw, the kind of the
// attempt and whether to send the request again. Not sent and refused are
// retried; an unknown outcome only with WithRetryMayPayAgain, or when the
// request costs nothing (a Download); nothing is retried once the context
// ended, when it would fail the same way again, when a one-shot upload is
// gone, or when the wait asked for is too long.
func policy(a attemptSeen, now time.Time) verdict {
	v := verdict{kind: kindOf(a)}
	switch {
	case v.kind == attemptAnswered, a.ctxDone, a.err != nil && !transient(a.err):
		return v
	case v.kind == attemptUnknown && !a.payAgain && !a.free:
		return v // the error says why: the work may be done
	case a.bodySent:
		v.why = notReplayed
	case a.asked && a.retryAfter > MaxRetryAfter:
		v.why = fmt.Sprintf("the service asked to wait %v before retrying, more than the %v the client waits", a.retryAfter, MaxRetryAfter)
	case a.asked && !a.deadline.IsZero() && now.Add(a.retryAfter).After(a.deadline):
		v.why = fmt.Sprintf("the service asked to wait %v before retrying, past the call's deadline", a.retryAfter)
	default:
		v.retry = true
	}
	return v
}

// kindOf is the kind of an attempt: by its answer's status when one came,
// else by whether the request was written whole before it failed.
func kindOf(a attemptSeen) attemptKind {
	switch {
	case a.err != nil && isRedirect(a.err):
		return attemptAnswered // the answer was a redirect the client does not follow
	case a.err != nil && refused(a.err):
		return attemptNotSent // the service said it did not process it, though it may have read it all
	case a.err != nil && a.written:
		return attemptUnknown
	case a.err != nil:
		return attemptNotSent
	case a.ctxDone && answeredWell(a.status):
		// The work is done, and the call fails with its context: sending
		// it again may pay again.
		return attemptUnknown
	case a.status == http.StatusRequestTimeout, a.status == http.StatusTooManyRequests, a.status == http.StatusServiceUnavailable:
		return attemptRefused
	case a.status >= 500 && a.status <= 599 && a.status != http.StatusNotImplemented && a.status != http.StatusHTTPVersionNotSupported:
		return attemptUnknown
	}
	return attemptAnswered
}

// answeredWell reports whether status is a success's (2xx).
func answeredWell(status int) bool { return status >= 200 && status <= 299 }

// refused reports whether err is a failure of the network that says the
// service did not process the request (transport.go, unprocessed).
func refused(err error) bool {
	var ae *attemptError
	return errors.As(err, &ae) && ae.refused
}

// isRedirect reports whether err is a redirect the client refused.
func isRedirect(err error) bool {
	var redir *redirectError
	return errors.As(err, &redir)
}

func (cl *call) logAttempt(ctx context.Context, resp *http.Response, err error, kind attemptKind) {
	l := cl.s.logger
	if l == nil {
		return
	}
	attrs := []slog.Attr{slog.String("operation", cl.op), slog.Int("attempt", cl.attempts), slog.String("kind", kind.String()),
		slog.Duration("duration", time.Since(cl.started))}
	if resp != nil {
		attrs = append(attrs, slog.Int("status", resp.StatusCode), slog.Int64("bytes", resp.ContentLength))
		if id := cl.requestIDOf(resp.Header); id != "" {
			attrs = append(attrs, slog.String("request_id", id))
		}
	} else if err != nil {
		attrs = append(attrs, slog.String("error", cl.told(err).Error()))
	}
	l.LogAttrs(ctx, slog.LevelDebug, "creative: attempt", attrs...)
}

// transient reports whether an attempt's failure may pass on its own. Only
// failures of the network are: the transport marks them as attemptErrors.
// Anything the client itself refused (a redirect, a Location it cannot
// parse, a local read of an upload, the pause, the rate limiter) and
// anything that will fail the same way again (the context's end, a
// certificate or TLS handshake problem) is not.
func transient(err error) bool {
	var ae *attemptError
	if !errors.As(err, &ae) {
		return false
	}
	if ae.timedOut {
		return true
	}
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalidCert      x509.CertificateInvalidError
		hostname         x509.HostnameError
		verification     *tls.CertificateVerificationError
		record           tls.RecordHeaderError
		alert            tls.AlertError
		source           *sourceError
		private          *privateAddrError
	)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &unknownAuthority), errors.As(err, &invalidCert), errors.As(err, &hostname),
		errors.As(err, &verification), errors.As(err, &record), errors.As(err, &alert),
		errors.As(err, &source), errors.As(err, &private):
		return false
	}
	return true
}

// retryAfter reads the Retry-After header of a 429 or 503 answer, in seconds
// or as an HTTP date. A number of seconds too large to represent is the
// longest duration there is: it asks for a wait longer than any call makes.
func retryAfter(resp *http.Response, now time.Time) (time.Duration, bool) {
	if !asksWait(resp) {
		return 0, false
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if allDigits(v) {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > math.MaxInt64/int64(time.Second) {
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// asksWait reports whether resp is an answer that may ask for a wait
// (Retry-After): a 429 or a 503.
func asksWait(resp *http.Response) bool {
	return resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// backoff waits what the service asked for, or else a full-jitter
// exponential delay: uniform in [0, min(max, min·2^attempt)].
func (cl *call) backoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	wait := cl.retryAfter
	if wait == 0 {
		ceil := max
		if attempt < 30 {
			if d := min << attempt; d > 0 && d < max {
				ceil = d
			}
		}
		wait = time.Duration(rand.Int64N(int64(ceil) + 1))
	}
	if l := cl.s.logger; l != nil {
		attrs := []slog.Attr{slog.String("operation", cl.op), slog.Int("attempt", cl.attempts), slog.Duration("wait", wait)}
		if resp != nil {
			attrs = append(attrs, slog.Int("status", resp.StatusCode))
		}
		l.LogAttrs(context.Background(), slog.LevelInfo, "creative: retrying", attrs...)
	}
	return wait
}

// notReplayed explains why a retryable failure of an upload was not retried.
const notReplayed = "not retried: the upload came from a one-shot reader whose bytes were already sent; give a path, bytes or an io.ReaderAt to make it retryable"

// failure turns the error of send into the error a caller gets, of the
// kind of the last attempt.
func (cl *call) failure(ctx context.Context, err error) error {
	var (
		paused *pausedError
		redir  *redirectError
	)
	switch {
	case errors.As(err, &paused):
		// The attempt refused by the pause was counted but never sent.
		return &APIError{Operation: cl.op, StatusCode: paused.status, Attempts: cl.attempts - 1, RetryAfter: time.Until(paused.until),
			Message: paused.Error(), paused: true, kind: cl.costOf(attemptNotSent), mayHavePaid: cl.unknowns, resent: cl.unknowns > 0}
	case errors.As(err, &redir):
		return &APIError{Operation: cl.op, StatusCode: redir.status, Attempts: cl.attempts, Message: cl.message(redir.Error()), unexpected: true}
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w (%v)", ctxErr, err)
	}
	if cl.last.why != "" {
		err = fmt.Errorf("%w (%s)", err, cl.last.why)
	}
	kind := cl.last.kind
	if kind == attemptAnswered { // no attempt was judged: none was sent
		kind = attemptNotSent
	}
	return &NetworkError{Operation: cl.op, Attempts: cl.attempts, Err: cl.told(err), kind: cl.costOf(kind), mayHavePaid: cl.unknowns, resent: cl.unknowns > 0 && cl.last.kind != attemptUnknown}
}

// told is a failure of the network as a call tells it, in its error, a
// log line or a trace: redacted and, past a message's length, cut as a
// message from the service is. net/http quotes a malformed status line,
// header line or Content-Length whole, up to the headers' 1 MiB. The
// cause stays, for errors.Is and errors.As.
func (cl *call) told(err error) error {
	err = cl.redactErr(err)
	if err == nil {
		return nil
	}
	if text := err.Error(); len(text) > maxMessage {
		return &boundedError{err: err, text: cl.message(text)}
	}
	return err
}

// costOf is the kind the call's error reports when its last attempt was of
// kind k. Once any attempt's outcome was unknown, the call may have been
// paid whatever came after (a retry opted in to with WithRetryMayPayAgain,
// then refused or not sent), so it reports an unknown outcome. A request
// without a body (a Download) costs nothing to send again: its outcome is
// never unknown in the sense of ErrOutcomeUnknown.
func (cl *call) costOf(k attemptKind) attemptKind {
	switch {
	case cl.body == nil && k == attemptUnknown:
		return attemptAnswered
	case cl.body != nil && cl.unknowns > 0:
		return attemptUnknown
	}
	return k
}
