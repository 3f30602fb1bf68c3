package batchcmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/sqliteledger"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
	"github.com/creativegen/creative-go/internal/ops"
	"github.com/creativegen/creative-go/internal/outdir"
)

// isURL reports whether --out or a jobs file names a bucket URL
// (s3://, gs://, azblob://, file://, mem://) rather than a local path.
func isURL(name string) bool {
	u, err := url.Parse(name)
	return err == nil && len(u.Scheme) > 1 && u.Opaque == "" && (u.Host != "" || u.Path != "" || u.Scheme == "mem")
}

// Buckets opens the bucket URLs (s3://, gs://, azblob://, mem://) that
// batch takes as its jobs file and its --out. A plain path or a file:// URL
// never comes here: it is opened on this machine.
type Buckets struct {
	// Open opens the bucket named by --out as the store of a batch. On
	// error the store is a nil interface.
	Open func(ctx context.Context, url string) (batch.Store, error)
	// OpenFS opens the folder of the jobs file named by url, read-only,
	// and returns the jobs file's name in it and what to close when
	// reading is done. Reads use ctx.
	OpenFS func(ctx context.Context, url string) (fs.FS, string, io.Closer, error)
}

// IsBucket reports whether name is a URL that Buckets opens: any but
// file://, which names a folder on this machine.
func IsBucket(name string) bool {
	u, err := url.Parse(name) // which lowercases the scheme
	return isURL(name) && err == nil && u.Scheme != "file"
}

// localPath is the path a plain path or a file:// URL names on this
// machine.
func localPath(name string) (string, error) {
	if !isURL(name) {
		return name, nil
	}
	u, err := url.Parse(name)
	if err != nil {
		return "", err
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("%s: a file URL names a folder on this machine: file:///path", name)
	}
	p := u.Path
	if runtime.GOOS == "windows" && len(p) > 2 && p[0] == '/' && p[2] == ':' {
		p = p[1:] // file:///C:/out
	}
	return filepath.FromSlash(p), nil
}

// A place is where a batch keeps its ledger and its outputs.
type place struct {
	ledger batch.Ledger
	out    batch.Store
	dir    string // the local folder of the outputs; "" for a bucket
}

// Close closes the ledger and the outputs' store.
func (p *place) Close() error { return errors.Join(p.ledger.Close(), p.out.Close()) }

// envLedger names the ledger when --ledger is not given.
const envLedger = "CREATIVE_LEDGER"

// openPostgres opens a postgres:// ledger URL; nil in a build without
// the PostgreSQL driver.
var openPostgres func(ctx context.Context, url string) (batch.Ledger, error)

// openPlace opens the outputs named by --out and the ledger named by
// --ledger (or $CREATIVE_LEDGER): by default ledger.db in the folder --out.
// A plain path or a file:///path --out is a local folder; any other URL a
// bucket, opened by b (nil in creative, which hands such a command over to
// creative-cloud before it gets here). A bucket holds outputs only: it
// needs --ledger, a postgres:// URL for workers on several machines (or a
// local folder, for one machine); a bucket that holds an earlier
// version's ledger is refused. A bucket, and a folder whose ledger is
// elsewhere, names in OwnerKey the one ledger of its jobs, which a run
// with record writes where it names none: a run with another ledger is
// refused before anything is sent (checkOwner, refuseNewLedger).
func (b *Buckets) openPlace(ctx context.Context, out, ledger string, record bool) (*place, error) {
	if err := checkLedgerName(ledger); err != nil {
		return nil, err
	}
	p := &place{}
	if !IsBucket(out) {
		path, err := localPath(out)
		if err != nil {
			return nil, cmdutil.Usagef("--out: %v", err)
		}
		if err := refuseOtherLedger(path, ledger); err != nil {
			return nil, err
		}
		if p.out, err = batch.OpenFolder(path); err != nil {
			return nil, cmdutil.Usagef("--out: %v", err)
		}
		p.dir = path
		if err := refuseNewLedger(ctx, folderOwner{p.out, path}, path, ledger); err != nil {
			p.out.Close()
			return nil, err
		}
	} else {
		if b == nil {
			return nil, cmdutil.ErrNoCloud
		}
		s, err := b.Open(ctx, out)
		if err != nil {
			return nil, cmdutil.Usagef("--out: %v", err)
		}
		if ledger == "" {
			defer s.Close()
			return nil, noLedger(ctx, s, out)
		}
		if err := refuseOldLedger(ctx, s, out); err != nil {
			s.Close()
			return nil, err
		}
		p.out = s
	}
	l, err := openLedger(ctx, cmp.Or(ledger, p.dir))
	if err == nil {
		if err = checkPlace(ctx, p, l, out, ledger, record); err != nil {
			l.Close()
		}
	}
	if err != nil {
		p.out.Close()
		return nil, err
	}
	p.ledger = l
	return p, nil
}

// checkPlace refuses the ledger l, opened from ledger (--ledger), for the
// outputs of p (--out) when they name another (checkOwner). A folder's
// own ledger and a ledger elsewhere are each checked after the other's
// mark could have been made: a ledger elsewhere after it is named in the
// folder, against a ledger.db made there meanwhile; the folder's own
// after its ledger.db is made, against a name written meanwhile. Of two
// first runs racing, one with each, one at least sees the other.
func checkPlace(ctx context.Context, p *place, l batch.Ledger, out, ledger string, record bool) error {
	if p.dir != "" && (ledger == "" || ownFolder(p.dir, ledger)) {
		// The identity is asked for only when the folder names a ledger:
		// a status of an older, read-only ledger.db writes nothing.
		o, err := readOwner(ctx, ownedStore(p))
		if err != nil {
			return cmdutil.Usagef("--out %s: %v", p.dir, err)
		}
		if o == nil {
			return nil
		}
		own, err := ownerOf(ctx, l, p.dir)
		if err != nil {
			return cmdutil.Usagef("--out: %v", err)
		}
		if own != nil && !sameLedger(o, own) {
			return cmdutil.Usagef("--out %s keeps the jobs of its outputs in %s (ledger %s, named in its %s), not in a ledger of its own, which would pay for them again; "+
				"nothing was sent. Give --ledger naming that ledger, or another --out", p.dir, o, o.Ledger, OwnerKey)
		}
		return nil
	}
	own, err := ownerOf(ctx, l, ledger)
	if err != nil {
		return cmdutil.Usagef("--ledger: %v", err)
	}
	if own == nil {
		return nil
	}
	if err := checkOwner(ctx, ownedStore(p), out, ledger, own, record); err != nil {
		return err
	}
	if p.dir != "" {
		return refuseOtherLedger(p.dir, ledger)
	}
	return nil
}

// noLedger refuses a bucket --out given without --ledger, naming the
// ledger the bucket names, if any.
func noLedger(ctx context.Context, s batch.Store, out string) error {
	which := "the ledger the workers share with --ledger postgres://... (or $" + envLedger + ")"
	if o, err := readOwner(ctx, s); o != nil && err == nil {
		which = "with --ledger the ledger of its jobs, " + o.String()
	}
	return cmdutil.Usagef("--out %s is a bucket, which holds outputs only: give %s; "+
		"a local ledger each would let two workers pay for one job twice", redactURL(out), which)
}

// refuseOtherLedger refuses a ledger named by --ledger for the folder
// dir when dir keeps a ledger of its own (ledger.db, not empty) and the
// ledger named is not that one: the folder's jobs are recorded there, and
// a run with another ledger would pay for every one of them again.
func refuseOtherLedger(dir, ledger string) error {
	if ledger == "" || !hasLedger(dir, "") || ownFolder(dir, ledger) {
		return nil
	}
	shown, path := redactURL(ledger), ""
	if !strings.Contains(ledger, "://") {
		shown, path = ledger, ledger
	}
	hint := ""
	if filepath.Base(path) == sqliteledger.File {
		hint = " (--ledger names a folder, the one that holds " + sqliteledger.File + ")"
	}
	return cmdutil.Usagef("--out %s keeps its jobs in its own ledger, %s, which --ledger %s is not%s: a run would pay for every one of them again; "+
		"run without --ledger (and without $%s), or give another --out", dir, filepath.Join(dir, sqliteledger.File), shown, hint, envLedger)
}

// ownFolder reports whether the ledger named by ledger (--ledger) is the
// folder dir itself.
func ownFolder(dir, ledger string) bool {
	path := ledger
	if strings.Contains(ledger, "://") {
		if path = ""; strings.HasPrefix(strings.ToLower(ledger), "file:") {
			path, _ = localPath(ledger)
		}
	}
	a, err := os.Stat(dir)
	b, err2 := os.Stat(path)
	return path != "" && err == nil && err2 == nil && os.SameFile(a, b)
}

// checkLedgerName refuses, without repeating it, a --ledger that names
// no ledger but may hold a password: a URL that does not parse (a
// password with an unescaped "/" or "@"), or a PostgreSQL connection
// string of key=value words. Either would otherwise be taken for a
// folder, made, and named in which-ledger.json and in messages.
func checkLedgerName(ledger string) error {
	if _, err := url.Parse(ledger); err != nil && strings.Contains(ledger, "://") {
		return cmdutil.Usagef("--ledger: (a URL that does not parse): escape the characters of its password (%%2F for /, %%40 for @, ...)")
	}
	for _, f := range strings.Fields(ledger) {
		k, _, ok := strings.Cut(f, "=")
		switch strings.ToLower(k) {
		case "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "sslmode", "sslpassword", "service":
			if ok {
				return cmdutil.Usagef("--ledger: (a connection string of key=value words): a PostgreSQL ledger is a postgres:// URL, such as postgres://user@host:5432/db")
			}
		}
	}
	return nil
}

// openLedger opens the ledger named by name: a postgres:// URL, or a local
// folder holding ledger.db.
func openLedger(ctx context.Context, name string) (batch.Ledger, error) {
	if u, err := url.Parse(name); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if openPostgres == nil {
			return nil, cmdutil.Usagef("--ledger %s: PostgreSQL ledgers are not built into this binary", redactURL(name))
		}
		l, err := openPostgres(ctx, name)
		if err != nil {
			return nil, cmdutil.Usagef("--ledger: %v", err)
		}
		return l, nil
	}
	path, err := localPath(name)
	if err == nil && isURL(name) && !strings.HasPrefix(name, "file:") {
		err = fmt.Errorf("%s: a ledger is a postgres:// URL or a local folder", redactURL(name))
	}
	if err != nil {
		return nil, cmdutil.Usagef("--ledger: %v", err)
	}
	l, err := sqliteledger.Open(path)
	if err != nil {
		return nil, cmdutil.Usagef("--out: %v", err)
	}
	return l, nil
}

// redactURL is u without its password and query, for messages.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(a URL that does not parse)"
	}
	p.RawQuery = ""
	if p.User != nil {
		p.User = url.User(p.User.Username())
	}
	return p.String()
}

// refuseOldLedger refuses a bucket where an earlier version kept its
// ledger, as objects under ledger/: its jobs are recorded there, and a run
// with another ledger would pay for them again.
func refuseOldLedger(ctx context.Context, s batch.Store, out string) error {
	l, ok := s.(interface {
		List(ctx context.Context, prefix string) iter.Seq2[string, error]
	})
	if !ok {
		return nil
	}
	for _, err := range l.List(ctx, "ledger/") {
		if err != nil {
			return cmdutil.Usagef("--out: %v", err)
		}
		return cmdutil.Usagef("--out %s holds the ledger of an earlier version of creative-go (objects under ledger/), which this one does not read: "+
			"finish its runs with that version, or move those objects out of the bucket and rerun with --ledger (a new ledger pays for its jobs again)", redactURL(out))
	}
	return nil
}

// openJobs opens the folder of a jobs file (a path, a file:// URL, or a
// bucket URL such as s3://bucket/batches/jobs.jsonl, opened by b) as an
// fs.FS, and returns the jobs file's name in it: the jobs file and the
// files its lines name are read through it. Close the returned Closer when
// reading is done.
func (b *Buckets) openJobs(ctx context.Context, name string) (fs.FS, string, io.Closer, error) {
	if IsBucket(name) {
		if b == nil {
			return nil, "", nil, cmdutil.ErrNoCloud
		}
		return b.OpenFS(ctx, name)
	}
	path, err := localPath(name)
	if err != nil {
		return nil, "", nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", nil, err
	}
	return os.DirFS(filepath.Dir(abs)), filepath.Base(abs), io.NopCloser(nil), nil
}

// openLog opens the log of finished jobs for people: results.jsonl in a
// folder --out; in a bucket, where many workers cannot append to one
// object, an object of this run's own under results/, which appears when
// the run ends (the ledger holds every result meanwhile).
func openLog(ctx context.Context, p *place, out string) (*resultLog, error) {
	store := p.out
	if p.dir != "" {
		log, err := openResultLog(p.dir)
		if err != nil {
			return nil, cmdutil.Usagef("--out: %v", err)
		}
		return log, nil
	}
	host, _ := os.Hostname()
	key := fmt.Sprintf("results/%s-%s-%d.jsonl", time.Now().UTC().Format("20060102T150405Z"), safeName(host), os.Getpid())
	w, err := store.NewWriter(ctx, key, nil)
	if err != nil {
		return nil, cmdutil.Usagef("--out: %v", err)
	}
	shown := out
	if u, err := url.Parse(out); err == nil {
		u.RawQuery, u.User = "", nil
		shown = u.String()
	}
	return &resultLog{path: strings.TrimSuffix(shown, "/") + "/" + key, f: w}, nil
}

// safeName keeps the letters, digits, dots and dashes of a host name, so
// that it makes a plain key.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

// hasLedger reports whether --out, with ledger (--ledger, or ""), names a
// ledger to read: one given, a bucket (refused without one), or a folder
// holding the database.
func hasLedger(out, ledger string) bool {
	if ledger != "" || IsBucket(out) {
		return true
	}
	path, err := localPath(out)
	if err != nil {
		return true // refused when opened
	}
	st, err := os.Lstat(filepath.Join(path, sqliteledger.File))
	return err == nil && (!st.Mode().IsRegular() || st.Size() > 0) // one that is not a file is refused when opened
}

// earlierFolder names the folder under --out that --start-over moves the
// files of earlier runs into.
const earlierFolder = "earlier-"

// checkEarlier refuses, before anything is sent, a folder --out that holds
// what earlier runs wrote (results.jsonl, the results page, outputs) but
// no ledger to say which jobs they paid for: ledger.db is missing or
// empty, so a run would pay for every job again and write over the
// earlier outputs. With startOver it moves those files, and nothing else,
// into a new folder earlier-<time>/ under --out, and says so on w; a new
// ledger is begun.
func checkEarlier(w io.Writer, out, ledger string, startOver bool) error {
	if IsBucket(out) || ledger != "" {
		return nil
	}
	path, err := localPath(out)
	if err != nil || !existsDir(path) || hasLedger(path, "") {
		return nil
	}
	d, err := outdir.Open(path)
	if err != nil {
		return cmdutil.Usagef("--out: %v", err)
	}
	defer d.Close()
	afterFirstLook()
	found, n, err := earlierFiles(d)
	if err != nil {
		return cmdutil.Usagef("--out: %v", err)
	}
	if n == 0 || hasLedger(path, "") {
		// Asked again after the listing: a worker starting beside this
		// one makes its ledger, then its files, between the first look
		// and the listing.
		return nil
	}
	if ok, _ := d.Check(OwnerKey); ok {
		// A ledger elsewhere keeps these outputs, and its runs may be
		// writing them now: --start-over would move them from under those
		// runs and pay for their jobs again. Only the user, removing the
		// name, says that ledger is gone.
		err := refuseNewLedger(context.Background(), dirGetter{d}, path, ledger)
		if err != nil && startOver {
			err = cmdutil.Usagef("--start-over moves nothing: %v; or remove %s once no run of that ledger is live", err, OwnerKey)
		}
		if err != nil || !startOver {
			return err
		}
	}
	state := "missing"
	if st, err := d.Lstat(sqliteledger.File); err == nil && st.Size() == 0 {
		state = "empty"
	}
	if !startOver {
		return cmdutil.Usagef("batch: %s holds %s of earlier runs (%s) but its ledger, %s, is %s: a run would pay for every job again and write over them; nothing was sent. "+
			"Give the --ledger those runs kept (a postgres:// URL or a folder), another --out, or --start-over to move those files into a folder %s<time> of their own there and begin a new ledger",
			path, plural(n, "file"), strings.Join(found, ", "), sqliteledger.File, state, earlierFolder)
	}
	return moveEarlier(w, d)
}

// afterFirstLook is called by checkEarlier between its first look for a
// ledger and its listing of the folder: a test makes a ledger there.
var afterFirstLook = func() {}

// earlierFiles lists (the first few) and counts the files at the top of
// the folder that a run writes: results.jsonl, the page, and outputs named
// <stem>-<operation>.... The database's side files are not among them: a
// worker starting beside another finds them while the other makes the
// ledger. It reads the folder a page of names at a time.
func earlierFiles(d *outdir.Dir) (found []string, n int, err error) {
	f, err := d.Root().Open(".")
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	for {
		es, err := f.ReadDir(256)
		for _, e := range es {
			if e.Type().IsRegular() && isRunFile(e.Name()) {
				if n++; len(found) < 3 {
					found = append(found, e.Name())
				}
			}
		}
		if err == io.EOF || len(es) == 0 {
			return found, n, nil
		}
		if err != nil {
			return nil, 0, err
		}
	}
}

// isRunFile reports whether a name at the top of --out is one a batch
// writes.
func isRunFile(name string) bool {
	switch name {
	case ResultsFile, batch.IndexFile, OwnerKey:
		return true
	}
	if strings.HasPrefix(name, ".") {
		return false
	}
	for _, op := range ops.All {
		if strings.Contains(name, "-"+op.Verb()+".") || strings.Contains(name, "-"+op.Verb()+"-") {
			return true
		}
	}
	return false
}

// moveEarlier moves the files of earlier runs, and an empty ledger.db and
// its side files, into a new folder earlier-<time>/ under d.
func moveEarlier(w io.Writer, d *outdir.Dir) error {
	to := earlierFolder + time.Now().UTC().Format("20060102T150405Z")
	if err := d.Root().Mkdir(to, 0o755); err != nil {
		return cmdutil.Usagef("--start-over: %v", err)
	}
	moved := 0
	for {
		n, err := movePass(d, to)
		moved += n
		if err != nil {
			return cmdutil.Usagef("--start-over: %v (%d files were moved to %s before it)", err, moved, d.Join(to))
		}
		if n == 0 {
			break
		}
	}
	fmt.Fprintf(w, "creative: batch: moved %s of earlier runs into %s; a new ledger begins\n", plural(moved, "file"), d.Join(to))
	return nil
}

// movePass moves the files moveEarlier moves that one reading of the
// folder finds, and counts them: the folder changes as it is read, so
// passes go on until one finds none.
func movePass(d *outdir.Dir, to string) (moved int, err error) {
	f, err := d.Root().Open(".")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	for {
		es, rerr := f.ReadDir(256)
		for _, e := range es {
			n := e.Name()
			if !e.Type().IsRegular() || !isRunFile(n) && !strings.HasPrefix(n, sqliteledger.File) {
				continue
			}
			if ok, _ := d.Check(n); !ok {
				continue // moved already, read again
			}
			if err := d.Move(n, to+"/"+n); err != nil {
				return moved, err
			}
			moved++
		}
		if rerr != nil || len(es) == 0 {
			return moved, nil
		}
	}
}
