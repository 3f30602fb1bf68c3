// Package sqlitestore is the batch.Store of a local folder: the ledger is
// one SQLite database in it, ledger.db, and the outputs are plain files
// beside it, where people and the results page open them.
//
// Keys under "ledger/" (the records of every attempt and the heartbeats of
// the runs) are rows of the database's objects table; every other key is a
// file under the folder, written to a temporary file that is flushed, then
// renamed or linked to its name, the folder flushed too: an output is
// durable before the record that says it is in place is committed.
//
// The database runs in WAL mode with synchronous=FULL (a commit is on the
// disk when it returns: a claim that is lost is a job paid twice) and a busy
// timeout. One writer goroutine per Store commits every write waiting at
// that moment in one transaction, begun IMMEDIATE so that it holds the
// write lock from its start; reads go through a small pool of connections
// beside it and never wait for the writer.
//
// A Store is for the processes of one machine: any number of them may open
// one folder at once, as SQLite's locks see to. A folder on a network file
// system (NFS, SMB/CIFS, a FUSE mount such as a bucket's), where those locks
// do not hold, is refused when opened; a fleet of machines shares a bucket
// instead. The database's tables and views, and queries to read it with the
// sqlite3 shell, are in the package's README.md; its schema version is
// PRAGMA user_version.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite", pure Go

	"github.com/creativegen/creative-go/batch"
)

// DBFile is the name of the ledger's database in the folder.
const DBFile = "ledger.db"

// ledgerPrefix starts the keys that live in the database.
const ledgerPrefix = "ledger/"

// busyTimeout is how long a write waits for another process's transaction
// to end, in milliseconds.
const busyTimeout = 30000

// readers bounds the connections that read beside the writer's own: each
// holds a page cache of its own, of cacheKiB.
const (
	readers  = 4
	cacheKiB = 1024
)

// A Store is a local folder holding a batch's ledger and outputs. It is
// safe for concurrent use.
type Store struct {
	path string
	root *os.Root
	db   *sql.DB
	w    *writer
	// The reads, prepared once (on each connection as it is first used).
	get, exists, page *sql.Stmt
}

// Open opens the folder at path as a Store, creating the folder and its
// database if needed. A folder on a network file system is refused, and so
// is a database written by a newer version of this package. A folder that
// holds the ledger of an earlier version (a ledger/ folder of JSON records)
// has it imported into the database once, its files left as they are.
func Open(dir string) (*Store, error) {
	return open(dir, config{netFS: networkFS})
}

// config is what tests vary of how a Store opens.
type config struct {
	// netFS names the network file system a folder is on ("" for a local
	// one).
	netFS func(string) (string, error)
	// maxPages, when above 0, bounds the database's size in pages, as a
	// full disk would.
	maxPages int
}

// open is Open with c.
func open(dir string, c config) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	if name, err := c.netFS(dir); err != nil {
		return nil, fmt.Errorf("sqlitestore: %s: %w", dir, err)
	} else if name != "" {
		return nil, fmt.Errorf("sqlitestore: %s is on a network file system (%s), where SQLite's locks do not hold: "+
			"give a local folder, or a bucket URL (s3://, gs://, azblob://) for workers on several machines", dir, name)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	s := &Store{path: dir, root: root}
	if err := s.openDB(c.maxPages); err != nil {
		root.Close()
		return nil, fmt.Errorf("sqlitestore: %s: %w", filepath.Join(dir, DBFile), err)
	}
	s.sweep()
	return s, nil
}

// dsn is the data source name of the database at file: its pragmas are
// set on every connection the pool opens.
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

// openDB opens the database, brings its schema up to date (importing an
// earlier version's ledger folder) and starts the writer.
func (s *Store) openDB(maxPages int) error {
	name, err := dsn(filepath.Join(s.path, DBFile))
	if err != nil {
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
		err = migrate(conn, s.root)
	}
	if err == nil && maxPages > 0 {
		_, err = conn.ExecContext(context.Background(), fmt.Sprintf(`PRAGMA max_page_count = %d`, maxPages))
	}
	var w *writer
	if err == nil {
		w, err = newWriter(conn)
	}
	for q, stmt := range map[string]**sql.Stmt{
		`SELECT data FROM objects WHERE key = ?`:                      &s.get,
		`SELECT 1 FROM objects WHERE key = ?`:                         &s.exists,
		`SELECT key FROM objects WHERE key >= ? ORDER BY key LIMIT ?`: &s.page,
	} {
		if err == nil {
			*stmt, err = db.Prepare(q)
		}
	}
	if err != nil {
		if w != nil {
			w.close()
		}
		if conn != nil {
			conn.Close()
		}
		db.Close()
		return err
	}
	s.db, s.w = db, w
	return nil
}

// Path returns the folder the Store was opened on.
func (s *Store) Path() string { return s.path }

// inDB reports whether key is one of the database's.
func inDB(key string) bool { return strings.HasPrefix(key, ledgerPrefix) }

// reserved are the names at the top of the folder that no key may take:
// the database's files, and the ledger folder of an earlier version.
var reserved = map[string]bool{DBFile: true, DBFile + "-wal": true, DBFile + "-shm": true, DBFile + "-journal": true, "ledger": true}

// checkKey refuses what batch.CheckKey refuses, the reserved names, and
// segments starting with a dot (temporary files are named so).
func checkKey(key string) error {
	if err := batch.CheckKey(key); err != nil {
		return err
	}
	if reserved[key] {
		return fmt.Errorf("sqlitestore: key %q is the store's own", key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(seg, ".") {
			return fmt.Errorf("sqlitestore: key %q has a segment starting with a dot", key)
		}
	}
	return nil
}

// Create writes key only if it does not exist, durably; it returns an
// error matching batch.ErrExist if it does.
func (s *Store) Create(ctx context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if inDB(key) {
		return s.w.do(ctx, opCreate, key, data)
	}
	return s.createFile(key, data)
}

// Put writes key, replacing what it held, atomically and durably.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if inDB(key) {
		return s.w.do(ctx, opPut, key, data)
	}
	w, err := s.NewWriter(ctx, key, nil)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.(*fileWriter).abort()
		return err
	}
	return w.Close()
}

// Get reads key, or returns an error matching batch.ErrNotExist.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if !inDB(key) {
		return s.readFile(key)
	}
	var data []byte
	err := s.get.QueryRowContext(ctx, key).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlitestore: %s: %w", key, batch.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %s: %w", key, err)
	}
	return data, nil
}

// Exists reports whether key names an object.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	if !inDB(key) {
		return s.fileExists(key)
	}
	var one int
	err := s.exists.QueryRowContext(ctx, key).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sqlitestore: %s: %w", key, err)
	}
	return true, nil
}

// Delete removes key; removing a key that does not exist is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if inDB(key) {
		return s.w.do(ctx, opDelete, key, nil)
	}
	return s.removeFile(key)
}

// NewWriter streams an object to key: a file, which Close flushes and
// renames into place, or for a key of the ledger, a row that Close
// commits. Meta is not kept: a folder has no place for it.
func (s *Store) NewWriter(ctx context.Context, key string, _ map[string]string) (io.WriteCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if inDB(key) {
		return &rowWriter{ctx: ctx, s: s, key: key}, nil
	}
	return s.newFileWriter(ctx, key)
}

// List yields the keys under prefix in lexical order: the ledger's from
// the database, a page at a time, merged with the files' from a walk of
// the folder.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	if err := checkPrefix(prefix); err != nil {
		return func(yield func(string, error) bool) { yield("", err) }
	}
	switch {
	case strings.HasPrefix(prefix, ledgerPrefix):
		return s.listRows(ctx, prefix)
	case strings.HasPrefix(ledgerPrefix, prefix):
		return merge(s.listRows(ctx, prefix), s.listFiles(ctx, prefix))
	}
	return s.listFiles(ctx, prefix)
}

// checkPrefix refuses a List prefix that no key could start with: one
// whose folders are not a clean relative path, or that holds a backslash.
func checkPrefix(prefix string) error {
	dir, _ := path.Split(prefix)
	if strings.Contains(prefix, `\`) || dir != "" && batch.CheckKey(strings.TrimSuffix(dir, "/")) != nil {
		return fmt.Errorf("sqlitestore: prefix %q is not a clean relative path", prefix)
	}
	return nil
}

// listPage is how many keys one query of List reads.
const listPage = 256

// listRows yields the database's keys under prefix, reading a page of
// them at a time, each page in a read of its own: a long List holds no
// snapshot of the database open, so the WAL can be checkpointed meanwhile.
func (s *Store) listRows(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		from := prefix
		for {
			page, err := s.readPage(ctx, from)
			if err != nil {
				yield("", fmt.Errorf("sqlitestore: list %s: %w", prefix, err))
				return
			}
			for _, k := range page {
				if !strings.HasPrefix(k, prefix) || !yield(k, nil) {
					return
				}
			}
			if len(page) < listPage {
				return
			}
			from = page[len(page)-1] + "\x00" // the first key after it
		}
	}
}

// readPage reads a page of the keys that sort from from on.
func (s *Store) readPage(ctx context.Context, from string) ([]string, error) {
	rows, err := s.page.QueryContext(ctx, from, listPage)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	page := make([]string, 0, listPage)
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		page = append(page, k)
	}
	return page, rows.Err()
}

// merge yields the keys of a and b, two lexically ordered sequences, in
// lexical order.
func merge(a, b iter.Seq2[string, error]) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		nextA, stopA := iter.Pull2(a)
		defer stopA()
		nextB, stopB := iter.Pull2(b)
		defer stopB()
		ka, errA, okA := nextA()
		kb, errB, okB := nextB()
		for okA || okB {
			if errA != nil || errB != nil {
				yield("", errors.Join(errA, errB))
				return
			}
			if okA && (!okB || ka <= kb) {
				if !yield(ka, nil) {
					return
				}
				ka, errA, okA = nextA()
				continue
			}
			if !yield(kb, nil) {
				return
			}
			kb, errB, okB = nextB()
		}
	}
}

// Close stops the writer once the writes under way are committed, and
// closes the database.
func (s *Store) Close() error {
	if !s.w.close() {
		return nil
	}
	for _, stmt := range s.w.stmts {
		stmt.Close()
	}
	err := s.w.conn.Close()
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	s.root.Close()
	return err
}

// A rowWriter buffers an object of the ledger, and puts it when closed.
type rowWriter struct {
	ctx    context.Context
	s      *Store
	key    string
	buf    []byte
	closed bool
}

// maxRow bounds an object of the ledger written through NewWriter.
const maxRow = 64 << 20

func (w *rowWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	if len(w.buf)+len(p) > maxRow {
		return 0, fmt.Errorf("sqlitestore: %s: a ledger object is at most %d MiB", w.key, maxRow>>20)
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *rowWriter) Close() error {
	if w.closed {
		return fmt.Errorf("sqlitestore: %s: writer already closed", w.key)
	}
	w.closed = true
	if err := w.ctx.Err(); err != nil {
		return err
	}
	return w.s.w.do(w.ctx, opPut, w.key, w.buf)
}
