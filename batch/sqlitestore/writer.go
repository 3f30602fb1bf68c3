package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"

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
	kind int
	key  string
	data []byte
	err  error      // its own outcome within the transaction (ErrExist)
	done chan error // told once the transaction that holds it ended
}

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
	go w.loop()
	return w, nil
}

// do commits one write and returns its outcome. Once queued, a write is
// waited for whatever becomes of ctx: it may be committed.
func (w *writer) do(ctx context.Context, kind int, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	wr := &write{kind: kind, key: key, data: data, done: make(chan error, 1)}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return fmt.Errorf("sqlitestore: %s: the store is closed", key)
	}
	w.queue <- wr
	w.mu.RUnlock()
	if err := <-wr.done; err != nil {
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

// The statements of each kind of write.
var statements = [...]string{
	opCreate: `INSERT INTO objects (key, data) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`,
	opPut:    `INSERT INTO objects (key, data) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET data = excluded.data`,
	opDelete: `DELETE FROM objects WHERE key = ?`,
	opFile:   `INSERT INTO objects (key, data) VALUES (?, NULL) ON CONFLICT (key) DO UPDATE SET data = NULL`,
}

// apply runs the writes in one transaction, begun IMMEDIATE (see dsn), and
// commits it; stmtFailed says that a write's own statement failed. A
// create whose key exists is no failure of the transaction: that write
// alone fails, with batch.ErrExist.
func (w *writer) apply(ws []*write) (stmtFailed bool, err error) {
	ctx := context.Background()
	tx, err := w.conn.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	for _, wr := range ws {
		args := []any{wr.key, wr.data}
		if wr.kind == opDelete || wr.kind == opFile {
			args = args[:1]
		} else if wr.data == nil {
			args[1] = []byte{}
		}
		res, err := tx.StmtContext(ctx, w.stmts[wr.kind]).ExecContext(ctx, args...)
		if err != nil {
			_ = tx.Rollback()
			return true, err
		}
		wr.err = nil
		if n, _ := res.RowsAffected(); wr.kind == opCreate && n == 0 {
			wr.err = batch.ErrExist
		}
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	w.commits.Add(1)
	return false, nil
}
