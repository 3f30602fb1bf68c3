package sqliteledger

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/sqlledger"
)

// applicationID is the PRAGMA application_id of a ledger: "CGLD".
const applicationID = 0x43474C44

// migrate brings the database to sqlledger.Version, in one transaction
// (begun IMMEDIATE: another process may be at it too): it makes the
// schema in a new database, brings a ledger of version 1 or 2 to it, and
// refuses a database of another program or of a newer version.
func migrate(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var app, v int64
	if err := conn.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&app); err != nil {
		return err
	}
	if err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	switch {
	case app != 0 && app != applicationID:
		return errNotLedger
	case v == sqlledger.Version:
		return nil
	case v > sqlledger.Version:
		return fmt.Errorf("the ledger's schema is version %d, written by a newer version of creative-go; this one reads version %d", v, sqlledger.Version)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil || v == sqlledger.Version {
		return err // another process made it meanwhile
	}
	var tables int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table'`).Scan(&tables); err != nil {
		return err
	}
	switch {
	case v == 0 && tables > 0:
		return errNotLedger
	case v == 1 || v == 2:
		if err := fromObjects(ctx, tx); err != nil {
			return fmt.Errorf("bringing the ledger from version %d to %d: %w", v, sqlledger.Version, err)
		}
	default:
		if err := sqlledger.Create(ctx, tx); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d; PRAGMA application_id = %d`, sqlledger.Version, applicationID)); err != nil {
		return err
	}
	if upgrading != nil && v != 0 {
		upgrading()
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if v != 0 {
		_, _ = conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	}
	return nil
}

// upgrading, when set (by tests), is called in the transaction that
// brings an earlier ledger to this schema, before it commits.
var upgrading func()

// An oldRecord is a record of the object ledger (versions 1 and 2): the
// JSON of one stage of one attempt.
type oldRecord struct {
	batch.Entry
}

// fromObjects brings the object ledger of versions 1 and 2, whose records
// were JSON objects in one table keyed ledger/<3 hex>/<job>.<attempt>[.<stage>].json,
// to the schema, in tx: each attempt's last stage becomes its row, each
// job's last attempt its job's, the runs the records name runs that ended,
// and the chains of the budget's shares what was spent. The rows are read
// in the order of their keys, so that memory holds one job at a time.
func fromObjects(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `DROP VIEW IF EXISTS jobs; DROP VIEW IF EXISTS records; DROP VIEW IF EXISTS runs;
		DROP TRIGGER IF EXISTS record_inserted; DROP TRIGGER IF EXISTS record_deleted; DROP TRIGGER IF EXISTS record_replaced;
		DROP INDEX IF EXISTS jobs_by_state; ALTER TABLE objects RENAME TO objects_old`); err != nil {
		return err
	}
	if err := sqlledger.Create(ctx, tx); err != nil {
		return err
	}
	m := &mover{tx: tx, spent: map[string]int64{}, lim: map[string]int64{}, runs: map[string]bool{}}
	type row struct {
		key  string
		data []byte
	}
	const pageRows = 1000
	for after := "ledger/"; ; {
		rows, err := tx.QueryContext(ctx, `SELECT key, data FROM objects_old WHERE key > ? AND key < 'ledger0' AND data IS NOT NULL ORDER BY key LIMIT ?`, after, pageRows)
		if err != nil {
			return err
		}
		var got []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.key, &r.data); err != nil {
				rows.Close()
				return err
			}
			got = append(got, r)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, r := range got {
			m.add(r.key, r.data)
			after = r.key
		}
		if err := m.write(ctx); err != nil || len(got) < pageRows {
			if err != nil {
				return err
			}
			break
		}
	}
	return m.finish(ctx)
}

// A mover gathers the records of the object ledger as they are read.
type mover struct {
	tx       *sql.Tx
	attempts []oldRecord // of the job being read: its attempts' last stages
	ranks    []int
	spent    map[string]int64 // the end of each cap's chain of shares
	lim      map[string]int64 // the limit of its last share
	runs     map[string]bool
	pending  [][]any // rows to insert, a job's at a time
}

// noRun stands for the run of a record that names none (the oldest).
const noRun = "00000000000000000000000000000000"

func (m *mover) add(key string, data []byte) {
	rest := strings.TrimPrefix(key, "ledger/")
	if cap, pos, ok := strings.Cut(strings.TrimPrefix(rest, "budget/"), "/"); ok && strings.HasPrefix(rest, "budget/") {
		var sh struct {
			Size  int64 `json:"size"`
			Limit int64 `json:"limit"`
		}
		p, err := strconv.ParseInt(strings.TrimSuffix(pos, ".json"), 10, 64)
		if err == nil && json.Unmarshal(data, &sh) == nil && p+sh.Size > m.spent[cap] {
			m.spent[cap], m.lim[cap] = p+sh.Size, sh.Limit
		}
		return
	}
	var r oldRecord
	if len(rest) < 4+32 || rest[3] != '/' || json.Unmarshal(data, &r) != nil || r.Job == "" || r.Attempt < 1 {
		return // a heartbeat, the page's mark, a record cut short
	}
	rank := 0
	switch name := rest[4:]; {
	case strings.HasSuffix(name, ".end.json"):
		rank = 2
	case strings.HasSuffix(name, ".answered.json"):
		rank = 1
	}
	if len(m.attempts) > 0 && m.attempts[0].Job != r.Job {
		m.flush()
	}
	for i := range m.attempts {
		if m.attempts[i].Attempt == r.Attempt {
			if rank >= m.ranks[i] {
				m.attempts[i], m.ranks[i] = r, rank
			}
			return
		}
	}
	m.attempts, m.ranks = append(m.attempts, r), append(m.ranks, rank)
}

// flush turns the attempts of one job into rows.
func (m *mover) flush() {
	var last *oldRecord
	for i := range m.attempts {
		a := &m.attempts[i]
		if a.Run == "" {
			a.Run = noRun
		}
		m.runs[a.Run] = true
		if a.Kind == "" {
			a.Kind = batch.KindCall
		}
		m.pending = append(m.pending, []any{"attempt", a.Job, a.Attempt, string(a.Kind), a.Run, a.Worker, string(a.State), a.Lost,
			js(a.URLs, a.URLs == nil), a.Text, js(a.Files, a.Files == nil), a.Error, a.Requests, a.RequestID, a.Time.UnixMilli(), a.Time.UnixMilli(), a.Seconds})
		if last == nil || a.Attempt > last.Attempt {
			last = a
		}
	}
	if last != nil {
		m.pending = append(m.pending, []any{"job", last.Job, last.ID, last.Line, last.Op, last.Stem, js(last.Fields, last.Fields == nil),
			last.Attempt, string(last.State), last.Lost})
	}
	m.attempts, m.ranks = m.attempts[:0], m.ranks[:0]
}

func js[T any](v T, isNil bool) any {
	if isNil {
		return nil
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// oldRows are the statements that write what was gathered.
var oldRows = map[string]string{
	"attempt": `INSERT INTO attempts (job, n, kind, run, worker, state, lost, urls, text, files, error, requests, request_id, claimed, ended, seconds)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, nullif(?, ''), ?, nullif(?, ''), ?, nullif(?, ''), ?, ?, ?)`,
	"job": `INSERT INTO jobs (job, id, line, op, stem, fields, attempt, state, lost) VALUES (?, nullif(?, ''), ?, ?, ?, ?, ?, ?, ?)`,
}

// write writes the rows of the jobs read whole.
func (m *mover) write(ctx context.Context) error {
	for _, row := range m.pending {
		if _, err := m.tx.ExecContext(ctx, oldRows[row[0].(string)], row[1:]...); err != nil {
			return err
		}
	}
	m.pending = m.pending[:0]
	return nil
}

// finish writes the last job, the runs and the budget, and drops the old
// table.
func (m *mover) finish(ctx context.Context) error {
	m.flush()
	if err := m.write(ctx); err != nil {
		return err
	}
	for run := range m.runs {
		if _, err := m.tx.ExecContext(ctx, `INSERT INTO runs (token, worker, lease_ms, started, beat, ended, gone) VALUES (?, '', 90000, 0, 0, 0, 1)`, run); err != nil {
			return err
		}
	}
	for cap, n := range m.spent {
		if _, err := m.tx.ExecContext(ctx, `UPDATE budget SET spent = ?, lim = ? WHERE cap = ?`, n, m.lim[cap], cap); err != nil {
			return err
		}
	}
	_, err := m.tx.ExecContext(ctx, `DROP TABLE objects_old`)
	return err
}
