// Package sqlitestore is the batch.Store of a local folder: the ledger is
// one SQLite database in it, ledger.db, and the outputs are plain files
// beside it, where people and the results page open them.
//
// Every key is a row of the database's objects table. A small object
// (Create, Put: the records of the ledger, the runs' heartbeats) holds its
// bytes there; a record or a heartbeat also has its fields in typed
// columns of its row, filled by the statement that writes the row, and
// each job's last record is marked so, with an index of those by state:
// jobs by state and a job's last record are read from indexes. An object
// written with NewWriter (an output) is a file under the folder, flushed
// under a temporary name, given its key's name and the folder flushed,
// and only then recorded as a row without bytes: an output is durable
// before the record that says it is in place is committed. It replaces
// only a file the database records as its key's: any other file at that
// name is moved aside and kept.
//
// The database runs in WAL mode with synchronous=FULL (a commit is on the
// disk when it returns: a claim that is lost is a job paid twice) and a busy
// timeout. One writer goroutine per Store commits every write waiting at
// that moment in one transaction, begun IMMEDIATE; reads go through a small
// pool of connections beside it.
//
// A Store is for the processes of one machine, any number of which may open
// one folder at once. A folder on a network file system (NFS, SMB/CIFS, a
// FUSE mount such as a bucket's), where SQLite's locks do not hold, is
// refused when opened. The tables, the views and queries for the sqlite3
// shell are in the package's README.md.
package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite", pure Go

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/internal/atomicfile"
	"github.com/creativegen/creative-go/internal/outdir"
)

// DBFile is the name of the ledger's database in the folder.
const DBFile = "ledger.db"

const (
	busyTimeout = 30000 // ms a write waits for another process's transaction
	readers     = 4     // connections that read beside the writer's
	cacheKiB    = 256   // the page cache of each connection: memory stays flat
)

// A Store is a local folder holding a batch's ledger and outputs. It is
// safe for concurrent use.
type Store struct {
	path string
	dir  *outdir.Dir // the one way into the folder
	root *os.Root    // dir's
	db   *sql.DB
	w    *writer
	get  *sql.Stmt // the reads, prepared once
	page *sql.Stmt
}

// Open opens the folder at dir as a Store, creating the folder and its
// database if needed. A folder on a network file system is refused, and so
// is a database written by a newer version of this package. A folder that
// holds the ledger of an earlier version (a ledger/ folder of JSON records)
// has it imported into the database once, its files left as they are.
func Open(dir string) (*Store, error) { return open(dir, networkFS, 0) }

// open is Open with what tests vary: netFS names the network file system
// of a folder, or says "", and maxPages, when above 0, bounds the database
// as a full disk would.
func open(dir string, netFS func(string) (string, error), maxPages int) (*Store, error) {
	// The file system is that of the folder, or of the nearest folder
	// above it that is there: a refused folder is not made.
	there := dir
	for {
		if _, err := os.Stat(there); err == nil || filepath.Dir(there) == there {
			break
		}
		there = filepath.Dir(there)
	}
	if name, err := netFS(there); err != nil {
		return nil, fmt.Errorf("sqlitestore: %s: %w", dir, err)
	} else if name != "" {
		return nil, fmt.Errorf("sqlitestore: %s is on a network file system (%s), where SQLite's locks do not hold: "+
			"give a local folder, or a bucket URL (s3://, gs://, azblob://) for workers on several machines", dir, name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	d, err := outdir.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	s := &Store{path: dir, dir: d, root: d.Root()}
	if err := s.openDB(maxPages); err != nil {
		d.Close()
		return nil, fmt.Errorf("sqlitestore: %s: %w", filepath.Join(dir, DBFile), err)
	}
	s.sweep()
	return s, nil
}

// dsn is the data source name of the database at file: the pragmas of
// every connection the pool opens, and transactions begun IMMEDIATE.
func dsn(file string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	u := url.URL{Path: "/" + strings.TrimPrefix(filepath.ToSlash(abs), "/")}
	q := url.Values{"_pragma": {fmt.Sprintf("busy_timeout(%d)", busyTimeout), "journal_mode(WAL)", "synchronous(FULL)",
		fmt.Sprintf("cache_size(-%d)", cacheKiB)}, "_txlock": {"immediate"}}
	return "file:" + u.EscapedPath() + "?" + q.Encode(), nil
}

// openDB opens the database, brings its schema up to date, prepares the
// reads and starts the writer on a connection of its own.
func (s *Store) openDB(maxPages int) error {
	name, err := dsn(filepath.Join(s.path, DBFile))
	if err != nil {
		return err
	}
	if err := checkDB(s.dir, filepath.Join(s.path, DBFile)); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", name)
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(readers + 1)
	db.SetMaxIdleConns(readers + 1)
	conn, err := db.Conn(context.Background())
	if err == nil {
		err = checkLedger(conn)
	}
	if err == nil {
		err = migrate(conn, s.dir)
	}
	if err == nil {
		err = markLedger(conn)
	}
	if err == nil && maxPages > 0 {
		_, err = conn.ExecContext(context.Background(), fmt.Sprintf(`PRAGMA max_page_count = %d`, maxPages))
	}
	if err == nil {
		s.get, err = db.Prepare(`SELECT data, data IS NULL FROM objects WHERE key = ?`)
	}
	if err == nil {
		s.page, err = db.Prepare(`SELECT key, data IS NULL FROM objects WHERE key >= ? AND key < ? ORDER BY key LIMIT ?`)
	}
	if err == nil {
		s.w, err = newWriter(conn)
	}
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		db.Close()
		return err
	}
	s.db = db
	return nil
}

// Path returns the folder the Store was opened on.
func (s *Store) Path() string { return s.path }

// reserved are the names at the top of the folder that no key may take.
var reserved = map[string]bool{DBFile: true, DBFile + "-wal": true, DBFile + "-shm": true, DBFile + "-journal": true}

// checkKey refuses what batch.CheckKey refuses, the database's files, and
// segments starting with a dot (temporary files are named so).
func checkKey(key string) error {
	if err := batch.CheckKey(key); err != nil {
		return err
	}
	if reserved[key] || strings.HasPrefix(key, ".") || strings.Contains(key, "/.") {
		return fmt.Errorf("sqlitestore: key %q is not one a store may hold", key)
	}
	return nil
}

// Create writes key only if it does not exist, durably; it returns an
// error matching batch.ErrExist if it does.
func (s *Store) Create(ctx context.Context, key string, data []byte) error {
	return s.w.do(ctx, opCreate, key, data)
}

// Put writes key, replacing what it held, atomically and durably.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	return s.w.do(ctx, opPut, key, data)
}

// Get reads key, or returns an error matching batch.ErrNotExist.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	data, isFile, err := s.row(ctx, key)
	if err != nil || !isFile {
		return data, err
	}
	data, err = s.dir.ReadFile(key)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("sqlitestore: %s: %w", key, batch.ErrNotExist)
	}
	return data, err
}

// row reads the row of key: its bytes, or that it is a file.
func (s *Store) row(ctx context.Context, key string) (data []byte, isFile bool, err error) {
	if err := checkKey(key); err != nil {
		return nil, false, err
	}
	err = s.get.QueryRowContext(ctx, key).Scan(&data, &isFile)
	if errors.Is(err, sql.ErrNoRows) {
		err = batch.ErrNotExist
	}
	if err != nil {
		return nil, false, fmt.Errorf("sqlitestore: %s: %w", key, err)
	}
	if data == nil && !isFile {
		data = []byte{}
	}
	return data, isFile, nil
}

// Exists reports whether key names an object: a row with its bytes, or
// one whose file is still in place.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	_, isFile, err := s.row(ctx, key)
	switch {
	case errors.Is(err, batch.ErrNotExist):
		return false, nil
	case err != nil || !isFile:
		return err == nil, err
	}
	st, err := s.root.Lstat(key)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil && st.Mode().IsRegular(), err
}

// Delete removes key, and its file if it has one; removing a key that does
// not exist is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.w.do(ctx, opDelete, key, nil); err != nil {
		return err
	}
	err := s.root.Remove(key)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = atomicfile.SyncDir(s.root, path.Dir(key))
	}
	if err != nil {
		return fmt.Errorf("sqlitestore: %w", err)
	}
	return nil
}

// List yields the keys under prefix in lexical order, reading a page of
// them at a time, each page in a read of its own: a long List holds no
// snapshot of the database open, so the WAL can be checkpointed meanwhile.
// An output whose file is no longer in the folder (a person removed it) is
// not listed, as Exists does not find it.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if dir, _ := path.Split(prefix); strings.Contains(prefix, `\`) || dir != "" && batch.CheckKey(strings.TrimSuffix(dir, "/")) != nil {
			yield("", fmt.Errorf("sqlitestore: prefix %q is not a clean relative path", prefix))
			return
		}
		from, to := prefix, prefixEnd(prefix)
		for {
			page, err := s.readPage(ctx, from, to)
			if err != nil {
				yield("", fmt.Errorf("sqlitestore: list %s: %w", prefix, err))
				return
			}
			for _, r := range page {
				if !strings.HasPrefix(r.key, prefix) {
					return
				}
				if r.isFile && !s.fileThere(r.key) {
					continue
				}
				if !yield(r.key, nil) {
					return
				}
			}
			if len(page) < listPage {
				return
			}
			from = page[len(page)-1].key + "\x00" // the first key after it
		}
	}
}

// listPage is how many keys one read of List takes.
const listPage = 256

// A listed is a key of a page of List, and whether it is an output's file.
type listed struct {
	key    string
	isFile bool
}

// prefixEnd is the first key after every key under prefix: keys are
// UTF-8, in which no byte is 0xff.
func prefixEnd(prefix string) string {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] < 0xff {
			return prefix[:i] + string([]byte{prefix[i] + 1})
		}
	}
	return "\xff"
}

// readPage reads the keys that sort from from on and before to, a page of
// them.
func (s *Store) readPage(ctx context.Context, from, to string) ([]listed, error) {
	rows, err := s.page.QueryContext(ctx, from, to, listPage)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	page := make([]listed, 0, listPage)
	for rows.Next() {
		var r listed
		if err := rows.Scan(&r.key, &r.isFile); err != nil {
			return nil, err
		}
		page = append(page, r)
	}
	return page, rows.Err()
}

// fileThere reports whether the file of an output is in the folder.
func (s *Store) fileThere(key string) bool {
	st, err := s.root.Stat(key)
	return err == nil && st.Mode().IsRegular()
}

// Close stops the writer once the writes under way are committed, and
// closes the database.
func (s *Store) Close() error {
	if !s.w.close() {
		return nil
	}
	err := cmp.Or(s.w.conn.Close(), s.db.Close())
	s.root.Close()
	return err
}
