package batch

import (
	"context"
	"errors"
	"iter"
	"time"
)

// A Ledger is the place of record of a batch's jobs: a database engine
// whose transactions keep the pay-once rules for every worker that shares
// it. Package batch/sqlledger implements it once over database/sql, for
// SQLite (batch/sqliteledger, one machine) and PostgreSQL (batch/pgledger,
// a fleet); package batch/ledgertest judges any implementation.
//
// A run opens a Session (Begin) before it claims anything and ends it when
// it ends. A run is live while the engine holds its session's lock (a
// flock on one machine, an advisory lock of its own connection in
// PostgreSQL) and, where the engine says so, while its heartbeat is fresh
// by the database's clock; it is gone once the engine marks it so, and it
// is marked so in the same transaction that takes one of its jobs over.
// No worker's own clock decides another's liveness.
//
// Every write is one transaction and may be retried: a write whose commit
// landed though its answer was lost is recognised, when tried again, by
// the run's token in the rows it wrote (read back in the transaction), and
// is never taken for another worker's.
//
// A Ledger is safe for concurrent use by the goroutines of a process, and
// by any number of processes (and, for PostgreSQL, machines) at once.
type Ledger interface {
	// Begin records a new run and takes its session lock: from its return
	// until End (or until the lock is lost), the engine takes the run for
	// live. Before it returns it marks gone the runs whose locks it finds
	// free, so that their claims read as maybe paid.
	Begin(ctx context.Context, run RunInfo) (Session, error)

	// Claim makes attempt c.Attempt of job c.Job, by run c.Run, in one
	// transaction, where c.Allowed says so of the job's last attempt as
	// the transaction reads it (locked against other claims): it never
	// makes an attempt of a job whose last attempt is live on another run,
	// or maybe paid without c.ResendUnknown. A call's claim takes c.Share
	// of the budget in the same transaction, where
	// spent + amount <= the cap (ErrBudgetSpent otherwise, and nothing is
	// made). Taking over a claim of a gone run marks that run gone (its
	// fence): none of its records is taken after. A claim the transaction
	// does not allow returns Claimed false with the job's last attempt as
	// it now stands. A claim by c.Run of c.Attempt that is already there
	// (a retry whose first commit landed) is Claimed, and takes no second
	// share.
	Claim(ctx context.Context, c *Claim) (ClaimResult, error)

	// Take takes one more share of the budget for run, outside a claim
	// (the call is sent again after an attempt that may have been paid),
	// or returns an error matching ErrBudgetSpent.
	Take(ctx context.Context, run string, s Share) error

	// Record writes the next stage of attempt a.Attempt of job a.Job, by
	// run a.Run: its answer (State Answered: links and text before any
	// download) or its end (any other state; an Answered with Lost is an
	// end too). It is taken only while that attempt is still the job's last
	// and its run is not gone, checked in the same transaction (else an
	// error matching ErrFenced, and nothing is written). A Record that is
	// already there, as written by the same run, is nil.
	Record(ctx context.Context, a *Entry) error

	// Last returns the last attempts of the jobs named, at most MaxLast a
	// call, in one query: jobs never claimed are left out. Live says
	// whether each is in progress on a run the engine holds live: a claim,
	// or an answer (not lost, no error: not an end) whose files that run
	// fetches.
	Last(ctx context.Context, jobs []string) ([]Last, error)

	// Jobs yields the last attempt of every job, in the order of the jobs'
	// keys, reading a page of them at a time; with maybePaid, only those
	// that may have been paid and are not live (an unknown outcome, a
	// call's claim whose run is gone). Records are for the page and the
	// status; Fields, URLs and Text are filled.
	Jobs(ctx context.Context, maybePaid bool) iter.Seq2[*Entry, error]

	// Status counts the jobs by the state of their last attempt, in one
	// grouped query, and says what was taken of the budget, each cap with
	// the limit of the last share taken of it.
	Status(ctx context.Context) (Status, error)

	// Close releases what the Ledger holds open.
	Close() error
}

// A Versioned Ledger tells, in one query, a version of its jobs and their
// attempts that changes whenever one of them does, or "" where its engine
// cannot: WriteIndex stamps index.html with it, and leaves a page that
// bears the current version as it is.
type Versioned interface {
	Version(ctx context.Context) (string, error)
}

// MaxLast bounds the jobs of one Ledger.Last.
const MaxLast = 500

// A Session is a run's hold on the ledger (see Ledger.Begin).
type Session interface {
	// Beat renews the run's heartbeat on the database's clock, and checks
	// its lock is still held: an error matching ErrLeaseLost when the
	// engine took the run for gone or the lock is lost; any other error is
	// the engine's, and the runner's lease decides.
	Beat(ctx context.Context) error
	// Lost is closed once the session's lock is lost (its connection
	// died): the run stops sending at once.
	Lost() <-chan struct{}
	// End records the run's end and lets its lock go: its claims that did
	// not end read as maybe paid from then on.
	End(ctx context.Context) error
}

// RunInfo is what a ledger keeps of a run.
type RunInfo struct {
	Token  string        // 32 hex digits, drawn at random by the runner
	Worker string        // host and process, for people
	Lease  time.Duration // the run's lease (see Options.Lease)
}

// A Kind says what an attempt does: send the job's request (a call, which
// may be paid) or fetch an earlier answer's files (a download, free).
type Kind string

// The kinds of attempts.
const (
	KindCall     Kind = "call"
	KindDownload Kind = "download"
)

// An Entry is what a ledger holds of one attempt at a job: its Record,
// what it does, and the stem of its files' names.
type Entry struct {
	Record
	Kind Kind   `json:"kind"`
	Stem string `json:"stem"`
}

// A Claim asks a Ledger for the next attempt at a job (see Ledger.Claim).
type Claim struct {
	// Entry is the attempt to make: Job, ID, Line, Op, Fields, Stem,
	// Kind, Worker and Run, and its number (the last attempt's plus one).
	// A download's URLs are those of the answer it fetches.
	Entry
	// ResendUnknown and RepayLost are the caller's say-so to pay again
	// (see Options).
	ResendUnknown, RepayLost bool
	// Share is what a call's claim takes of the budget.
	Share Share
}

// Allowed reports whether a ledger may make c after last, the job's last
// attempt (nil when it has none), live when last is in progress on a run
// the engine holds live (a claim, or an answer whose files it fetches): the one rule every Ledger applies, in the transaction
// of the claim. The attempt must follow last, and the rule is the runner's
// own (decide): a call where a run sends the job, a download where it
// fetches an answer's files.
func (c *Claim) Allowed(last *Entry, live bool) bool {
	if c.Attempt != nextAttempt(last) {
		return false
	}
	o := Options{ResendUnknown: c.ResendUnknown, RepayLost: c.RepayLost}
	switch decide(last, &o, live) {
	case actCall:
		return c.Kind == KindCall
	case actDownload:
		// An answer's files are fetched (or its kept files checked again),
		// free.
		return c.Kind == KindDownload
	case actCheck:
		// A done job's files that are gone are fetched again, free; when
		// its answer had no links, only paid for again, on the caller's
		// say-so.
		return c.Kind == KindDownload && len(last.URLs) > 0 || c.Kind == KindCall && c.RepayLost && len(last.URLs) == 0
	}
	return false
}

// A Share is what one call takes of the budget: 1 call and its price in
// millionths of the prices' unit, each against the run's own cap (0: not
// capped, nothing taken).
type Share struct {
	Calls, MaxCalls int64
	Spend, MaxSpend int64
}

// A ClaimResult is the answer to a Claim: whether it was made, and if not, the
// job's last attempt as the ledger holds it now and whether it is live.
type ClaimResult struct {
	Claimed bool
	Last    *Entry
	Live    bool
}

// Last is a job's last attempt, and whether it is in progress on a run
// the engine holds live (a claim, or an answer whose files it fetches).
type Last struct {
	Entry
	Live bool
}

// ErrFenced is matched by a Record that the ledger refused: the attempt is
// no longer its job's last (another worker took the job over) or its run
// is gone.
var ErrFenced = errors.New("batch: another worker took the job over after this run's lease was in doubt, and may have paid for it again")

// ErrLeaseLost is matched by a Session.Beat whose run the engine took for
// gone, or whose lock was lost.
var ErrLeaseLost = errors.New("batch: the engine took the run for gone")
