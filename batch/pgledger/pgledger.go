package pgledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/creativegen/creative-go/batch/sqlledger"
)

// Settings of every connection: what ends a dead worker's session.
const (
	// idleInTransaction ends a session that sits in a transaction this
	// long (a worker stopped or cut off in the middle of one), so that the
	// rows it locked are free for the others: a ledger's transaction is a
	// few statements.
	idleInTransaction = 10 * time.Second
	// defaultLease sets the sessions' TCP keepalives until a run's lock
	// learns its run's lease (batch's default lease).
	defaultLease = 90 * time.Second
	// conns bounds the pool's connections; a run's lock has one more.
	conns = 32
)

// A Ledger is the batch.Ledger in a PostgreSQL database: sqlledger's, with
// the two writes of every job sent in batches (sqlledger.Dialect.Batch).
type Ledger = sqlledger.Ledger

// IsURL reports whether s names a PostgreSQL database (postgres:// or
// postgresql://).
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Open opens the ledger in the PostgreSQL database at dsn (postgres://
// or postgresql://, as libpq takes them), making its tables in one
// transaction when the database has none.
//
// Each run holds an advisory lock, keyed by its token, on a connection of
// its own: its loss (the connection cut, the server stopped) is a lapsed
// lease. Heartbeats and ages are read on the database's clock. Sessions
// sit idle in a transaction at most 10 s, and the server's TCP keepalives
// end a silent worker's session, and free its lock, within its lease
// (never before the worker's own lease has lapsed).
//
// A server that does not answer (one that accepts a connection and says
// nothing) fails Open within 10 s, or the URL's connect_timeout (in
// seconds) when it has one: each connection's opening, and Open's first
// statements, are bounded by it.
func Open(ctx context.Context, dsn string) (*Ledger, error) {
	if u, err := url.Parse(dsn); !IsURL(dsn) || err != nil || u.Fragment != "" {
		return nil, fmt.Errorf("pgledger: %s is not a postgres:// URL (a # in a password is written %%23)", redact(dsn))
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgledger: %w", err)
	}
	configure(cfg)
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = answerWait
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if err := tryStart(ctx, cfg.ConnectTimeout, func(ctx context.Context) error { return migrate(ctx, db) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("pgledger: %s: %w", redact(dsn), err)
	}
	return sqlledger.New(db, dialect(cfg)), nil
}

// answerWait bounds, unless the URL's connect_timeout says otherwise, the
// opening of each connection and Open's first statements.
var answerWait = 10 * time.Second

// startWait bounds how long Open waits for a server that is starting or
// stopping (a restart), or not yet listening.
const startWait = 10 * time.Second

// tryStart runs fn, each try with a context that ends after wait (saying
// so plainly when the server did not answer in that time), and again
// while the server is in a restart, until startWait passed.
func tryStart(ctx context.Context, wait time.Duration, fn func(context.Context) error) error {
	deadline := time.Now().Add(startWait)
	for {
		actx, cancel := context.WithTimeout(ctx, wait)
		err := fn(actx)
		timedOut := err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if timedOut {
			return fmt.Errorf("the ledger did not answer within %v (connect_timeout in the URL sets this bound): %w", wait, err)
		}
		var pgErr *pgconn.PgError
		restarting := errors.As(err, &pgErr) && pgErr.Code == "57P03" || errors.Is(err, syscall.ECONNREFUSED)
		if !restarting || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// configure sets what every connection of the ledger needs.
func configure(cfg *pgx.ConnConfig) {
	p := cfg.RuntimeParams
	// Defaults, sent as options before the URL's own: the server applies
	// the URL's parameters and its later options over them. The program's
	// name, and no parallel workers: a run's lookups are of a few hundred
	// jobs by key, and with parallel workers the planner scans the whole
	// table for them in three processes (35 ms a lookup at 100,000 jobs,
	// 10 ms by the index alone).
	p["options"] = strings.TrimSpace(`-c application_name=creative\ batch -c max_parallel_workers_per_gather=0 ` + p["options"])
	p["idle_in_transaction_session_timeout"] = fmt.Sprint(idleInTransaction.Milliseconds())
	maps.Copy(p, keepalives(defaultLease))
	// The worker's own keepalives: a server that went silent is found
	// gone within about 30 s, and the run's lock with it.
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAliveConfig: net.KeepAliveConfig{
		Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3}}
	cfg.DialFunc = d.DialContext
}

// dialect is PostgreSQL's, with the runs' locks on connections of cfg.
func dialect(cfg *pgx.ConnConfig) sqlledger.Dialect {
	return sqlledger.Dialect{
		Now:       now,
		ForUpdate: " FOR UPDATE",
		Stale:     "r.beat < NOW - r.lease_ms * 4 / 3",
		Lock: func(ctx context.Context, token string) (sqlledger.Lock, error) {
			return takeLock(ctx, cfg.Copy(), token)
		},
		Probe:   probe,
		Batch:   true,
		Page:    page,
		Version: version,
	}
}

// version is the ledger's id and a digest of every row of jobs and of
// attempts, each row's text hashed and the hashes summed: any change to a
// row changes it, but for a chance of one in 2^64.
const version = `SELECT (SELECT id FROM ledger) || ' ' ||
	(SELECT count(*) || ' ' || coalesce(sum(hashtextextended(j::text, 0)), 0) FROM jobs j) || ' ' ||
	(SELECT count(*) || ' ' || coalesce(sum(hashtextextended(a::text, 0)), 0) FROM attempts a)`

// page is how many rows a read of every job takes in one round trip: a
// rerun of 100,000 jobs reads them in 20.
const page = 5000

// probe says whether the run with token is to be taken for live: its lock
// is held, or its last heartbeat is younger than a third of its lease
// (the lease's margin, inside which a worker whose lock was lost may not
// yet have stopped sending).
func probe(ctx context.Context, q sqlledger.Querier, token string) (bool, error) {
	key, err := lockKey(token)
	if err != nil {
		return false, err
	}
	var live bool
	err = q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l WHERE `+keyCond+`)
		OR EXISTS (SELECT 1 FROM runs r WHERE r.token = $2 AND r.beat >= `+now+` - r.lease_ms / 3)`, key, token).Scan(&live)
	return live, err
}

// now is the database's clock in milliseconds since 1970.
const now = `(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint`

// versionTable is where a database keeps its ledger's schema version.
const versionTable = "ledger_version"

// migrate makes the schema in a database that has no ledger, in one
// transaction under a lock (workers may open a new database at once), and
// refuses one of another version.
func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	// Any constant key serves: the lock lasts the transaction.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(4851297115213088581)`); err != nil {
		return err
	}
	var have bool
	var tables int
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL, (SELECT count(*) FROM pg_tables
		WHERE schemaname = current_schema() AND tablename IN ('runs', 'jobs', 'attempts', 'budget'))`, versionTable).Scan(&have, &tables); err != nil {
		return err
	}
	switch {
	case have:
		var v int
		if err := tx.QueryRowContext(ctx, `SELECT version FROM `+versionTable).Scan(&v); err != nil {
			return fmt.Errorf("reading the ledger's version: %w", err)
		}
		if v != sqlledger.Version {
			return fmt.Errorf("the ledger's schema is version %d; this version of creative-go reads version %d", v, sqlledger.Version)
		}
		return nil
	case tables > 0:
		return errors.New("the database has tables of the ledger's names but is no ledger of creative-go: give a database of its own")
	}
	if err := sqlledger.Create(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %[1]s (version INTEGER NOT NULL); INSERT INTO %[1]s (version) VALUES (%d)`,
		versionTable, sqlledger.Version)); err != nil {
		return err
	}
	return tx.Commit()
}

// redact is dsn without its password, for errors: none of the user
// information's, of a query parameter naming one (password, sslpassword,
// in any case), or of a fragment (a password's unescaped #). What is not
// a postgres:// URL (an opaque postgres:..., a key=value string) is not
// shown at all.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || !IsURL(dsn) || u.Opaque != "" {
		return "the ledger's URL"
	}
	q := u.Query()
	for k := range q {
		if strings.Contains(strings.ToLower(k), "password") {
			q.Set(k, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	u.Fragment, u.RawFragment = "", ""
	return u.Redacted()
}
