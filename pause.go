package creative

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// This file is the pause of an access key: a 429 or 503 with Retry-After
// asks every call of the Client that sends the same key to the service to
// wait, not only the one that got it; calls with another key go on.

// pauseOf returns the pause of the calls that send keys (the call's key
// first) to the Client's origin: a 429 or 503 is one account's answer, and
// another account's calls, made with WithAccessKey on the same Client, go
// on. The Client's own key has its pause at hand; another key has one only
// while the service asks its calls to wait (nil otherwise: a Client given
// a new key for each call, one per customer, holds no pause for each).
func (c *Client) pauseOf(keys []string) *pause {
	if len(keys) == 0 || keys[0] == c.key()[0] {
		return c.pause
	}
	if p, ok := c.pauses.Load(keys[0]); ok {
		return p.(*pause)
	}
	return nil
}

// reportPause reports an attempt's answer (resp, err) to the pause of keys
// it waited on, p (nil when there was none): an answer that asks for a
// pause extends the pause the key has now, made when it has none, which
// forgets itself once it ends.
func (c *Client) reportPause(keys []string, p *pause, resp *http.Response, err error, l *slog.Logger, op string) {
	asks := p != c.pause && asksWait(resp) // another key's pause, found or made
	if asks {
		_, asks = retryAfter(resp, time.Now())
	}
	if asks {
		q := c.pauseOf(keys)
		if q == nil {
			made := &pause{}
			made.forget = func() { c.pauses.CompareAndDelete(keys[0], made) }
			v, _ := c.pauses.LoadOrStore(keys[0], made)
			q = v.(*pause)
		}
		if q != p && p != nil {
			p.report(nil, err, nil, "") // the attempt that went first is back
		}
		p = q
	}
	p.report(resp, err, l, op)
}

// pause is the wait a 429 or 503 with Retry-After asks of the calls of one
// access key to the service.
// Until it ends no attempt is sent; when it ends, one attempt goes first and
// the others wait for its answer, so that a crowd of callers does not hit a
// rate-limited service all at once again.
type pause struct {
	on     atomic.Bool // until is set: the only field read without mu
	mu     sync.Mutex
	until  time.Time     // zero when not paused
	length time.Duration // how long the pause was asked to last
	status int           // the status that asked for the pause
	probe  bool          // the first attempt after the pause is out
	change chan struct{} // closed when until or probe changes
	forget func()        // drops the pause of another key than the Client's once it ends
}

// A pausedError is returned, without sending anything, by a call whose
// deadline comes before the end of the client's pause.
type pausedError struct {
	until  time.Time
	status int
}

func (e *pausedError) Error() string {
	return fmt.Sprintf("the service asked every call with this access key to wait until %s, after this call's deadline or more than %v away: nothing sent",
		e.until.UTC().Format("2006-01-02T15:04:05.000Z07:00"), MaxRetryAfter)
}

// maxPause bounds a pause, so that a Retry-After of years (or a number too
// large to represent) cannot stop a Client for good; it is far above any
// wait a service asks in earnest.
const maxPause = 24 * time.Hour

// extend makes the pause last what the service asked, d from now (at most
// maxPause); p.mu is held. It reports whether the pause was extended.
func (p *pause) extend(now time.Time, d time.Duration, status int) bool {
	until := now.Add(min(d, maxPause))
	if !until.After(p.until) {
		return false
	}
	p.until, p.length, p.status = until, min(d, maxPause), status
	p.on.Store(true)
	return true
}

func (p *pause) signal() {
	if p.change != nil {
		close(p.change)
		p.change = nil
	}
}

// wait blocks while the client is paused, within ctx; it returns a
// *pausedError at once when the pause ends after ctx's deadline, or more than
// MaxRetryAfter from now. A call that begins to wait is logged with l.
func (p *pause) wait(ctx context.Context, l *slog.Logger, op string) error {
	if !p.active() {
		return nil
	}
	logged := false
	for {
		p.mu.Lock()
		if p.until.IsZero() {
			p.mu.Unlock()
			return nil
		}
		now := time.Now()
		until := p.until
		left := until.Sub(now)
		if left <= 0 && !p.probe {
			p.probe = true // this attempt goes first
			p.mu.Unlock()
			return nil
		}
		if left <= 0 {
			// The first attempt is out: wait for its answer, but no longer
			// than the pause lasted (at most MaxRetryAfter), so that a call
			// that takes minutes does not hold every other call.
			left += min(p.length, MaxRetryAfter)
			if left <= 0 {
				p.mu.Unlock()
				return nil
			}
		}
		if deadline, ok := ctx.Deadline(); left > MaxRetryAfter || (ok && deadline.Before(until)) {
			err := &pausedError{until: until, status: p.status}
			p.mu.Unlock()
			return err
		}
		if p.change == nil {
			p.change = make(chan struct{})
		}
		change := p.change
		p.mu.Unlock()
		if !logged && l != nil {
			logged = true
			l.LogAttrs(ctx, slog.LevelInfo, "creative: waiting for the pause", slog.String("operation", op), slog.Time("until", until))
		}
		if err := sleep(ctx, left, change); err != nil {
			return err
		}
	}
}

// active reports whether p is a pause in force; a key without a pause (nil)
// has none.
func (p *pause) active() bool { return p != nil && p.on.Load() }

// sleep waits for d (when positive), change or the end of ctx.
func sleep(ctx context.Context, d time.Duration, change <-chan struct{}) error {
	var tick <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		tick = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-change:
	case <-tick:
	}
	return nil
}

// report ends the pause after an answer that does not ask for one, extends
// it after one that does (logging with l that op's answer paused the
// Client); either way, or after a failed attempt, the next attempt may go
// first.
func (p *pause) report(resp *http.Response, err error, l *slog.Logger, op string) {
	if p == nil || (!asksWait(resp) && !p.on.Load()) {
		return
	}
	now := time.Now()
	d, asks := retryAfter(resp, now)
	if !asks && !p.on.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case asks:
		if p.extend(now, d, resp.StatusCode) && l != nil {
			l.LogAttrs(context.Background(), slog.LevelInfo, "creative: pausing every call", slog.String("operation", op),
				slog.Int("status", resp.StatusCode), slog.Duration("retry_after", d), slog.Time("until", p.until))
		}
	case p.until.IsZero():
		return
	case err == nil && !now.Before(p.until):
		p.until = time.Time{}
		p.on.Store(false)
		if p.forget != nil {
			p.forget() // a call that still holds it finds it ended
		}
	}
	p.probe = false
	p.signal()
}
