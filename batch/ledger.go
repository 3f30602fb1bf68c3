package batch

import (
	"context"
	"encoding/base64"
	"encoding/hex"
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
type record = Entry

// Kinds of attempt: one that sends the job's request, and one that only
// fetches an earlier answer's files.
const (
	kindCall     = KindCall
	kindDownload = KindDownload
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

// stageKey is the key of the record of stage st of r's attempt. The key of
// an end also says how the attempt ended, <job>.0001.<state>[.f<files>].end.json,
// so that a listing of the ledger, a thousand keys a request, tells the
// rules where each job stands without reading its records: the state
// ("done", "failed", ..., "answered-lost") and, for a done job, its files
// (base64url of their keys, one a line; left out when too long for a key).
// Claims and answers keep fixed keys: a claim is made by an exclusive
// create of its key.
func stageKey(r *record, st stage) string {
	if st != stageEnd {
		return recordKey(r.Job, r.Attempt, st)
	}
	info := string(r.State)
	if r.Lost {
		info += lostSuffix
	}
	if r.State == Done {
		if f := base64.RawURLEncoding.EncodeToString([]byte(strings.Join(r.Files, "\n"))); len(f) <= maxFilesInKey {
			info += ".f" + f
		}
	}
	return recordKey(r.Job, r.Attempt, stage(info+"."+string(stageEnd)))
}

// lostSuffix marks the end of an attempt whose answer was lost.
const lostSuffix = "-lost"

// maxFilesInKey bounds the files a key of an end carries (S3, GCS and
// Azure take keys of 1,024 bytes); a job with more is read from its record.
const maxFilesInKey = 600

// A keyInfo is what the key of a record says.
type keyInfo struct {
	job     string
	attempt int
	st      stage // stageClaim, stageAnswered or stageEnd
	// For an end: its state when the key says it (ledgers of earlier
	// versions do not), whether its answer was lost, and a done job's
	// files when the key holds them.
	state    State
	lost     bool
	files    []string
	hasFiles bool
}

// parseKey reads a record's key,
// ledger/<3 hex>/<job>.0001[.answered|[.<info>].end].json, the one place
// keys are read; ok is false for any other key.
func parseKey(k string) (ki keyInfo, ok bool) {
	dir, name := path.Split(k)
	base, isJSON := strings.CutSuffix(name, ".json")
	parts := strings.Split(base, ".")
	if !isJSON || len(parts) < 2 || len(parts[0]) != 32 || len(parts[1]) < 4 || dir != ledgerPrefix+parts[0][:3]+"/" {
		return ki, false
	}
	n, err := strconv.Atoi(parts[1])
	if _, herr := hex.DecodeString(parts[0]); err != nil || herr != nil || n < 1 || strings.ToLower(parts[0]) != parts[0] {
		return ki, false
	}
	ki.job, ki.attempt = parts[0], n
	switch rest := parts[2:]; {
	case len(rest) == 0:
		return ki, true
	case len(rest) == 1 && rest[0] == string(stageAnswered):
		ki.st = stageAnswered
		return ki, true
	case rest[len(rest)-1] == string(stageEnd):
		ki.st = stageEnd
		ki.readInfo(rest[:len(rest)-1])
		return ki, true
	}
	return ki, false
}

// RecordStage says what a key of a Store holds: the record of an
// attempt at a job, "claim", "answered" or "end", or "" for any other key
// (an output, a heartbeat, a share of the budget). A Store that keeps the
// ledger's records apart from other objects, such as batch/sqlitestore's,
// reads its keys with it.
func RecordStage(key string) string {
	ki, ok := parseKey(key)
	switch {
	case !ok:
		return ""
	case ki.st == stageClaim:
		return "claim"
	}
	return string(ki.st)
}

// readInfo reads what the key of an end says of it; what it cannot read
// is left for the record to say.
func (ki *keyInfo) readInfo(info []string) {
	if len(info) == 0 || len(info) > 2 {
		return
	}
	state, lost := strings.CutSuffix(info[0], lostSuffix)
	switch State(state) {
	case Done, Failed, Refused, Unknown, Answered:
	default:
		return
	}
	ki.state, ki.lost = State(state), lost
	if len(info) == 2 && strings.HasPrefix(info[1], "f") {
		b, err := base64.RawURLEncoding.DecodeString(info[1][1:])
		if err == nil {
			ki.hasFiles = true
			if len(b) > 0 {
				ki.files = strings.Split(string(b), "\n")
			}
		}
	}
}

// A jobKeys gathers the keys of one job's records, from a listing, and
// keeps those of its last attempt.
type jobKeys struct {
	job     string
	n       int
	byStage [3]string // the keys of attempt n: claim, answered, end
	end     keyInfo
}

// stageIndex orders the stages of an attempt.
func stageIndex(st stage) int {
	switch st {
	case stageAnswered:
		return 1
	case stageEnd:
		return 2
	}
	return 0
}

func (j *jobKeys) add(key string, ki keyInfo) {
	if ki.attempt > j.n {
		j.n, j.byStage = ki.attempt, [3]string{}
	}
	if ki.attempt == j.n {
		j.byStage[stageIndex(ki.st)] = key
		if ki.st == stageEnd {
			j.end = ki
		}
	}
}

// fromKeys makes the last attempt from what its keys say, when they say
// enough for the rules: nil when its record must be read. A claim (its run
// is in the record), an answer not yet downloaded (its links are), and the
// end of an earlier version's ledger are read; a done job's files, when
// its key holds them, are named and left for the caller to check.
func (j *jobKeys) fromKeys() *record {
	if j.byStage[stageIndex(stageEnd)] == "" || j.end.state == "" || j.end.state == Answered && !j.end.lost ||
		j.end.state == Done && !j.end.hasFiles {
		return nil
	}
	return &record{Record: Record{Job: j.job, Attempt: j.n, State: j.end.state, Lost: j.end.lost, Files: j.end.files}, Kind: kindCall}
}

// read reads the last attempt's last record. A record that does not parse
// (one an earlier version cut short in a crash) is passed over for the one
// before it; a claim that does not parse is a claim.
func (j *jobKeys) read(ctx context.Context, s Store) (*record, int, error) {
	if j.n == 0 {
		return nil, 0, nil
	}
	for i := len(j.byStage) - 1; i >= 0; i-- {
		if j.byStage[i] == "" {
			continue
		}
		b, err := s.Get(ctx, j.byStage[i])
		if errors.Is(err, ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		var r record
		if json.Unmarshal(b, &r) == nil {
			return &r, j.n, nil
		}
	}
	return &record{Record: Record{Job: j.job, Attempt: j.n, State: Claimed}, Kind: kindCall}, j.n, nil
}

// jobPrefix holds the records of the job with key.
func jobPrefix(key string) string { return ledgerPrefix + key[:3] + "/" + key + "." }

// latest returns the last attempt of the job with key, as its last record
// says, and its number; a nil record when the job was never claimed.
// Attempts are numbered without gaps (a worker claims attempt n+1 only
// after reading attempt n). A Store read through a snapshot (see view)
// answers from the listing it took, asking nothing more for a job whose
// keys say where it stands; otherwise the job's records are listed (one
// request) and its last one read (one more).
func latest(ctx context.Context, s Store, key string) (*record, int, error) {
	if v, ok := s.(*view); ok {
		if rec, n, known, err := v.lookup(ctx, key); known || err != nil {
			return rec, n, err
		}
	}
	j := jobKeys{job: key}
	for k, err := range s.List(ctx, jobPrefix(key)) {
		if err != nil {
			return nil, 0, err
		}
		if ki, ok := parseKey(k); ok && ki.job == key {
			j.add(k, ki)
		}
	}
	return j.read(ctx, s)
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
	return s.Create(ctx, stageKey(r, st), marshal(r))
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
