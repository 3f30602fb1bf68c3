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
const schemaVersion = 1

// schema is the database's table of objects (see the package's doc) and
// the views that read the records for people and scripts.
const schema = `
CREATE TABLE objects (
	key  TEXT PRIMARY KEY,
	data BLOB
);

-- Every record of every attempt at a job: its claim, its answer (links and
-- text, before any download) and its end.
CREATE VIEW records AS
SELECT key,
	json_extract(j, '$.job') AS job,
	json_extract(j, '$.attempt') AS attempt,
	CASE WHEN key GLOB '*.end.json' THEN 'end' WHEN key GLOB '*.answered.json' THEN 'answered' ELSE 'claim' END AS stage,
	json_extract(j, '$.line') AS line,
	json_extract(j, '$.id') AS id,
	json_extract(j, '$.op') AS op,
	json_extract(j, '$.kind') AS kind,
	json_extract(j, '$.state') AS state,
	json_extract(j, '$.lost') AS lost,
	json_extract(j, '$.requests') AS requests,
	json_extract(j, '$.requestId') AS request_id,
	json_extract(j, '$.error') AS error,
	json_extract(j, '$.worker') AS worker,
	json_extract(j, '$.run') AS run,
	json_extract(j, '$.time') AS time,
	j AS record
FROM (SELECT key, CAST(data AS TEXT) AS j FROM objects
	WHERE key GLOB 'ledger/[0-9a-f][0-9a-f][0-9a-f]/*' AND json_valid(CAST(data AS TEXT)));

-- Each job as its last record says: where it stands.
CREATE VIEW jobs AS
SELECT job, attempt, line, id, op, kind, state, lost, requests, request_id, error, worker, run, time, record
FROM (SELECT *, row_number() OVER (PARTITION BY job ORDER BY attempt DESC,
		CASE stage WHEN 'end' THEN 2 WHEN 'answered' THEN 1 ELSE 0 END DESC) AS n
	FROM records)
WHERE n = 1;

-- The heartbeats of the runs under way, or killed before they ended.
CREATE VIEW runs AS
SELECT json_extract(j, '$.run') AS run,
	json_extract(j, '$.worker') AS worker,
	json_extract(j, '$.time') AS time,
	json_extract(j, '$.pid') AS pid
FROM (SELECT CAST(data AS TEXT) AS j FROM objects WHERE key GLOB 'ledger/runs/*.json' AND json_valid(CAST(data AS TEXT)));
`

// migrate brings the database to schemaVersion: it creates the schema in a
// new database, importing the ledger folder an earlier version left, in one
// transaction, and refuses a database of a newer version.
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
	if err := refuseUnclosed(root); err != nil {
		return err
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
	if again == 0 {
		_, err = tx.ExecContext(ctx, schema+fmt.Sprintf("PRAGMA user_version = %d;", schemaVersion))
		if err == nil {
			err = importFolder(ctx, tx, d)
		}
		if err != nil {
			return err
		}
	}
	return tx.Commit()
}

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
