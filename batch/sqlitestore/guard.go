package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/creativegen/creative-go/internal/outdir"
)

// applicationID is the PRAGMA application_id of a ledger: "CGLD". Ledgers
// made before it was set have 0, and are told by their tables.
const applicationID = 0x43474C44

// dbFiles are the database's file and the side files SQLite makes beside
// it.
var dbFiles = []string{DBFile, DBFile + "-wal", DBFile + "-shm", DBFile + "-journal"}

// checkDB refuses a folder whose database files cannot be used (see
// checkDBFiles), or whose database is not a ledger (see checkLedger). The
// database is read on a connection of its own, opened without the
// pragmas of the Store's connections (journal_mode=WAL would rewrite
// another program's database before it is found out) and closed before
// they open it.
func checkDB(d *outdir.Dir, file string) error {
	if err := checkDBFiles(d); err != nil {
		return err
	}
	if st, err := d.Lstat(DBFile); err != nil || st.Size() == 0 {
		return nil // none yet, or empty: a new ledger
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	u := url.URL{Path: "/" + strings.TrimPrefix(filepath.ToSlash(abs), "/")}
	db, err := sql.Open("sqlite", "file:"+u.EscapedPath()+fmt.Sprintf("?_pragma=busy_timeout(%d)", busyTimeout))
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer conn.Close()
	return checkLedger(conn)
}

// checkDBFiles refuses, before SQLite opens the database by its path, a
// symbolic link, a FIFO, a device, a socket, a folder or a file with
// another hard link at the name of the database or of a side file: SQLite
// would write through the link, or wait on the FIFO. The driver opens with flags of its own, so SQLite's
// SQLITE_OPEN_NOFOLLOW cannot be asked for.
func checkDBFiles(d *outdir.Dir) error {
	for _, name := range dbFiles {
		if _, err := d.CheckWritable(name); err != nil {
			return err
		}
	}
	return nil
}

// ledgerTables are the tables and views of a ledger made before ledgers
// had an application id, by which it is told: its objects table, and some
// of the views; in version 2, objects has the columns ledgerColumns.
var ledgerTables = []string{"table objects", "view jobs", "view records", "view runs"}

// ledgerColumns are columns of objects that a ledger of version 2 has.
const ledgerColumns = "'seq', 'stage', 'last'"

// checkLedger refuses a database that is not a ledger: one with another
// program's application id, or, without one, with tables when it has no
// schema version, or tables that are not a ledger's.
func checkLedger(conn *sql.Conn) error {
	ctx := context.Background()
	var app, v int64
	if err := conn.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&app); err != nil {
		return err
	}
	if err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	switch {
	case app == applicationID:
		return nil
	case app != 0:
		return fmt.Errorf("the database is not a ledger of creative-go (its application_id is %#x): give another folder", uint32(app))
	}
	rows, err := conn.QueryContext(ctx, `SELECT type || ' ' || name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY 1`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		found = append(found, s)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	ours := (v == 1 || v == 2) && slices.Contains(found, "table objects")
	for _, f := range found {
		ours = ours && slices.Contains(ledgerTables, f)
	}
	if ours && v == 2 {
		var n int
		if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('objects') WHERE name IN (`+ledgerColumns+`)`).Scan(&n); err != nil {
			return err
		}
		ours = n == 3
	}
	if len(found) == 0 && v == 0 || ours {
		return nil
	}
	return fmt.Errorf("the database is not a ledger of creative-go (it holds %s): give another folder", strings.Join(found, ", "))
}

// markLedger gives a ledger without an application id (a new one, or one
// made before it was set) the ledger's.
func markLedger(conn *sql.Conn) error {
	ctx := context.Background()
	var app int64
	if err := conn.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&app); err != nil || app == applicationID {
		return err
	}
	_, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA application_id = %d`, applicationID))
	return err
}
