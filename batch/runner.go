package batch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"

	creative "github.com/creativegen/creative-go"
)

// Options say how a Runner runs its jobs. The zero Options run 4 jobs at
// once, read file fields from the current directory, and leave alone every
// job that may have been paid for.
type Options struct {
	// Concurrency is how many jobs run at once (default 4).
	Concurrency int
	// FS is where file fields are read from, by slash-separated paths
	// inside it (a gocloud.dev blob.Bucket is an fs.FS). When nil, they are
	// read from the folder Base, and a path that leaves it, by ".." or
	// through a symbolic link, is refused unless AllowOutside is set.
	FS fs.FS
	// Base is the folder file fields are relative to when FS is nil: the
	// jobs file's folder (default: the current directory).
	Base string
	// AllowOutside lets file fields name any file (with FS nil): absolute
	// paths, "..", symbolic links that leave Base.
	AllowOutside bool
	// ResendUnknown sends again the jobs whose outcome is unknown, which
	// may pay twice: those that ended unknown, and those claimed by a
	// worker that is gone, not those in flight on a live one (see
	// Lease).
	ResendUnknown bool
	// RepayLost sends again the jobs whose answer can no longer be
	// fetched: answered ones whose links expired or were served by a
	// service on this machine that is gone (a fake's), and done ones whose
	// files are gone when their bytes came in the answer, which is kept
	// nowhere else. This pays for them again.
	RepayLost bool
	// Shard and Shards, when Shards is above 1, run only the jobs whose
	// line modulo Shards is Shard, so that several workers can split the
	// reading of a huge file. Every job is still checked, and identical
	// jobs are told apart over the whole file.
	Shard, Shards int
	// Worker names this worker in the ledger (default: host name and
	// process id).
	Worker string
	// CallOptions are given to every call and download (a logger, a
	// timeout). A download is bounded to an hour unless they give
	// WithTimeout.
	CallOptions []creative.Option
	// MaxDownloadBytes bounds each file a job's answer links to (default
	// DefaultMaxDownloadBytes, 4 GiB): a larger one, or a link that streams without end, leaves
	// its job answered and nothing of the file, and a rerun with a higher
	// bound downloads it without paying again.
	MaxDownloadBytes int64
	// IndexEvery, when above 0, keeps index.html (see WriteIndex) current
	// while the run goes: it is written again this often while jobs end.
	// Run does not write it at its end: call WriteIndex then.
	IndexEvery time.Duration
	// OnEvent, when set, is told of every job as it starts and ends; it
	// is called from the workers, at once, and must be quick.
	OnEvent func(Event)
	// Budget caps the calls and the spending of every run on the ledger.
	Budget
	// Lease is the length of the run's lease (default DefaultLease, 90 s),
	// kept in the ledger with the run; a shorter one lets tests run in
	// seconds. The run renews its session's heartbeat every sixth of it,
	// and claims and sends only while the last renewal that completed
	// began less than two thirds of it ago; once in doubt the lease is
	// never proven again, and the run stops. Other workers take a run for
	// gone only when the engine says so (its lock free, or its heartbeat
	// stale by the database's clock); taking one of its jobs over fences
	// it, so that its late records are refused and their answers handed
	// back (LedgerError). A run whose context ends records each call in
	// flight as maybe paid and each answer as waiting for its download.
	Lease time.Duration
}

// DefaultMaxDownloadBytes is the bound of each file an answer links to
// when Options.MaxDownloadBytes gives none: 4 GiB.
const DefaultMaxDownloadBytes = 4 << 30

// An EventType says what happened to a job.
type EventType int

// The events of a run.
const (
	// JobStarted: a worker claimed the job and is sending its request, or
	// downloading an earlier answer's files.
	JobStarted EventType = iota + 1
	// JobEnded: the job's attempt ended; Record says how.
	JobEnded
	// JobSkipped: nothing to do for the job, or nothing a rerun does
	// without a flag; Record is its last attempt.
	JobSkipped
)

// An Event tells an observer about one job.
type Event struct {
	Type   EventType
	Record Record
}

// A Runner runs batches of jobs with one client, recording them in one
// Ledger and writing their outputs to one Store.
type Runner struct {
	c       *creative.Client
	ledger  Ledger
	store   Store
	o       Options
	checker *checker
	st      *starter
	spend   *spender // nil: no Budget
}

// New returns a Runner that calls c, records in l and writes outputs to
// out. A Runner without them (nil) can check jobs, and one without c plan
// them.
func New(c *creative.Client, l Ledger, out Store, o Options) (*Runner, error) {
	if o.MaxDownloadBytes <= 0 {
		o.MaxDownloadBytes = DefaultMaxDownloadBytes
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.Worker == "" {
		host, _ := os.Hostname()
		o.Worker = host + ":" + strconv.Itoa(os.Getpid())
	}
	f := &files{fsys: o.FS}
	if o.FS == nil {
		base := cmp.Or(o.Base, ".")
		root, err := os.OpenRoot(base)
		if err != nil {
			return nil, fmt.Errorf("batch: the folder of the jobs' files: %w", err)
		}
		f.fsys, f.base, f.outside = root.FS(), base, o.AllowOutside
		if o.AllowOutside {
			f.fsys = osFS{}
		}
	}
	sp, err := newSpender(o.Budget)
	if err != nil {
		return nil, err
	}
	return &Runner{c: c, ledger: l, store: out, o: o, checker: &checker{files: f}, st: newStarter(), spend: sp}, nil
}

// Stop stops starting jobs: those waiting to send their first request (for
// a rate limit, a pause) end without sending it, those waiting before a
// retry (their last attempt was not sent, or refused: a 429, a 503) end at
// once as that attempt did, not sent or refused, and Run returns once the
// calls in flight have ended and been recorded. It returns how many calls
// are in flight. A stopped Runner starts no job again.
func (r *Runner) Stop() int { return r.st.stop() }

// A CheckError lists the jobs that cannot run; nothing was sent.
type CheckError struct {
	// Lines holds the first bad jobs found, at most 20.
	Lines []*LineError
	// Count is how many jobs are bad.
	Count int
}

// Error says how many jobs are bad.
func (e *CheckError) Error() string {
	return fmt.Sprintf("batch: %s; nothing was sent", plural(e.Count, "bad line"))
}

func (e *CheckError) add(le *LineError) {
	e.Count++
	if len(e.Lines) < 20 {
		e.Lines = append(e.Lines, le)
	}
}

// plural says "1 bad line" or "2 bad lines".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// Checked is a Source whose every job passed the checks, with what the
// check learned; Run and Plan read the Source again. One run or plan uses
// a Checked at a time.
type Checked struct {
	src  Source
	jobs int   // in the whole Source
	mine int   // in this worker's shard
	seen *seen // the identities that may repeat
}

// Jobs is how many jobs were checked.
func (c *Checked) Jobs() int { return c.jobs }

// InShard is how many of them this worker's shard holds (see
// Options.Shard): all of them without shards.
func (c *Checked) InShard() int { return c.mine }

// Check reads every job of src once and checks it as the SDK would, sending
// nothing and touching no Store; a bad job is a *CheckError.
func (r *Runner) Check(ctx context.Context, src Source) (*Checked, error) {
	p := &Checked{src: src, seen: newSeen()}
	bad := &CheckError{}
	idRepeats := false
	for j, err := range src {
		var t *task
		if err == nil {
			t, err = r.checker.check(j)
		}
		if err == nil {
			err = r.spend.priced(t.op.Name, j.Line)
		}
		if le, ok := errors.AsType[*LineError](err); ok {
			bad.add(le)
			continue
		}
		if err != nil {
			return nil, err
		}
		p.jobs++
		if r.inShard(j) {
			p.mine++
		}
		if p.seen.add(identity(j.ID, t.content)) && j.ID != "" {
			idRepeats = true
		}
	}
	if idRepeats {
		if err := r.repeatedIDs(src, p.seen, bad); err != nil {
			return nil, err
		}
	}
	if bad.Count > 0 {
		return nil, bad
	}
	if p.jobs == 0 {
		return nil, errors.New("batch: no jobs")
	}
	return p, nil
}

// inShard reports whether j is a job of this worker's shard.
func (r *Runner) inShard(j Job) bool {
	return r.o.Shards <= 1 || j.Line%r.o.Shards == r.o.Shard
}

// repeatedIDs reads the jobs again for the ids that may repeat, and adds
// those that do to bad.
func (r *Runner) repeatedIDs(src Source, s *seen, bad *CheckError) error {
	first := map[[32]byte]int{}
	for j, err := range src {
		if _, ok := errors.AsType[*LineError](err); err != nil && !ok {
			return err
		}
		id := identity(j.ID, "")
		if _, cand := s.cands[id]; err != nil || j.ID == "" || !cand {
			continue
		}
		if line, ok := first[id]; ok {
			bad.add(&LineError{Line: j.Line, Field: "id", Err: fmt.Errorf("%q is also the id of line %d", j.ID, line)})
		} else {
			first[id] = j.Line
		}
	}
	return nil
}

// tasks reads the jobs again, checked, each with its identity.
func (r *Runner) tasks(p *Checked) func(yield func(*task, error) bool) {
	return func(yield func(*task, error) bool) {
		p.seen.reset()
		for j, err := range p.src {
			var t *task
			if err == nil {
				t, err = r.checker.check(j)
			}
			if err == nil {
				t.setOccurrence(p.seen.count(identity(j.ID, t.content)))
				if !r.inShard(j) {
					continue
				}
			}
			if !yield(t, err) {
				return
			}
		}
	}
}

// stem starts the names of a task's files: its id, or its zero-padded line
// and a short mark of its identity (two jobs met on one line in two versions
// of a file get different names), then the operation.
func (t *task) stem() string {
	if t.job.ID != "" {
		return t.job.ID + "-" + t.op.Verb()
	}
	return fmt.Sprintf("%06d-%s-%s", t.job.Line, t.op.Verb(), t.key[:6])
}

// Summary counts a run's jobs by how they stand at its end.
type Summary struct {
	Jobs       int // jobs checked
	Done       int // done in this run
	DoneBefore int // done by an earlier run, files in place
	Failed     int // the service said no (400): nothing paid; a rerun sends them again
	Refused    int // not sent or refused (429, 503, 408): a rerun sends them again
	Unknown    int // maybe paid: sent again only with Options.ResendUnknown
	Claimed    int // claimed and not ended by a worker that is gone (maybe paid): sent again only with Options.ResendUnknown
	Waiting    int // answered, files not all downloaded: a rerun downloads them
	Lost       int // answered, answer no longer fetchable: sent again only with Options.RepayLost
	Missing    int // done, but files gone with nothing to fetch them from: sent again only with Options.RepayLost
	Elsewhere  int // claimed at this moment by another worker, whose run's heartbeat is fresh: that worker's to end
	NotStarted int // not started: the run was stopped
	Requests   int // requests sent, retries and downloads included
	// Stopped says in one line why the run stopped before its end (the
	// ledger failed, the lease was in doubt, the key was refused), or "".
	Stopped string
}

// tally counts a job by its last attempt, as a run ended it or left it
// alone.
func (s *Summary) tally(last *record) {
	switch {
	case last.State == Done:
		s.Done++
	case last.State == Failed:
		s.Failed++
	case last.State == Refused:
		s.Refused++
	case last.State == Answered && !last.Lost:
		s.Waiting++
	case last.State == Answered:
		s.Lost++
	case last.State == Claimed:
		s.Claimed++
	default:
		s.Unknown++
	}
}
