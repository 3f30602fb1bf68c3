package sqliteledger

import (
	"context"
	"database/sql"
	"fmt"

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
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var app, v, tables int64
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT user_version FROM pragma_user_version), (SELECT application_id FROM pragma_application_id),
		(SELECT count(*) FROM sqlite_schema WHERE type = 'table')`).Scan(&v, &app, &tables); err != nil {
		return err
	}
	switch {
	// Another program's database (its application id, or tables without a
	// version), or one of this schema without a ledger's application id.
	case app != 0 && app != applicationID, v == sqlledger.Version && app != applicationID, v == 0 && tables > 0:
		return errNotLedger
	case v == sqlledger.Version:
		return nil
	case v > sqlledger.Version:
		return fmt.Errorf("the ledger's schema is version %d, written by a newer version of creative-go; this one reads version %d", v, sqlledger.Version)
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

// fromObjects brings the object ledger of versions 1 and 2, whose records
// were JSON objects in one table keyed ledger/<3 hex>/<job>.<attempt>[.<stage>].json,
// to the schema, in tx and in SQL: each attempt's last stage becomes its
// row, each job's last attempt its job's, the runs the records name open
// runs (a run of the earlier version may still go: its process holds the
// lock of its run in this folder, as this version's do, and the sweep of
// each Begin marks it gone once its lock is free), and the chains of the budget's shares what was spent (the
// end of each chain, and the limit of its last share). A record that is
// no JSON (one cut short by a crash of an early version) is passed over.
func fromObjects(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `DROP VIEW IF EXISTS jobs; DROP VIEW IF EXISTS records; DROP VIEW IF EXISTS runs;
		DROP TRIGGER IF EXISTS record_inserted; DROP TRIGGER IF EXISTS record_deleted; DROP TRIGGER IF EXISTS record_replaced;
		DROP INDEX IF EXISTS jobs_by_state; ALTER TABLE objects RENAME TO objects_old`)
	if err == nil {
		err = sqlledger.Create(ctx, tx)
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, fromObjectsSQL)
	}
	return err
}

// fromObjectsSQL moves the records of objects_old into the tables, then
// drops it.
const fromObjectsSQL = `
CREATE TEMP TABLE old AS
SELECT substr(key, 12, 32) AS job, json_extract(j, '$.attempt') AS n, j,
	CASE WHEN key GLOB '*.end.json' THEN 2 WHEN key GLOB '*.answered.json' THEN 1 ELSE 0 END AS rank,
	coalesce(json_extract(j, '$.run'), '00000000000000000000000000000000') AS run,
	CAST((julianday(json_extract(j, '$.time')) - 2440587.5) * 86400000 AS INTEGER) AS ms
FROM (SELECT key, CAST(data AS TEXT) AS j FROM objects_old
	WHERE key GLOB 'ledger/[0-9a-f][0-9a-f][0-9a-f]/*.json' AND data IS NOT NULL AND json_valid(CAST(data AS TEXT)))
WHERE json_extract(j, '$.attempt') >= 1 AND json_extract(j, '$.job') = substr(key, 12, 32);

INSERT INTO attempts (job, n, kind, run, worker, state, lost, urls, text, files, error, requests, request_id, claimed, ended, seconds)
SELECT job, n, coalesce(json_extract(j, '$.kind'), 'call'), run, coalesce(json_extract(j, '$.worker'), ''),
	json_extract(j, '$.state'), coalesce(json_extract(j, '$.lost'), 0), json_extract(j, '$.urls'), json_extract(j, '$.text'),
	json_extract(j, '$.files'), json_extract(j, '$.error'), coalesce(json_extract(j, '$.requests'), 0),
	json_extract(j, '$.requestId'), coalesce(ms, 0), ms, json_extract(j, '$.seconds')
FROM (SELECT *, row_number() OVER (PARTITION BY job, n ORDER BY rank DESC) AS k FROM old) WHERE k = 1;

INSERT INTO jobs (job, id, line, op, stem, fields, attempt, state, lost)
SELECT job, json_extract(j, '$.id'), coalesce(json_extract(j, '$.line'), 0), coalesce(json_extract(j, '$.op'), ''),
	coalesce(json_extract(j, '$.stem'), ''), json_extract(j, '$.fields'), n, json_extract(j, '$.state'), coalesce(json_extract(j, '$.lost'), 0)
FROM (SELECT *, row_number() OVER (PARTITION BY job ORDER BY n DESC, rank DESC) AS k FROM old) WHERE k = 1;

INSERT INTO runs (token, worker, lease_ms, started, beat, ended, gone)
SELECT DISTINCT run, '', 90000, 0, 0, NULL, 0 FROM old;

UPDATE budget SET (spent, lim) = (
	SELECT CAST(substr(key, 16 + length(cap), 20) AS INTEGER) + json_extract(CAST(data AS TEXT), '$.size'),
		json_extract(CAST(data AS TEXT), '$.limit')
	FROM objects_old WHERE key GLOB 'ledger/budget/' || cap || '/[0-9]*.json' AND json_valid(CAST(data AS TEXT))
	ORDER BY key DESC LIMIT 1)
WHERE EXISTS (SELECT 1 FROM objects_old WHERE key GLOB 'ledger/budget/' || cap || '/[0-9]*.json');

DROP TABLE old;
DROP TABLE objects_old;
`
