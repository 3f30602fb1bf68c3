// Package sqlledger is the batch.Ledger over database/sql, written once
// for SQLite and PostgreSQL: the few ways they differ are a Dialect, and
// the drivers are modules of their own (batch/sqliteledger,
// batch/pgledger), so that this one imports no driver.
//
// A driver opens its *sql.DB, brings the database to Schema (Create, in
// one transaction, with its own record of Version) and returns New(db,
// dialect). Every write is one transaction that reads back what an earlier
// try of it wrote, so a try whose commit landed and whose answer was lost
// is found to be the run's own when tried again.
package sqlledger

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// A Dialect is what a driver tells the Ledger of its engine.
type Dialect struct {
	// Now is an SQL expression of the database's clock, in milliseconds
	// since 1970, as a BIGINT: the one clock of heartbeats and records.
	Now string
	// ForUpdate ends the SELECT of a job's row that a claim or a record
	// writes next, to lock it against other transactions: " FOR UPDATE" in
	// PostgreSQL; "" in SQLite, whose write transactions begin IMMEDIATE
	// (the driver's DSN says so) and so run one at a time.
	ForUpdate string
	// Stale, when not "", is an SQL condition on the runs row r (with Now
	// in it) under which the engine takes a run whose lock it cannot see
	// for gone: in PostgreSQL its heartbeat older than its lease and a
	// third, "r.beat < <Now> - r.lease_ms * 4 / 3". SQLite leaves it "",
	// its Probe alone saying: a live process's run is never taken for
	// gone, however long it is suspended.
	Stale string
	// Lock takes the session lock of the run with token, held until its
	// Release (PostgreSQL: pg_try_advisory_lock on a *sql.Conn of its own,
	// never one the pool hands around; SQLite: a flock in the database's
	// folder). An error means the run cannot start.
	Lock func(ctx context.Context, token string) (Lock, error)
	// Probe says whether the lock of the run with token is held by a live
	// process (true) or free (false): a run whose lock is free is marked
	// gone, at once. In a claim, q is its transaction (see group.go).
	Probe func(ctx context.Context, q Querier, token string) (held bool, err error)
	// OneWriter sends the Ledger's write transactions through one group
	// of one slot in the process, which commits every write waiting at that
	// moment in one transaction (SQLite takes one writer at a time, and a
	// commit costs a sync of its log: see group.go).
	OneWriter bool
	// Batch sends the claims of jobs the ledger has never seen that take
	// nothing of a capped budget, and the records of a run's own attempts
	// that are still their jobs' last, as one statement for all the
	// goroutines that ask at once (its own transaction: one round trip),
	// in PostgreSQL's SQL (see group.go). What the statement does not
	// take goes the one-at-a-time way.
	Batch bool
	// Page is how many rows Jobs reads in one query, 0 for 500: over a
	// network each page is a round trip waited for before the next, so a
	// server far away wants a larger one (memory follows the page).
	Page int
	// Version, when not "", is a query of one text value that changes
	// whenever a row of jobs or attempts does (see Ledger.Version).
	Version string
}

// A Querier runs a query: a *sql.DB or a *sql.Tx.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// A Lock is a run's session lock (see Dialect.Lock).
type Lock interface {
	// Check reports an error when the lock is no longer held (its
	// connection died); it is called with each heartbeat.
	Check(ctx context.Context) error
	// Lost is closed once the lock is known to be lost.
	Lost() <-chan struct{}
	// Release lets the lock go.
	Release() error
}

// bind writes GONE in q as the condition that a run r is gone, NOW as the
// database's clock, and its placeholders ? as $1, $2, ..., which
// PostgreSQL takes and SQLite takes as the same.
func (d *Dialect) bind(q string) string {
	q = strings.ReplaceAll(strings.ReplaceAll(q, "GONE", d.gone()), "NOW", d.Now)
	parts := strings.Split(q, "?")
	for n := 1; n < len(parts); n++ {
		parts[n] = "$" + strconv.Itoa(n) + parts[n]
	}
	return strings.Join(parts, "")
}

// gone is the SQL condition, on the runs row r, under which a run is gone.
func (d *Dialect) gone() string {
	c := "r.gone <> 0 OR r.ended IS NOT NULL"
	if d.Stale != "" {
		c += " OR " + d.Stale
	}
	return "(" + c + ")"
}
