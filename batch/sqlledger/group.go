package sqlledger

import (
	"context"
	"database/sql"
	"errors"
	"sync"
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

// An op is one write transaction waiting for the group writer.
type op struct {
	fn   func(tx *sql.Tx) error
	done chan error
}

// maxGroup bounds the writes one group transaction commits.
const maxGroup = 256

// group runs fn in the transaction of the group writer, with the others
// waiting at that moment (Dialect.OneWriter): each write is a savepoint of
// one transaction, undone alone when it fails, and all are made durable by
// one commit (one sync of the log), rather than one each. It waits for
// the commit, since the write may land; fn's statements are not cut
// short (see try).
func (l *Ledger) group(fn func(tx *sql.Tx) error) error {
	o := &op{fn: fn, done: make(chan error, 1)}
	l.startGroup.Do(func() { go l.groupWriter() })
	select {
	case l.ops <- o:
	case <-l.closed:
		return errClosed
	}
	return <-o.done
}

var errClosed = errors.New("sqlledger: the ledger is closed")

// groupWriter commits the waiting writes, a group at a time, until Close.
func (l *Ledger) groupWriter() {
	for {
		var batch []*op
		select {
		case o := <-l.ops:
			batch = append(batch, o)
		case <-l.closed:
			return
		}
	more:
		for len(batch) < maxGroup {
			select {
			case o := <-l.ops:
				batch = append(batch, o)
			default:
				break more
			}
		}
		l.commitGroup(batch)
	}
}

// commitGroup runs the writes of batch in one transaction, each in a
// savepoint, and tells each its answer once the commit is known.
func (l *Ledger) commitGroup(batch []*op) {
	ctx := context.Background()
	errs := make([]error, len(batch))
	tx, err := l.db.BeginTx(ctx, nil)
	if err == nil {
		for i, o := range batch {
			if _, err = l.exec(ctx, tx, "savepoint"); err != nil {
				break
			}
			if errs[i] = o.fn(tx); errs[i] != nil {
				_, err = l.exec(ctx, tx, "rollbackTo")
			}
			if err == nil {
				_, err = l.exec(ctx, tx, "release")
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			err = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
	}
	for i, o := range batch {
		if err != nil {
			errs[i] = err
		}
		o.done <- errs[i]
	}
}

// groupState is the Ledger's group writer.
type groupState struct {
	ops        chan *op
	closed     chan struct{}
	closeOnce  sync.Once
	startGroup sync.Once
}
