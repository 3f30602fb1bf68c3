package sqlitestore

import (
	"cmp"
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

// schema is the database's table of objects (see the package's doc), with
// the columns of the records and heartbeats in it (see rowArgs), the index
// of each job's last record by state, the triggers that keep last (set on
// the last record of each job, NULL on every other row) in the transaction
// that writes a record, and the views that read them for people and
// scripts. A job's records are the keys from ledger/<3 hex>/<job>. to
// ledger/<3 hex>/<job>/, found in the index of the keys; a record's job
// and the rank of its stage are read from its key.
const schema = `
CREATE TABLE objects (
	seq        INTEGER PRIMARY KEY,
	key        TEXT NOT NULL UNIQUE,
	data       BLOB,
	stage      TEXT,
	attempt    INTEGER,
	line       INTEGER,
	id         TEXT,
	op         TEXT,
	kind       TEXT,
	state      TEXT,
	lost       INTEGER,
	requests   INTEGER,
	request_id TEXT,
	error      TEXT,
	worker     TEXT,
	run        TEXT,
	time       TEXT,
	pid        INTEGER,
	last       INTEGER,
	job  TEXT    AS (CASE WHEN stage IS NOT NULL THEN substr(key, 12, 32) END) VIRTUAL,
	rank INTEGER AS (CASE stage WHEN 'end' THEN 2 WHEN 'answered' THEN 1 WHEN 'claim' THEN 0 END) VIRTUAL
);

-- Each job's last record, by state (last in it too, so that jobs by state
-- is counted from the index alone): the jobs in a state are together, and
-- a job that moves on leaves its entry for one beside the newest.
CREATE INDEX jobs_by_state ON objects (state, last) WHERE last IS NOT NULL;

-- A record written comes with last set: an earlier last record of its job
-- is no longer the last, and it is not the last if a later one is there.
-- Records are ordered by attempt, then stage, then the one written last.
CREATE TRIGGER record_inserted AFTER INSERT ON objects WHEN new.last IS NOT NULL BEGIN
	UPDATE objects SET last = NULL
	WHERE key > substr(new.key, 1, 43) || '.' AND key < substr(new.key, 1, 43) || '/' AND last IS NOT NULL
		AND seq <> new.seq AND (coalesce(attempt, -1), rank, seq) < (coalesce(new.attempt, -1), new.rank, new.seq);
	UPDATE objects SET last = NULL
	WHERE seq = new.seq AND EXISTS (SELECT 1 FROM objects
		WHERE key > substr(new.key, 1, 43) || '.' AND key < substr(new.key, 1, 43) || '/' AND last IS NOT NULL AND seq <> new.seq);
END;

-- A record deleted or replaced: its job's last record is found again.
CREATE TRIGGER record_deleted AFTER DELETE ON objects WHEN old.last IS NOT NULL BEGIN
	UPDATE objects SET last = 1 WHERE seq = (SELECT seq FROM objects
		WHERE key > substr(old.key, 1, 43) || '.' AND key < substr(old.key, 1, 43) || '/' AND stage IS NOT NULL
		ORDER BY coalesce(attempt, -1) DESC, rank DESC, seq DESC LIMIT 1);
END;

CREATE TRIGGER record_replaced AFTER UPDATE OF data ON objects WHEN old.stage IS NOT NULL OR new.stage IS NOT NULL BEGIN
	UPDATE objects SET last = NULL
	WHERE key > substr(new.key, 1, 43) || '.' AND key < substr(new.key, 1, 43) || '/' AND last IS NOT NULL;
	UPDATE objects SET last = 1 WHERE seq = (SELECT seq FROM objects
		WHERE key > substr(new.key, 1, 43) || '.' AND key < substr(new.key, 1, 43) || '/' AND stage IS NOT NULL
		ORDER BY coalesce(attempt, -1) DESC, rank DESC, seq DESC LIMIT 1);
END;

-- Every record of every attempt at a job: its claim, its answer (links and
-- text, before any download) and its end.
CREATE VIEW records AS
SELECT key, job, attempt, stage, line, id, op, kind, state, lost, requests, request_id, error, worker, run, time,
	CAST(data AS TEXT) AS record
FROM objects WHERE stage IS NOT NULL;

-- Each job as its last record says: where it stands.
CREATE VIEW jobs AS
SELECT job, attempt, line, id, op, kind, state, lost, requests, request_id, error, worker, run, time,
	CAST(data AS TEXT) AS record
FROM objects WHERE last IS NOT NULL;

-- The heartbeats of the runs under way, or killed before they ended.
CREATE VIEW runs AS
SELECT run, worker, time, pid FROM objects
WHERE key GLOB 'ledger/runs/*.json' AND json_valid(CAST(data AS TEXT));
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
	if err := tx.Commit(); err != nil || again != 1 {
		return err
	}
	// The upgrade wrote the whole ledger again in one transaction: its
	// WAL is as large, and would stay so on the disk. Copied into the
	// database, it is cut back; when another process reads meanwhile, a
	// later checkpoint does it.
	_, _ = conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return nil
}

// fromVersion1 brings a ledger of version 1, whose records were rows of
// objects(key, data) read by views, into the schema, in the caller's
// transaction: its rows are written into the new objects table as the
// writer writes them, a page at a time (memory stays flat), which fills
// their columns and marks each job's last record, and the old table and
// views are dropped. A
// process killed meanwhile leaves version 1 as it was.
func fromVersion1(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
DROP VIEW IF EXISTS jobs;
DROP VIEW IF EXISTS records;
DROP VIEW IF EXISTS runs;
ALTER TABLE objects RENAME TO objects_v1;
`+schema)
	if err == nil {
		err = copyVersion1(ctx, tx)
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, fmt.Sprintf("DROP TABLE objects_v1; PRAGMA user_version = %d;", schemaVersion))
	}
	if err == nil && upgrading != nil {
		upgrading()
	}
	if err != nil {
		return fmt.Errorf("bringing the ledger from version 1 to %d: %w", schemaVersion, err)
	}
	return nil
}

// copyVersion1 writes the rows of objects_v1 into objects, in the order of
// their keys, a page of them at a time.
func copyVersion1(ctx context.Context, tx *sql.Tx) error {
	insert, err := tx.PrepareContext(ctx, statements[opCreate])
	if err != nil {
		return err
	}
	defer insert.Close()
	type row struct {
		key  string
		data []byte
	}
	page := make([]row, 0, listPage)
	for after := ""; ; after = page[len(page)-1].key {
		page = page[:0]
		rows, err := tx.QueryContext(ctx, `SELECT key, data, data IS NULL FROM objects_v1 WHERE key > ? ORDER BY key LIMIT ?`, after, listPage)
		if err != nil {
			return err
		}
		for rows.Next() {
			var r row
			var isFile bool
			if err := rows.Scan(&r.key, &r.data, &isFile); err != nil {
				rows.Close()
				return err
			}
			if r.data == nil && !isFile {
				r.data = []byte{} // an object of no bytes, which nil would take for an output
			}
			page = append(page, r)
		}
		if err := cmp.Or(rows.Err(), rows.Close()); err != nil {
			return err
		}
		for _, r := range page {
			if _, err := insert.ExecContext(ctx, rowArgs(r.key, r.data)...); err != nil {
				return err
			}
		}
		if len(page) < listPage {
			return nil
		}
	}
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
	stmt, err := tx.PrepareContext(ctx, statements[opCreate])
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
				_, err = stmt.ExecContext(ctx, rowArgs(p, data)...)
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
				if _, err := stmt.ExecContext(ctx, rowArgs(n, nil)...); err != nil {
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
