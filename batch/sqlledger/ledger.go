package sqlledger

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/creativegen/creative-go/batch"
)

// A Ledger is a batch.Ledger over a database. It is safe for concurrent
// use.
type Ledger struct {
	db    *sql.DB
	d     Dialect
	page  int // rows a query of Jobs reads
	q     map[string]string
	stmts map[string]*sql.Stmt // prepared by New, by key of q (see group.go)
	// The groups of the write transactions (Dialect.OneWriter), and of
	// the batched claims and records (Dialect.Batch).
	writes  *group[func(tx *sql.Tx) error]
	claims  *group[batchRow]
	records *group[batchRow]
}

var _ batch.Ledger = (*Ledger)(nil)

// New returns the Ledger of db, whose schema is Schema, for the engine d
// describes. Close closes db.
func New(db *sql.DB, d Dialect) *Ledger {
	l := &Ledger{db: db, d: d, q: map[string]string{}, stmts: map[string]*sql.Stmt{}}
	for k, q := range queries {
		l.q[k] = d.bind(q)
	}
	l.q["lockJob"] += d.ForUpdate
	l.writes = &group[func(tx *sql.Tx) error]{max: maxGroup, slots: make(chan struct{}, 1), send: l.commitGroup, wait: true}
	if d.Batch {
		for k, q := range batched {
			l.q[k] = d.bind(q)
		}
		l.claims = &group[batchRow]{max: batchSize, slots: make(chan struct{}, slots), send: many(l, "claimNew")}
		l.records = &group[batchRow]{max: batchSize, slots: make(chan struct{}, slots), send: many(l, "recordOwn"), wait: true}
	}
	if d.OneWriter { // see group.go; a statement that fails to prepare is sent as its text
		for k, q := range l.q {
			if st, err := db.Prepare(q); err == nil {
				l.stmts[k] = st
			}
		}
	}
	l.SetPage(d.Page)
	return l
}

// SetPage sets how many rows Jobs reads in one query (0: the default); a
// test sets a small page to cross pages with few jobs. Call it before the
// Ledger is used.
func (l *Ledger) SetPage(n int) {
	if n <= 0 {
		n = defaultPage
	}
	l.page = n
}

// DB returns the database, for drivers and tests.
func (l *Ledger) DB() *sql.DB { return l.db }

// Close closes the database, and with it the statements New prepared.
func (l *Ledger) Close() error { return l.db.Close() }

// entryCols are the columns of a job's last attempt, as scan reads them;
// the statements that read them join jobs j, attempts a and runs r.
const entryCols = `j.job, j.id, j.line, j.op, j.stem, j.fields, a.n, a.kind, a.run, a.worker, a.state, a.lost,
	a.urls, a.text, a.files, a.error, a.requests, a.request_id, coalesce(a.ended, a.claimed), a.seconds,
	CASE WHEN (a.state = 'claimed' OR a.state = 'answered' AND a.lost = 0 AND a.error IS NULL) AND NOT GONE THEN 1 ELSE 0 END`

const lastJoin = ` FROM jobs j JOIN attempts a ON a.job = j.job AND a.n = j.attempt LEFT JOIN runs r ON r.token = a.run `

// queries are the statements, with ? for placeholders, NOW for the
// database's clock and GONE for the condition that a run r is gone.
var queries = map[string]string{
	"savepoint":  `SAVEPOINT w`,
	"release":    `RELEASE w`,
	"rollbackTo": `ROLLBACK TO w`,
	"begin":      `INSERT INTO runs (token, worker, lease_ms, started, beat) VALUES (?, ?, ?, NOW, NOW) ON CONFLICT (token) DO NOTHING`,
	"beat":       `UPDATE runs SET beat = NOW WHERE token = ? AND NOT (SELECT GONE FROM runs r WHERE r.token = ?)`,
	"end":        `UPDATE runs SET ended = NOW WHERE token = ? AND ended IS NULL`,
	"open":       `SELECT token FROM runs WHERE gone = 0 AND ended IS NULL`,
	"markGone":   `UPDATE runs SET gone = 1 WHERE token = ?`,
	"newJob":     `INSERT INTO jobs (job, id, line, op, stem, fields, attempt, state) VALUES (?, ?, ?, ?, ?, ?, 1, 'claimed') ON CONFLICT (job) DO NOTHING`,
	"lockJob":    `SELECT 1 FROM jobs j WHERE j.job = ?`, // and Dialect.ForUpdate
	"lastOne":    `SELECT ` + entryCols + lastJoin + `WHERE j.job = ?`,
	"ownAttempt": `SELECT a.run, a.state, a.lost, coalesce(a.error, ''), j.attempt, CASE WHEN GONE THEN 1 ELSE 0 END FROM jobs j JOIN attempts a ON a.job = j.job AND a.n = ? LEFT JOIN runs r ON r.token = a.run WHERE j.job = ?`,
	"claim": `INSERT INTO attempts (job, n, kind, run, worker, state, urls, claimed)
	SELECT ?, ?, ?, ?, ?, 'claimed', ?, NOW WHERE EXISTS (SELECT 1 FROM runs r WHERE r.token = ? AND NOT GONE)`,
	"claimJob":  `UPDATE jobs SET attempt = ?, state = 'claimed', lost = 0, id = ?, line = ?, op = ?, stem = ?, fields = ? WHERE job = ?`,
	"spend":     `UPDATE budget SET spent = spent + ?, lim = ? WHERE cap = ? AND spent + ? <= ?`,
	"budget":    `SELECT cap, spent, lim FROM budget`,
	"record":    `UPDATE attempts SET state = ?, lost = ?, urls = ?, text = ?, files = ?, error = ?, requests = ?, request_id = ?, ended = NOW, seconds = ? WHERE job = ? AND n = ?`,
	"recordJob": `UPDATE jobs SET state = ?, lost = ? WHERE job = ?`,
	"status":    `SELECT state, lost, count(*) FROM jobs WHERE attempt > 0 GROUP BY state, lost`,
	"inFlight":  `SELECT count(*)` + lastJoin + `WHERE j.state = 'claimed' AND NOT GONE`,
	"jobs":      `SELECT ` + entryCols + lastJoin + `WHERE j.job > ? ORDER BY j.job LIMIT ?`,
	"maybePaid": `SELECT ` + entryCols + lastJoin + `WHERE j.job > ? AND (j.state = 'unknown' OR j.state = 'claimed' AND a.kind = 'call' AND GONE) ORDER BY j.job LIMIT ?`,
	"last":      `SELECT ` + entryCols + lastJoin + `WHERE j.job IN (`,
}

// Groups: how many batches of claims or records may be in flight at once
// (Dialect.Batch), and how many claims, records or writes (Dialect.OneWriter) one
// takes.
const (
	slots     = 8
	batchSize = 128
	maxGroup  = 256
)

// defaultPage is how many rows Jobs reads at once when the Dialect does
// not say.
const defaultPage = 500

// write runs fn in a transaction, trying again, up to tries times, when
// it failed for a reason that is not its answer (fn reads back what an
// earlier try wrote: see the package's doc).
func (l *Ledger) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	const tries = 4
	var err error
	for i := range tries {
		if i > 0 {
			select {
			case <-time.After(time.Duration(25<<i) * time.Millisecond):
			case <-ctx.Done():
				return errors.Join(err, ctx.Err())
			}
		}
		// An error of the ledger's rules is its answer, which trying again
		// would not change.
		if err = l.try(ctx, fn); err == nil || ctx.Err() != nil ||
			errors.Is(err, batch.ErrFenced) || errors.Is(err, batch.ErrLeaseLost) || errors.Is(err, batch.ErrBudgetSpent) {
			return err
		}
	}
	return err
}

// try runs fn in one transaction. In a group's transaction
// shared with the writes of other callers, fn's statements run to their
// end whatever ctx says: an engine that interrupts a statement rolls back
// its whole transaction (SQLite does), which would undo the others'
// writes with it; a write that has not begun when ctx ends does not
// begin.
func (l *Ledger) try(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if l.d.OneWriter {
		if err := ctx.Err(); err != nil {
			return err
		}
		return l.writes.do(ctx, func(tx *sql.Tx) error { return fn(context.WithoutCancel(ctx), tx) })
	}
	return l.inTx(ctx, func(tx *sql.Tx) error { return fn(ctx, tx) })
}

// inTx runs fn in a transaction, committed when fn returns nil.
func (l *Ledger) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Begin records the run, takes its lock, and marks gone the runs whose
// locks are free.
func (l *Ledger) Begin(ctx context.Context, run batch.RunInfo) (batch.Session, error) {
	lock, err := l.d.Lock(ctx, run.Token)
	if err != nil {
		return nil, fmt.Errorf("sqlledger: the run's lock: %w", err)
	}
	err = l.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// A retry whose first try landed inserts nothing.
		_, err := l.exec(ctx, tx, "begin", run.Token, run.Worker, max(run.Lease.Milliseconds(), 1))
		return err
	})
	if err == nil {
		err = l.sweep(ctx)
	}
	if err != nil {
		_ = lock.Release()
		return nil, fmt.Errorf("sqlledger: %w", err)
	}
	return &session{l: l, token: run.Token, lock: lock}, nil
}

// sweep marks gone the runs whose locks Probe finds free.
func (l *Ledger) sweep(ctx context.Context) error {
	open, err := l.column(ctx, l.q["open"])
	if err != nil {
		return err
	}
	for _, t := range open {
		if held, err := l.d.Probe(ctx, l.db, t); err != nil || held {
			continue
		}
		if err := l.write(ctx, func(ctx context.Context, tx *sql.Tx) error { _, err := l.exec(ctx, tx, "markGone", t); return err }); err != nil {
			return err
		}
	}
	return nil
}

// column runs the query q on the database and returns the strings of its
// one column, read whole before it returns.
func (l *Ledger) column(ctx context.Context, q string, args ...any) ([]string, error) {
	var got []string
	err := l.each(ctx, q, args, func(rows *sql.Rows) error {
		var s string
		err := rows.Scan(&s)
		got = append(got, s)
		return err
	})
	return got, err
}

// A session is a run's hold on the ledger.
type session struct {
	l     *Ledger
	token string
	lock  Lock
	once  sync.Once
}

func (s *session) Beat(ctx context.Context) error {
	if err := s.lock.Check(ctx); err != nil {
		return fmt.Errorf("%w: %w", batch.ErrLeaseLost, err)
	}
	return s.l.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		n, err := s.l.exec(ctx, tx, "beat", s.token, s.token)
		if err == nil && n == 0 {
			err = batch.ErrLeaseLost
		}
		return err
	})
}

func (s *session) Lost() <-chan struct{} { return s.lock.Lost() }

func (s *session) End(ctx context.Context) error {
	err := s.l.write(ctx, func(ctx context.Context, tx *sql.Tx) error { _, err := s.l.exec(ctx, tx, "end", s.token); return err })
	s.once.Do(func() { err = cmp.Or(err, s.lock.Release()) })
	return err
}

// jsonText is v as JSON text, or NULL for a nil map or slice.
func jsonText[T any](v T, isNil bool) any {
	if isNil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // fields of JSON values, strings
	}
	return string(b)
}

// nullString is s, or NULL for "".
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
