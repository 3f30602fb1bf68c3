package batch

import (
	"errors"
	"net/http"
	"time"

	creative "github.com/creativegen/creative-go"
)

// A State is where a job stands in the ledger.
type State string

// The states of a job. A job is claimed before its request is sent, and
// each later state is recorded durably before the job moves on.
const (
	// Claimed: about to be sent, or in flight. A claim whose worker died
	// stays claimed: its outcome is unknown.
	Claimed State = "claimed"
	// Answered: the answer is stored (its URLs, its text, its decoded
	// images written), but not every file is in place: a rerun downloads
	// the rest, without paying again.
	Answered State = "answered"
	// Done: every output is in place.
	Done State = "done"
	// Failed: the service said no (HTTP 400) or the request was refused
	// before it was sent; nothing was paid. A rerun sends it again.
	Failed State = "failed"
	// Refused: not sent, or refused by the service (429, 503, 408); a
	// rerun sends it again.
	Refused State = "refused"
	// Unknown: sent, and the outcome is unknown: the service may have done
	// the work and charged for it. Sent again only on request.
	Unknown State = "unknown"
)

// Classify says which state a failed call leaves its job in. It is the
// one place that reads the SDK's errors for the ledger, and it reads their
// kinds only: nothing sent or refused by the service (a rerun sends it
// again), a definitive no from the service (failed), or an outcome that is
// unknown. When in doubt it says Unknown, since the call may have been
// paid.
func Classify(err error) State {
	var ae *creative.APIError
	switch {
	case errors.Is(err, creative.ErrOutcomeUnknown):
		return Unknown
	case errors.As(err, new(*creative.ValidationError)):
		return Failed // found before anything was sent
	case errors.Is(err, creative.ErrNotSent), errors.Is(err, creative.ErrRefused), errors.Is(err, creative.ErrRateLimited):
		return Refused
	case !errors.As(err, &ae) || errors.Is(err, creative.ErrUnexpectedResponse):
		return Unknown
	case refusedStatus(ae.StatusCode):
		return Refused
	case ae.StatusCode >= 400 && ae.StatusCode <= 499:
		// 400 is the spec's one failure; 401, 403 and the rest are as
		// definitive: the service answered that it did not do the work.
		return Failed
	}
	return Unknown
}

// refusedStatus reports whether an HTTP status is the service's refusal
// of the work (408, 429, 503): nothing was done, and a rerun sends it.
func refusedStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
}

// A Record is where one attempt at a job stands: what an Event, a
// LedgerError and ReadStatus report.
type Record struct {
	Job     string `json:"job"` // the job's identity: 32 hex digits
	ID      string `json:"id,omitempty"`
	Line    int    `json:"line"`
	Op      string `json:"op"`
	Attempt int    `json:"attempt"` // from 1
	State   State  `json:"state"`
	// Fields are the job's fields as sent: ids resolved, files by their
	// path.
	Fields map[string]any `json:"fields,omitempty"`
	Files  []string       `json:"files,omitempty"` // the keys of its outputs in the Store
	URLs   []string       `json:"urls,omitempty"`
	Text   string         `json:"text,omitempty"`
	Error  string         `json:"error,omitempty"`
	// Lost marks an answered job whose answer can no longer be fetched (a
	// link that died, a stream cut off): only paying again gets it.
	Lost      bool      `json:"lost,omitempty"`
	Requests  int       `json:"requests,omitempty"`
	RequestID string    `json:"requestId,omitempty"`
	Worker    string    `json:"worker,omitempty"`
	Time      time.Time `json:"time"`
	Seconds   float64   `json:"seconds,omitempty"`
	// Run is the token of the run that made the attempt (see Ledger).
	Run string `json:"run,omitempty"`
}

// record is the runner's name for an Entry.
type record = Entry

// An action is what a run does with a job, given its last attempt.
type action int

const (
	actCall      action = iota // send the request (never claimed, failed, refused, or asked for)
	actDownload                // fetch the files of an answer
	actCheck                   // done: check its files are still there
	actLeave                   // leave it: unknown, claimed, lost
	actElsewhere               // leave it: claimed, or its answer being fetched, at this moment by a live worker
)

// decide says what a run does with a job whose last attempt is r; live
// says that r is a claim, or an answer whose files it fetches, of a run
// that still goes (see beating).
func decide(r *record, o *Options, live bool) action {
	if r == nil {
		return actCall
	}
	switch r.State {
	case Failed, Refused:
		return actCall
	case Done:
		return actCheck
	case Answered:
		switch {
		case r.Lost && o.RepayLost:
			return actCall
		case r.Lost:
			return actLeave
		case live:
			return actElsewhere // its run fetches the files
		}
		return actDownload
	case Claimed:
		if live {
			return actElsewhere
		}
		if r.Kind == KindDownload {
			// A download's claim whose worker died: downloading costs nothing.
			return actDownload
		}
	}
	// Unknown, or a claim: maybe paid.
	if o.ResendUnknown {
		return actCall
	}
	return actLeave
}
