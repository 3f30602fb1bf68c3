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
	if cl.body != nil {
		// The body is opened anew for each attempt; ContentLength is the
		// body's own word, not a probe of a first reader.
		if err := rreq.SetBody(retryablehttp.ReaderFunc(cl.body.open)); err != nil {
			return nil, err
		}
		req.ContentLength = cl.body.size()
	}
	rc := retryablehttp.Client{
		HTTPClient:     &cl.hc,
		RetryWaitMin:   cl.s.waitMin,
		RetryWaitMax:   cl.s.waitMax,
		RetryMax:       cl.s.maxRetries,
		RequestLogHook: cl.onAttempt,
		CheckRetry:     cl.checkRetry,
		Backoff:        cl.backoff,
		ErrorHandler:   retryablehttp.PassthroughErrorHandler,
	}
	cl.started = time.Now()
	return rc.Do(rreq)
}

// onAttempt counts attempts; go-retryablehttp calls it before each one.
func (cl *call) onAttempt(_ retryablehttp.Logger, _ *http.Request, i int) {
	cl.attempts = i + 1
	cl.started = time.Now()
}

// checkRetry is the client's retry policy as go-retryablehttp asks for it:
// it logs the attempt, then decides with retry.
func (cl *call) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	cl.logAttempt(ctx, resp, err)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return false, ctxErr
	}
	again := cl.retry(ctx, resp, err)
	if again && resp != nil && cl.attempts <= cl.s.maxRetries {
		// Another attempt follows. go-retryablehttp would now read up to
		// 4 KiB of this answer, before its backoff, to reuse the
		// connection: a body that drips would hold the retry until the
		// deadline. The last answer is kept whole, for its error.
		drain(resp.Body)
		resp.Body = http.NoBody
	}
	return again, nil
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

// retry decides with retryable, the one-shot rule and the Retry-After rule.
func (cl *call) retry(ctx context.Context, resp *http.Response, err error) bool {
	cl.retryAfter = 0
	if !retryable(resp, err) {
		return false
	}
	if cl.body != nil && cl.body.sent() {
		cl.stopped = notReplayed
		return false
	}
	d, ok := retryAfter(resp, time.Now())
	if !ok {
		return true
	}
	cl.retryAfter = d // the transport paused the client for it already
	if d > MaxRetryAfter {
		cl.stopped = fmt.Sprintf("the service asked to wait %v before retrying, more than the %v the client waits", d, MaxRetryAfter)
		return false
	}
	if deadline, ok := ctx.Deadline(); ok && time.Now().Add(d).After(deadline) {
		cl.stopped = fmt.Sprintf("the service asked to wait %v before retrying, past the call's deadline", d)
		return false
	}
	return true
}

func (cl *call) logAttempt(ctx context.Context, resp *http.Response, err error) {
	l := cl.s.logger
	if l == nil {
		return
	}
	attrs := []slog.Attr{slog.String("operation", cl.op), slog.Int("attempt", cl.attempts), slog.Duration("duration", time.Since(cl.started))}
	if resp != nil {
		attrs = append(attrs, slog.Int("status", resp.StatusCode), slog.Int64("bytes", resp.ContentLength))
		if id := requestID(resp.Header); id != "" {
			attrs = append(attrs, slog.String("request_id", cl.redact(id)))
		}
	} else if err != nil {
		attrs = append(attrs, slog.String("error", cl.redact(err.Error())))
	}
	l.LogAttrs(ctx, slog.LevelDebug, "creative: attempt", attrs...)
}

// retryable reports whether an attempt that ended with resp or err may be
// sent again. Connection failures and 408, 429, 500, 502, 503 and 504 are
// passing troubles; 400 is the service's definitive answer, and any other
// status (other 4xx, 501, 2xx, 3xx, 1xx) will not change on a retry.
func retryable(resp *http.Response, err error) bool {
	if err != nil {
		return transient(err)
	}
	switch resp.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// transient reports whether an attempt's failure may pass on its own. Only
// failures of the network are: the transport marks them as attemptErrors.
// Anything the client itself refused (a redirect, a Location it cannot
// parse, a local read of an upload) and anything that will fail the same way
// again (the context's end, a certificate or TLS handshake problem) is not.
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
		paused           *pausedError
	)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &unknownAuthority), errors.As(err, &invalidCert), errors.As(err, &hostname),
		errors.As(err, &verification), errors.As(err, &record), errors.As(err, &alert),
		errors.As(err, &source), errors.As(err, &paused):
		return false
	}
	return true
}

// retryAfter reads the Retry-After header of a 429 or 503 answer, in seconds
// or as an HTTP date. A number of seconds too large to represent is the
// longest duration there is: it asks for a wait longer than any call makes.
func retryAfter(resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
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

// failure turns the error of send into the error a caller gets.
func (cl *call) failure(ctx context.Context, err error) error {
	var (
		paused *pausedError
		redir  *redirectError
	)
	switch {
	case errors.As(err, &paused):
		// The attempt refused by the pause was counted but never sent.
		return &APIError{Operation: cl.op, StatusCode: paused.status, Attempts: cl.attempts - 1, RetryAfter: time.Until(paused.until),
			Message: paused.Error(), paused: true}
	case errors.As(err, &redir):
		return &APIError{Operation: cl.op, StatusCode: redir.status, Attempts: cl.attempts, Message: cl.message(redir.Error()), unexpected: true}
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w (%v)", ctxErr, err)
	}
	if cl.stopped != "" {
		err = fmt.Errorf("%w (%s)", err, cl.stopped)
	}
	return &NetworkError{Operation: cl.op, Attempts: cl.attempts, Err: cl.redactErr(err)}
}
