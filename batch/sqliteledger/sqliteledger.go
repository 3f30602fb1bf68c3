// Package sqliteledger is the batch.Ledger of one machine: one SQLite
// database, ledger.db, in a local folder (the output folder by default),
// readable with the sqlite3 shell. It is package sqlledger over
// modernc.org/sqlite (pure Go), in a module of its own so that the SDK's
// go.mod holds no driver.
//
// The database runs in WAL mode with synchronous=FULL (a commit is on the
// disk when it returns: a claim that is lost is a job paid twice), its
// write transactions begin IMMEDIATE, and its schema version is PRAGMA
// user_version. A run holds a flock on a file of its own in the folder,
// .run-<token>.lock, for its life: another process finds it held while the
// run's process lives, however long it is suspended, and free the moment
// it dies (then the run is gone). Any number of processes of one machine
// may open one folder at once; a folder on a network file system, where
// neither SQLite's locks nor flock hold, is refused. A ledger of an
// earlier version (schema 1 or 2: one table of objects) is brought to
// this schema when opened, in one transaction.
package sqliteledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite" // the database/sql driver "sqlite", pure Go
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/creativegen/creative-go/batch/sqlledger"
	"github.com/creativegen/creative-go/internal/outdir"
)

// File is the name of the ledger's database in its folder.
const File = "ledger.db"

const (
	busyTimeout = 30000 // ms a write waits for another process's transaction
	conns       = 8     // connections of the pool
	cacheKiB    = 2048  // the page cache of each connection
)

// Open opens the ledger in the local folder dir, making the folder and the
// database when needed, and bringing an earlier version's to this schema.
func Open(dir string) (*sqlledger.Ledger, error) { return open(dir, networkFS) }

// open is Open with what tests vary: netFS names the network file system
// of a folder, or says "".
func open(dir string, netFS func(string) (string, error)) (*sqlledger.Ledger, error) {
	// The file system is that of the folder, or of the nearest folder
	// above it that is there: a refused folder is not made.
	there := dir
	for _, err := os.Stat(there); err != nil && filepath.Dir(there) != there; _, err = os.Stat(there) {
		there = filepath.Dir(there)
	}
	if name, err := netFS(there); err != nil {
		return nil, fmt.Errorf("sqliteledger: %s: %w", dir, err)
	} else if name != "" {
		return nil, fmt.Errorf("sqliteledger: %s is on a network file system (%s), where SQLite's locks do not hold: "+
			"give a local folder, or a PostgreSQL ledger (pgledger) for workers on several machines", dir, name)
	}
	d, err := outdir.Create(dir)
	if err != nil {
		return nil, fmt.Errorf("sqliteledger: %w", err)
	}
	defer d.Close()
	for _, name := range []string{File, File + "-wal", File + "-shm", File + "-journal"} {
		// SQLite would write through a link, or wait on a FIFO.
		if _, err := d.CheckWritable(name); err != nil {
			return nil, fmt.Errorf("sqliteledger: %w", err)
		}
	}
	db, err := sql.Open("sqlite", dsn(filepath.Join(dir, File)))
	if err == nil {
		db.SetMaxOpenConns(conns)
		db.SetMaxIdleConns(conns)
		err = migrateWhenFree(db)
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, fmt.Errorf("sqliteledger: %s: %w", filepath.Join(dir, File), err)
	}
	return sqlledger.New(db, dialect(dir)), nil
}

// migrateWhenFree is migrate, tried again while the database is busy for
// up to the busy timeout: processes that open a new folder at once race to
// make its database, and a connection that meets another's switch to WAL
// mode or its recovery of the log is told "busy" at once, whatever the
// busy timeout.
func migrateWhenFree(db *sql.DB) error {
	deadline := time.Now().Add(busyTimeout * time.Millisecond)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 250*time.Millisecond) {
		err := migrate(context.Background(), db)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
	}
}

// dsn is the data source name of the database at file: the pragmas of
// every connection the pool opens, and transactions begun IMMEDIATE.
func dsn(file string) string {
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	u := url.URL{Path: "/" + strings.TrimPrefix(filepath.ToSlash(abs), "/")}
	q := url.Values{"_pragma": {fmt.Sprintf("busy_timeout(%d)", busyTimeout), "journal_mode(WAL)", "synchronous(FULL)",
		fmt.Sprintf("cache_size(-%d)", cacheKiB)}, "_txlock": {"immediate"}}
	return "file:" + u.EscapedPath() + "?" + q.Encode()
}

// dialect is SQLite's, with the runs' locks in dir.
func dialect(dir string) sqlledger.Dialect {
	return sqlledger.Dialect{
		Now:       `CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`,
		OneWriter: true,
		Lock:      runLocks(dir).lock,
		Probe:     runLocks(dir).probe,
	}
}

// runLocks is the folder of the runs' lock files.
type runLocks string

// errNotLedger refuses a database of another program.
var errNotLedger = errors.New("the database is not a ledger of creative-go: give another folder")
