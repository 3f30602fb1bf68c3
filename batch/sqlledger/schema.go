package sqlledger

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
)

// Version is the version of Schema: SQLite keeps it in PRAGMA
// user_version, PostgreSQL in the table ledger_version. Versions 1 and 2
// were the object ledger of earlier releases (batch/sqliteledger brings
// them to this one).
const Version = 3

// Schema is the ledger's tables, the same on SQLite and PostgreSQL 15,
// created in one transaction by Create. Times are milliseconds since 1970
// by the database's clock; booleans are 0 or 1. Each job's state is its
// last attempt's, kept in jobs too, so that counting jobs by state is one
// grouped scan of an index.
var Schema = []string{
	`CREATE TABLE runs (
	token    TEXT PRIMARY KEY CHECK (length(token) = 32),
	worker   TEXT NOT NULL,
	lease_ms BIGINT NOT NULL CHECK (lease_ms > 0),
	started  BIGINT NOT NULL,
	beat     BIGINT NOT NULL,
	ended    BIGINT,
	gone     INTEGER NOT NULL DEFAULT 0 CHECK (gone IN (0, 1))
)`,
	// The runs that may still be live, for the sweep of their locks.
	`CREATE INDEX runs_open ON runs (token) WHERE gone = 0 AND ended IS NULL`,
	`CREATE TABLE jobs (
	job     TEXT PRIMARY KEY CHECK (length(job) = 32),
	id      TEXT,
	line    BIGINT NOT NULL,
	op      TEXT NOT NULL,
	stem    TEXT NOT NULL,
	fields  TEXT,
	attempt INTEGER NOT NULL CHECK (attempt >= 0),
	state   TEXT NOT NULL CHECK (state IN ('claimed', 'answered', 'done', 'failed', 'refused', 'unknown')),
	lost    INTEGER NOT NULL DEFAULT 0 CHECK (lost IN (0, 1))
)`,
	`CREATE INDEX jobs_by_state ON jobs (state, lost)`,
	`CREATE TABLE attempts (
	job        TEXT NOT NULL REFERENCES jobs (job),
	n          INTEGER NOT NULL CHECK (n >= 1),
	kind       TEXT NOT NULL CHECK (kind IN ('call', 'download')),
	run        TEXT NOT NULL REFERENCES runs (token),
	worker     TEXT NOT NULL,
	state      TEXT NOT NULL CHECK (state IN ('claimed', 'answered', 'done', 'failed', 'refused', 'unknown')),
	lost       INTEGER NOT NULL DEFAULT 0 CHECK (lost IN (0, 1)),
	urls       TEXT,
	text       TEXT,
	files      TEXT,
	error      TEXT,
	requests   INTEGER NOT NULL DEFAULT 0,
	request_id TEXT,
	claimed    BIGINT NOT NULL,
	ended      BIGINT,
	seconds    DOUBLE PRECISION,
	PRIMARY KEY (job, n)
)`,
	`CREATE INDEX attempts_claimed ON attempts (run) WHERE state = 'claimed'`,
	// What every run of the ledger took of the budget, in calls and in
	// millionths of the prices' unit, and the limit the last share taken
	// was taken under (runs may give different caps: each share is taken
	// under its own run's).
	`CREATE TABLE budget (
	cap   TEXT PRIMARY KEY CHECK (cap IN ('calls', 'spend')),
	spent BIGINT NOT NULL DEFAULT 0 CHECK (spent >= 0),
	lim   BIGINT NOT NULL DEFAULT 0
)`,
	`INSERT INTO budget (cap, spent, lim) VALUES ('calls', 0, 0), ('spend', 0, 0)`,
	// The ledger's identity, one row made with the schema: outputs kept
	// apart from the ledger (a bucket) name by it the ledger of their jobs.
	identity,
}

const identity = `CREATE TABLE IF NOT EXISTS ledger (one INTEGER PRIMARY KEY CHECK (one = 1), id TEXT NOT NULL CHECK (length(id) = 32))`

// Create makes the schema in tx, in a database that has none, and the
// ledger's identity.
func Create(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, strings.Join(Schema, ";\n")+";\n"+newID()); err != nil {
		return fmt.Errorf("sqlledger: creating the schema: %w", err)
	}
	return nil
}

// newID is the statement that gives a ledger its identity, 16 random
// bytes in hex, unless it has one.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	return `INSERT INTO ledger (one, id) VALUES (1, '` + hex.EncodeToString(b[:]) + `') ON CONFLICT (one) DO NOTHING`
}

// ID returns the ledger's identity, made once with its schema (a ledger
// made before the identity gets one the first time it is asked), by
// which outputs kept apart from it name the one ledger of their jobs.
func (l *Ledger) ID(ctx context.Context) (string, error) {
	var id string
	if l.db.QueryRowContext(ctx, `SELECT id FROM ledger`).Scan(&id) == nil {
		return id, nil
	}
	err := l.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, identity+";\n"+newID()); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT id FROM ledger`).Scan(&id)
	})
	if err != nil {
		return "", fmt.Errorf("sqlledger: the ledger's identity: %w", err)
	}
	return id, nil
}
