package sqlledger

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json"
)

// With one writer (Dialect.OneWriter: SQLite, which spends more preparing a
// statement than running it) New prepares the statements once. With many,
// a transaction sends their text (pgx prepares it once a connection): one
// that waited for a second connection while holding one could wait for ever.

// exec runs statement k of the ledger in tx and returns the rows it
// changed.
func (l *Ledger) exec(ctx context.Context, tx *sql.Tx, k string, args ...any) (int64, error) {
	var res sql.Result
	var err error
	if st := l.stmts[k]; st != nil {
		res, err = tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	} else {
		res, err = tx.ExecContext(ctx, l.q[k], args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// row runs the query k of the ledger in tx, for its one row.
func (l *Ledger) row(ctx context.Context, tx *sql.Tx, k string, args ...any) *sql.Row {
	if st := l.stmts[k]; st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, l.q[k], args...)
}

// A group sends the requests that wait at the same moment together:
// while every slot has a batch in flight, requests queue, and the next
// caller to find a slot free sends all that queued (up to max). SQLite's
// writes go through one slot, a batch a transaction (commitGroup); over a
// network of 20 ms a round trip, PostgreSQL's batched claims and records
// go through a few, a batch a statement (many): a run's 64 goroutines then
// share a handful of round trips instead of taking one each.
//
// A caller whose context ends stops waiting: a request still queued
// leaves the queue, and one in a batch already sent is left to it, to
// land or not (the caller goes the one-at-a-time way, which reads back
// what landed), unless the group waits for its batches' answers (wait).
type group[T any] struct {
	max   int
	slots chan struct{}
	send  func(ctx context.Context, batch []T) []error
	// wait keeps a request sent in a batch waiting for the batch's answer
	// whatever its context says: the writes of one transaction
	// (commitGroup), which may land and whose functions write their
	// callers' answers; and the records, whose callers' contexts are
	// bounded, so that a run that returns has no record of its own still
	// on its way. A claim's context may have no bound: it leaves.
	wait bool

	mu      sync.Mutex
	pending []*waiter[T]
}

// A waiter is one request in a group's queue.
type waiter[T any] struct {
	v    T
	sent atomic.Bool // in a batch
	done chan error  // the batch's answer to it
}

// do queues v and returns the answer of its batch to it.
func (g *group[T]) do(ctx context.Context, v T) error {
	w := &waiter[T]{v: v, done: make(chan error, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, w)
	g.mu.Unlock()
	for {
		select {
		case err := <-w.done:
			return err
		case <-ctx.Done():
			if g.leave(w) {
				return ctx.Err()
			}
		case g.slots <- struct{}{}:
			g.flush(ctx)
			<-g.slots
		}
		if w.sent.Load() { // in a batch that this caller or another sent
			if g.wait {
				return <-w.done
			}
			select {
			case err := <-w.done:
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// leave takes w out of the queue, and reports whether it was there.
func (g *group[T]) leave(w *waiter[T]) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(g.pending, w)
	if i >= 0 {
		g.pending = slices.Delete(g.pending, i, i+1)
	}
	return i >= 0
}

// flush sends what is queued, up to max.
func (g *group[T]) flush(ctx context.Context) {
	g.mu.Lock()
	n := min(len(g.pending), g.max)
	batch := g.pending[:n:n]
	g.pending = g.pending[n:]
	for _, w := range batch {
		w.sent.Store(true)
	}
	g.mu.Unlock()
	if n == 0 {
		return
	}
	vs := make([]T, n)
	for i, w := range batch {
		vs[i] = w.v
	}
	errs := g.send(ctx, vs)
	for i, w := range batch {
		w.done <- errs[i]
	}
}

// commitGroup runs the writes of fns (Dialect.OneWriter) in one
// transaction, each in a savepoint, undone alone when it fails, all made
// durable by one commit (one sync of the log), rather than one each; it
// answers each once the commit is known, since the write may land. The
// statements are not cut short (see try).
func (l *Ledger) commitGroup(_ context.Context, fns []func(tx *sql.Tx) error) []error {
	ctx := context.Background()
	errs := make([]error, len(fns))
	err := l.inTx(ctx, func(tx *sql.Tx) error {
		for i, fn := range fns {
			if _, err := l.exec(ctx, tx, "savepoint"); err != nil {
				return err
			}
			k := "release"
			if errs[i] = fn(tx); errs[i] != nil {
				k = "rollbackTo" // the savepoint stays, released by the commit
			}
			if _, err := l.exec(ctx, tx, k); err != nil {
				return err
			}
		}
		return nil
	})
	for i := range errs {
		errs[i] = cmp.Or(err, errs[i])
	}
	return errs
}

// errNotTaken answers a request that its batch's statement did not take:
// it goes the one-at-a-time way, which reads back what a batch whose
// answer was lost may have written, and applies every rule.
var errNotTaken = errors.New("sqlledger: not taken by its batch")

// A batchRow is one request of a batched statement: its job, and its
// values, made when it is queued, so that nothing of the caller's request
// is read once the caller may have left (see group).
type batchRow struct {
	job    string
	values []any
}

// many is the send of a group of batched statement k (Dialect.Batch): it
// runs k over the rows of the requests as a JSON array of arrays, one a
// job (a job twice in one batch goes once, and the second the
// one-at-a-time way), and answers nil to each whose job the statement
// returns.
func many(l *Ledger, k string) func(context.Context, []batchRow) []error {
	return func(ctx context.Context, vs []batchRow) []error {
		errs := make([]error, len(vs))
		first := make(map[string]int, len(vs))
		var rows [][]any
		for i, v := range vs {
			errs[i] = errNotTaken
			if _, ok := first[v.job]; !ok {
				first[v.job] = i
				rows = append(rows, v.values)
			}
		}
		text, _ := json.Marshal(rows) // strings, integers, finite numbers: were it to fail, the statement would, on no rows
		got, err := l.column(ctx, l.q[k], string(text))
		for _, j := range got {
			if i, ok := first[j]; ok && err == nil {
				errs[i] = nil
			}
		}
		return errs
	}
}

// The batched statements (Dialect.Batch), in PostgreSQL's SQL: each takes
// a JSON array of rows, and returns the jobs it wrote.
var batched = map[string]string{
	// The values of the claims (see New); the first attempt of each job
	// that has no row is made, by a run that is not gone.
	"claimNew": `WITH ok AS (
	SELECT e->>0 AS job, e->>1 AS id, (e->>2)::bigint AS line, e->>3 AS op, e->>4 AS stem, e->>5 AS fields,
		e->>6 AS kind, e->>7 AS run, e->>8 AS worker, e->>9 AS urls FROM json_array_elements(?::json) e
	WHERE EXISTS (SELECT 1 FROM runs r WHERE r.token = e->>7 AND NOT GONE)
), j AS (
	INSERT INTO jobs (job, id, line, op, stem, fields, attempt, state)
	SELECT job, id, line, op, stem, fields, 1, 'claimed' FROM ok
	ON CONFLICT (job) DO NOTHING RETURNING job
)
INSERT INTO attempts (job, n, kind, run, worker, state, urls, claimed)
SELECT ok.job, 1, ok.kind, ok.run, ok.worker, 'claimed', ok.urls, NOW FROM ok JOIN j USING (job)
RETURNING job`,
	// The values of "record" (recordArgs) and the run; each stage is
	// written only where the attempt is its job's last, made by that run,
	// not ended, and the run is not gone (the job's row locked as Record
	// locks it).
	"recordOwn": `WITH ok AS (
	SELECT u.* FROM (SELECT e->>0 AS state, (e->>1)::int AS lost, e->>2 AS urls, e->>3 AS text, e->>4 AS files, e->>5 AS error,
		(e->>6)::int AS requests, e->>7 AS request_id, (e->>8)::float8 AS seconds, e->>9 AS job, (e->>10)::int AS n,
		e->>11 AS run FROM json_array_elements(?::json) e) u
	JOIN jobs j ON j.job = u.job AND j.attempt = u.n
	JOIN attempts a ON a.job = u.job AND a.n = u.n AND a.run = u.run AND a.state IN ('claimed', 'answered')
	JOIN runs r ON r.token = u.run AND NOT GONE
	FOR UPDATE OF j
), jj AS (
	UPDATE jobs j SET state = ok.state, lost = ok.lost FROM ok WHERE j.job = ok.job
)
UPDATE attempts a SET state = ok.state, lost = ok.lost, urls = ok.urls, text = ok.text, files = ok.files,
	error = ok.error, requests = ok.requests, request_id = ok.request_id, ended = NOW, seconds = ok.seconds
FROM ok WHERE a.job = ok.job AND a.n = ok.n
RETURNING a.job`,
}
