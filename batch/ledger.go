package batch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

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
	case ae.StatusCode == http.StatusServiceUnavailable || ae.StatusCode == http.StatusRequestTimeout || ae.StatusCode == http.StatusTooManyRequests:
		return Refused
	case ae.StatusCode >= 400 && ae.StatusCode <= 499:
		// 400 is the spec's one failure; 401, 403 and the rest are as
		// definitive: the service answered that it did not do the work.
		return Failed
	}
	return Unknown
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
	// Run is the token of the run that made the record, which names its
	// heartbeat (see the package's doc); records of older ledgers have none.
	Run string `json:"run,omitempty"`
}

// A record is what the ledger keeps of an attempt at a job, at one of its
// stages. Each stage is recorded once, by an exclusive create, and never
// replaced; the attempt stands where its last record says. Only the worker
// whose claim was made records the later stages, so two workers never make
// the same attempt.
type record struct {
	Record `json:",inline"`
	Kind   string `json:"kind"` // kindCall or kindDownload
	Stem   string `json:"stem"` // starts the names of the job's files
}

// Kinds of attempt: one that sends the job's request, and one that only
// fetches an earlier answer's files.
const (
	kindCall     = "call"
	kindDownload = "download"
)

// ledgerPrefix holds the ledger in a Store.
const ledgerPrefix = "ledger/"

// The stages of an attempt, in the order they are recorded.
type stage string

const (
	stageClaim    stage = ""         // <job>.0001.json: about to be sent
	stageAnswered stage = "answered" // <job>.0001.answered.json: links and text, before any download
	stageEnd      stage = "end"      // <job>.0001.end.json: how the attempt ended
)

// recordKey is the key of the record of stage st of attempt n (from 1) of
// a job: fanned out by the first three hex digits of the job's key into
// 4,096 folders, so that no folder holds more than a few thousand entries
// at a million jobs, and a job costs no folder of its own.
func recordKey(key string, n int, st stage) string {
	k := fmt.Sprintf("%s%s/%s.%04d", ledgerPrefix, key[:3], key, n)
	if st != stageClaim {
		k += "." + string(st)
	}
	return k + ".json"
}

// jobOf returns the job key of a record's key: <job>.0001[.stage].json.
func jobOf(k string) (string, bool) {
	job, rest, ok := strings.Cut(path.Base(k), ".")
	num, st, _ := strings.Cut(strings.TrimSuffix(rest, ".json"), ".")
	_, err := strconv.Atoi(num)
	ok = ok && len(job) == 32 && err == nil && strings.HasSuffix(rest, ".json") && (st == "" || st == "answered" || st == "end")
	return job, ok
}

// latest returns the last attempt of the job with key, as its last record
// says, and its number; a nil record when the job was never claimed.
// Attempts are numbered without gaps (a worker claims attempt n+1 only
// after reading attempt n), so the last one is found by asking for the
// claims 1, 2, ... until one is missing, then reading that attempt's last
// record: one question for a new job, three (one read) for a job done at
// its first attempt, and no listing of a folder. A record that does not
// parse (one an earlier version cut short in a crash) is passed over for
// the one before it; a claim that does not parse is a claim.
func latest(ctx context.Context, s Store, key string) (*record, int, error) {
	n := 0
	for ; ; n++ {
		ok, err := s.Exists(ctx, recordKey(key, n+1, stageClaim))
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			break
		}
	}
	if n == 0 {
		return nil, 0, nil
	}
	for _, st := range []stage{stageEnd, stageAnswered, stageClaim} {
		b, err := s.Get(ctx, recordKey(key, n, st))
		if errors.Is(err, ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		var r record
		if json.Unmarshal(b, &r) == nil {
			return &r, n, nil
		}
	}
	return &record{Record: Record{Job: key, Attempt: n, State: Claimed}, Kind: kindCall}, n, nil
}

func marshal(r *record) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // a Record always marshals
	}
	return b
}

// putStage records stage st of r's attempt, durably; a claim that another
// worker made first is ErrExist.
func putStage(ctx context.Context, s Store, r *record, st stage) error {
	return s.Create(ctx, recordKey(r.Job, r.Attempt, st), marshal(r))
}

// An action is what a run does with a job, given its last attempt.
type action int

const (
	actCall      action = iota // send the request (never claimed, failed, refused, or asked for)
	actDownload                // fetch the files of an answer
	actCheck                   // done: check its files are still there
	actLeave                   // leave it: unknown, claimed, lost
	actElsewhere               // leave it: claimed at this moment by a live worker
)

// decide says what a run does with a job whose last attempt is r; live
// says that r is a claim whose run still goes (see beating).
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
		if !r.Lost {
			return actDownload
		}
		if o.RepayLost {
			return actCall
		}
		return actLeave
	case Claimed:
		if live {
			return actElsewhere
		}
		if r.Kind == kindDownload {
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
