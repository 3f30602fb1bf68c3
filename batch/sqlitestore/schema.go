package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/creativegen/creative-go/internal/outdir"
)

// schemaVersion is the PRAGMA user_version of the schema below.
const schemaVersion = 2

// schema is the database's table of objects (see the package's doc), the
// columns SQLite reads from each record and heartbeat as it is written,
// the table of each job's last record, and the views that read them for
// people and scripts.
//
// A record is a row whose key is under ledger/<3 hex digits>/ and whose
// bytes are JSON; a heartbeat, one under ledger/runs/. Their columns are
// generated from the key and the bytes, STORED: filled when the row is
// written, by every statement that writes one (the writer's, the import of
// an earlier ledger, the sqlite3 shell), and NULL in every other row. The
// triggers keep latest, the last record of each job, in the same
// transaction as the record.
const schema = `
CREATE TABLE objects (
	seq  INTEGER PRIMARY KEY,
	key  TEXT NOT NULL UNIQUE,
	data BLOB,
	j TEXT AS (CASE WHEN (key GLOB 'ledger/[0-9a-f][0-9a-f][0-9a-f]/*' OR key GLOB 'ledger/runs/*.json')
		AND json_valid(CAST(data AS TEXT)) THEN CAST(data AS TEXT) END) VIRTUAL,
	stage TEXT AS (CASE WHEN j IS NOT NULL AND key GLOB 'ledger/[0-9a-f][0-9a-f][0-9a-f]/*' THEN
		CASE WHEN key GLOB '*.end.json' THEN 'end' WHEN key GLOB '*.answered.json' THEN 'answered' ELSE 'claim' END END) STORED,
	rank INTEGER AS (CASE stage WHEN 'end' THEN 2 WHEN 'answered' THEN 1 WHEN 'claim' THEN 0 END) VIRTUAL,
	job        TEXT    AS (CASE WHEN stage IS NOT NULL THEN json_extract(j, '$.job') END) STORED,
	attempt    INTEGER AS (CASE WHEN stage IS NOT NULL THEN json_extract(j, '$.attempt') END) STORED,
	line       INTEGER AS (CASE WHEN stage IS NOT NULL THEN json_extract(j, '$.line') END) STORED,
	id         TEXT    AS (CASE WHEN stage IS NOT NULL THEN json_extract(j, '$.id') END) STORED,
	op         TEXT    AS (CASE WHEN stage IS NOT NULL THEN json_extract(j, '$.op') END) STORED,
	kind       TEXT    AS (CASE WHEN stage IS NOT NULL THEN json_extract(j, '$.kind') END) STORED,
	state      TEXT    AS (CASE WHEN stage IS NOT NULL THEN json_extract(j, '$.state') END) STORED,
	lost       INTEGER AS (CASE WHEN stage IS NOT NULL THEN json_extract(j, '$.lost') END) STORED,
	requests   INTEGER AS (CASE WHEN stage IS NOT NULL THEN json_extract(j, '$.requests') END) STORED,
	request_id TEXT    AS (CASE WHEN stage IS NOT NULL THEN json_extract(j, '$.requestId') END) STORED,
	error      TEXT    AS (CASE WHEN stage IS NOT NULL THEN json_extract(j, '$.error') END) STORED,
	worker     TEXT    AS (json_extract(j, '$.worker')) STORED,
	run        TEXT    AS (json_extract(j, '$.run')) STORED,
	time       TEXT    AS (json_extract(j, '$.time')) STORED,
	pid        INTEGER AS (CASE WHEN stage IS NULL THEN json_extract(j, '$.pid') END) STORED
);

-- The records of a job, by attempt.
CREATE INDEX records_by_job ON objects (job, attempt) WHERE job IS NOT NULL;

-- The last record of each job, by attempt and stage (the one written
-- last decides between two ends of one attempt): its row in objects, and
-- its state.
CREATE TABLE latest (
	job     TEXT PRIMARY KEY,
	attempt INTEGER,
	rank    INTEGER,
	record  INTEGER NOT NULL,
	state   TEXT
) WITHOUT ROWID;
CREATE INDEX latest_by_state ON latest (state);

CREATE TRIGGER record_inserted AFTER INSERT ON objects WHEN new.job IS NOT NULL BEGIN
	INSERT INTO latest (job, attempt, rank, record, state) VALUES (new.job, new.attempt, new.rank, new.seq, new.state)
	ON CONFLICT (job) DO UPDATE SET attempt = excluded.attempt, rank = excluded.rank, record = excluded.record, state = excluded.state
	WHERE (excluded.attempt, excluded.rank, excluded.record) > (latest.attempt, latest.rank, latest.record);
END;

-- A record deleted or replaced: its job's last record is found again. (No
-- INSERT OR IGNORE: a trigger takes the conflict policy of the statement
-- that fired it.)
CREATE TRIGGER record_deleted AFTER DELETE ON objects WHEN old.job IS NOT NULL BEGIN
	DELETE FROM latest WHERE job = old.job AND record = old.seq;
	INSERT INTO latest (job, attempt, rank, record, state)
	SELECT job, attempt, rank, seq, state FROM objects
	WHERE job = old.job AND NOT EXISTS (SELECT 1 FROM latest WHERE job = old.job)
	ORDER BY attempt DESC, rank DESC, seq DESC LIMIT 1;
END;

CREATE TRIGGER record_replaced AFTER UPDATE OF data ON objects WHEN old.job IS NOT NULL OR new.job IS NOT NULL BEGIN
	DELETE FROM latest WHERE job IN (old.job, new.job);
	INSERT INTO latest (job, attempt, rank, record, state)
	SELECT job, attempt, rank, seq, state FROM objects WHERE job = old.job
	ORDER BY attempt DESC, rank DESC, seq DESC LIMIT 1;
	INSERT INTO latest (job, attempt, rank, record, state)
	SELECT job, attempt, rank, seq, state FROM objects
	WHERE job = new.job AND NOT EXISTS (SELECT 1 FROM latest WHERE job = new.job)
	ORDER BY attempt DESC, rank DESC, seq DESC LIMIT 1;
END;

-- Every record of every attempt at a job: its claim, its answer (links and
-- text, before any download) and its end.
CREATE VIEW records AS
SELECT key, job, attempt, stage, line, id, op, kind, state, lost, requests, request_id, error, worker, run, time,
	CAST(data AS TEXT) AS record
FROM objects WHERE stage IS NOT NULL;

-- Each job as its last record says: where it stands.
CREATE VIEW jobs AS
SELECT l.job AS job, o.attempt AS attempt, o.line AS line, o.id AS id, o.op AS op, o.kind AS kind, l.state AS state,
	o.lost AS lost, o.requests AS requests, o.request_id AS request_id, o.error AS error, o.worker AS worker,
	o.run AS run, o.time AS time, CAST(o.data AS TEXT) AS record
FROM latest l LEFT JOIN objects o ON o.seq = l.record;

-- The heartbeats of the runs under way, or killed before they ended.
CREATE VIEW runs AS
SELECT run, worker, time, pid FROM objects
WHERE key GLOB 'ledger/runs/*.json' AND j IS NOT NULL;
`

// migrate brings the database to schemaVersion: it creates the schema in a
// new database, importing the ledger folder an earlier version left, or
// brings a ledger of version 1 into the schema, each in one transaction,
// and refuses a database of a newer version.
func migrate(conn *sql.Conn, d *outdir.Dir) error {
	ctx := context.Background()
	root := d.Root()
	var v int
	if err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil || v == schemaVersion {
		return err
	}
	if v > schemaVersion {
		return fmt.Errorf("the ledger's schema is version %d, written by a newer version of creative-go; this one reads version %d", v, schemaVersion)
	}
	if v == 0 {
		if err := refuseUnclosed(root); err != nil {
			return err
		}
	}
	tx, err := conn.BeginTx(ctx, nil) // IMMEDIATE: another process may be at it too
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var again int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&again); err != nil {
		return err
	}
	switch again {
	case 0:
		_, err = tx.ExecContext(ctx, schema+fmt.Sprintf("PRAGMA user_version = %d;", schemaVersion))
		if err == nil {
			err = importFolder(ctx, tx, d)
		}
	case 1:
		err = fromVersion1(ctx, tx)
	}
	if err != nil {
		return err
	}
	return tx.Commit()
}

// fromVersion1 brings a ledger of version 1, whose records were rows of
// objects(key, data) read by views, into the schema: its rows are copied
// into the new objects table, which fills their columns and latest, and
// the old table and views are dropped, in the caller's transaction. A
// process killed meanwhile leaves version 1 as it was.
func fromVersion1(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
DROP VIEW IF EXISTS jobs;
DROP VIEW IF EXISTS records;
DROP VIEW IF EXISTS runs;
ALTER TABLE objects RENAME TO objects_v1;
`+schema+`
INSERT INTO objects (key, data) SELECT key, data FROM objects_v1 ORDER BY key;
DROP TABLE objects_v1;
`+fmt.Sprintf("PRAGMA user_version = %d;", schemaVersion))
	if err == nil && upgrading != nil {
		upgrading()
	}
	if err != nil {
		return fmt.Errorf("bringing the ledger from version 1 to %d: %w", schemaVersion, err)
	}
	return nil
}

// upgrading, when set (by tests), is called in the transaction of
// fromVersion1 before it commits.
var upgrading func()

// refuseUnclosed refuses a folder whose earlier ledger is not whole in its
// files: an earlier version kept a journal (.journal/) whose logs a run
// removed when it closed, and replayed after a crash of the machine.
func refuseUnclosed(root *os.Root) error {
	logs, _ := fs.Glob(root.FS(), ".journal/*.log")
	if len(logs) == 0 {
		return nil
	}
	return errors.New("the ledger/ folder of an earlier version of creative-go is in use, or its last run did not close " +
		"(.journal/ holds its log): let that run end, or rerun it once with that version, then open the folder again; " +
		"if no run is going and the machine did not crash since, removing .journal/ is safe")
}

// oldLedger is the folder of JSON records an earlier version kept.
const oldLedger = "ledger"

// importFolder records what an earlier version left in the folder, if it
// left its ledger folder: the records and heartbeats in it, under the same
// keys, and the outputs at the top of the folder, as files. The files stay
// as they are; the database is the record from now on. The records are
// read through the folder's gate: a link or a FIFO put there is refused.
func importFolder(ctx context.Context, tx *sql.Tx, dir *outdir.Dir) error {
	root := dir.Root()
	st, err := root.Lstat(oldLedger)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("the ledger/ folder of an earlier version: %w", err)
	case !st.IsDir():
		return errors.New("ledger in the folder is not the folder of records an earlier version kept " +
			"(a symbolic link or a file): put the folder itself there, or give another output folder")
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO objects (key, data) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	err = importOutputs(ctx, stmt, root)
	if err == nil {
		err = fs.WalkDir(root.FS(), oldLedger, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") || !d.Type().IsRegular() {
				return err
			}
			data, err := dir.ReadFile(p)
			if err == nil {
				_, err = stmt.ExecContext(ctx, p, data)
			}
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("importing the ledger/ folder of an earlier version: %w", err)
	}
	return nil
}

// importOutputs records the files at the top of the folder, the outputs
// of the earlier version, reading the folder a page of names at a time: it
// may hold a million of them.
func importOutputs(ctx context.Context, stmt *sql.Stmt, root *os.Root) error {
	f, err := root.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		entries, err := f.ReadDir(listPage)
		for _, e := range entries {
			if n := e.Name(); !strings.HasPrefix(n, ".") && !reserved[n] && e.Type().IsRegular() {
				if _, err := stmt.ExecContext(ctx, n, nil); err != nil {
					return err
				}
			}
		}
		if errors.Is(err, io.EOF) || err == nil && len(entries) == 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
