package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"

	"github.com/creativegen/creative-go/batch"
)

// The kinds of write: a small object created or put, a key deleted, and
// an output file recorded (a row without bytes).
const (
	opCreate = iota
	opPut
	opDelete
	opFile
)

// A write is one change to the database, waiting for its commit.
type write struct {
	kind  int
	key   string
	args  []any        // of its statement, made in its caller's goroutine (see argsOf)
	err   error        // its own outcome within the transaction (ErrExist)
	done  chan error   // told once the transaction that holds it ended
	state atomic.Int32 // pending, then taken by a transaction or given up by its caller
}

// The states of a write: waiting (for the writer, or for the database's
// lock), in a transaction that holds the lock, or given up by its caller
// before that (never applied).
const (
	pending int32 = iota
	taken
	givenUp
)

// maxBatch bounds the writes one transaction commits.
const maxBatch = 512

// A writer is the one goroutine that writes to the database, so that the
// writes of one moment share one transaction and one sync of the WAL.
type writer struct {
	conn   *sql.Conn
	queue  chan *write
	mu     sync.RWMutex // held to send on queue; Lock to close it
	closed bool
	ended  chan struct{}
	// commits counts the transactions committed.
	commits atomic.Int64
	stmts   [len(statements)]*sql.Stmt
}

func newWriter(conn *sql.Conn) (*writer, error) {
	w := &writer{conn: conn, queue: make(chan *write, maxBatch), ended: make(chan struct{})}
	for kind, q := range statements {
		stmt, err := conn.PrepareContext(context.Background(), q)
		if err != nil {
			return nil, err
		}
		w.stmts[kind] = stmt
	}
	// The writer waits for another process's transaction itself (see
	// begin), watching its callers' contexts, which SQLite's own wait
	// would not: SQLite waits only the moment of a lock taken in passing.
	if _, err := conn.ExecContext(context.Background(), fmt.Sprintf(`PRAGMA busy_timeout = %d`, busyPoll.Milliseconds())); err != nil {
		return nil, err
	}
	go w.loop()
	return w, nil
}

// do commits one write and returns its outcome. It honours ctx until the
// write is in a transaction that holds the database's lock, also while
// it waits for that lock (another process's transaction): a write given
// up so was never applied, and the writes of other callers wait on. Once
// in such a transaction, which commits in moments, it is waited for.
func (w *writer) do(ctx context.Context, kind int, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	wr := &write{kind: kind, key: key, args: argsOf(kind, key, data), done: make(chan error, 1)}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return fmt.Errorf("sqlitestore: %s: the store is closed", key)
	}
	select {
	case w.queue <- wr:
	case <-ctx.Done():
		w.mu.RUnlock()
		return fmt.Errorf("sqlitestore: %s: not written: %w", key, ctx.Err())
	}
	w.mu.RUnlock()
	var err error
	select {
	case err = <-wr.done:
	case <-ctx.Done():
		if wr.state.CompareAndSwap(pending, givenUp) {
			return fmt.Errorf("sqlitestore: %s: not written: %w", key, ctx.Err())
		}
		err = <-wr.done
	}
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", key, err)
	}
	return nil
}

// close ends the writer once every queued write is committed; it reports
// false when the writer was closed before.
func (w *writer) close() bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	w.closed = true
	close(w.queue)
	w.mu.Unlock()
	<-w.ended
	return true
}

// loop commits, in one transaction, the writes waiting when it takes the
// first: this goroutine alone receives, so what len counts is there.
func (w *writer) loop() {
	defer close(w.ended)
	for first := range w.queue {
		ws := []*write{first}
		for len(ws) < maxBatch && len(w.queue) > 0 {
			ws = append(ws, <-w.queue)
		}
		w.commit(ws)
	}
}

// commit commits the writes and tells each its outcome. When one write's
// statement fails, the writes are tried again one at a time, so that one
// bad write fails alone; a transaction that cannot begin or commit (the
// database locked past the busy timeout, the disk failing) fails them all
// at once, since each alone would fail the same way, one timeout after
// another.
func (w *writer) commit(ws []*write) {
	stmtFailed, err := w.apply(ws)
	if stmtFailed && len(ws) > 1 {
		for _, wr := range ws {
			w.commit([]*write{wr})
		}
		return
	}
	for _, wr := range ws {
		wr.done <- cmp.Or(err, wr.err)
	}
}

// The statements of each kind of write: a row's arguments are rowArgs's.
var statements = [...]string{
	opCreate: insertRow + ` ON CONFLICT (key) DO NOTHING`,
	opPut:    insertRow + ` ON CONFLICT (key) DO UPDATE SET data = excluded.data, ` + setColumns,
	opDelete: `DELETE FROM objects WHERE key = ?`,
	opFile:   insertRow + ` ON CONFLICT (key) DO UPDATE SET data = NULL, ` + setColumns,
}

// insertRow inserts a row, and setColumns replaces its columns, from the
// arguments rowArgs gives.
var (
	insertRow  = `INSERT INTO objects (key, data, ` + columns + `) VALUES (?, ?` + strings.Repeat(", ?", nColumns) + `)`
	setColumns = func() string {
		var set []string
		for c := range strings.SplitSeq(columns, ", ") {
			set = append(set, c+" = excluded."+c)
		}
		return strings.Join(set, ", ")
	}()
)

// argsOf returns the arguments of a write's statement. The caller's
// goroutine reads a record's JSON for its columns, not the writer's.
func argsOf(kind int, key string, data []byte) []any {
	switch {
	case kind == opDelete:
		return []any{key}
	case kind == opFile:
		return rowArgs(key, nil)
	case data == nil:
		return rowArgs(key, []byte{}) // an object of no bytes, not an output
	}
	return rowArgs(key, data)
}

// apply runs the writes still wanted in one transaction, begun IMMEDIATE,
// and commits it; stmtFailed says that a write's own statement failed. A
// create whose key exists is no failure of the transaction: that write
// alone fails, with batch.ErrExist.
//
// The transaction is begun and ended by statements on the writer's
// connection, not by database/sql's Tx, which would prepare each statement
// again in every transaction: with the triggers it fires, an insert costs
// more to prepare than to run.
func (w *writer) apply(ws []*write) (stmtFailed bool, err error) {
	ctx := context.Background()
	ws, begun, err := w.begin(ws)
	if err != nil || !begun {
		return false, err
	}
	for _, wr := range ws {
		res, err := w.stmts[wr.kind].ExecContext(ctx, wr.args...)
		if err != nil {
			w.rollback()
			return true, err
		}
		wr.err = nil
		if n, _ := res.RowsAffected(); wr.kind == opCreate && n == 0 {
			wr.err = batch.ErrExist
		}
	}
	if _, err := w.conn.ExecContext(ctx, `COMMIT`); err != nil {
		w.rollback() // what SQLite did not roll back itself
		return false, err
	}
	w.commits.Add(1)
	return false, nil
}

// rollback ends the writer's transaction without its writes; there is
// none when SQLite ended it already.
func (w *writer) rollback() {
	_, _ = w.conn.ExecContext(context.Background(), `ROLLBACK`)
}

// busyWait is how long a write waits for another process's transaction
// before it fails with SQLITE_BUSY, unless its caller gives up first;
// SQLite itself waits busyPoll at a time, between which the writer looks
// at its callers.
const (
	busyWait = busyTimeout * time.Millisecond
	busyPoll = 50 * time.Millisecond
)

// begin begins a transaction that holds the database's write lock, trying
// again while another connection holds it, for busyWait at most, and then
// takes the writes of ws that are still wanted: it returns them, or says
// that it began none when their callers all gave up while it waited.
func (w *writer) begin(ws []*write) (_ []*write, begun bool, _ error) {
	give := time.Now().Add(busyWait)
	pause := time.Millisecond
	for {
		ws = wanted(ws, func(wr *write) bool { return wr.state.Load() != givenUp })
		if len(ws) == 0 {
			return nil, false, nil
		}
		_, err := w.conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`)
		if err == nil {
			ws = wanted(ws, func(wr *write) bool { return wr.state.CompareAndSwap(pending, taken) || wr.state.Load() == taken })
			return ws, true, nil
		}
		if !busy(err) || time.Now().After(give) {
			return nil, false, err
		}
		time.Sleep(pause)
		pause = min(2*pause, busyPoll)
	}
}

// wanted returns the writes of ws that keep reports true for, in a slice
// of their own: the caller still tells each of ws its outcome.
func wanted(ws []*write, keep func(*write) bool) []*write {
	out := make([]*write, 0, len(ws))
	for _, wr := range ws {
		if keep(wr) {
			out = append(out, wr)
		}
	}
	return out
}

// busy reports whether err is SQLite's SQLITE_BUSY: another connection
// holds the lock.
func busy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == 5
}
