package batchcmd

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
	"github.com/creativegen/creative-go/internal/outdir"
)

// OwnerKey is the object of a bucket --out (or the file of a folder --out
// whose ledger is elsewhere) that names the ledger keeping the jobs of its
// outputs. The first run writes it, only where there is none; it is never
// updated, and holds nothing of the ledger's state.
const OwnerKey = "which-ledger.json"

// An owner names a ledger: its identity (made once with its schema), and
// where it is, without any secret.
type owner struct {
	Ledger string `json:"ledger"`         // the ledger's identity
	Kind   string `json:"kind"`           // "sqlite" or "postgres"
	Host   string `json:"host,omitempty"` // the machine of an SQLite ledger
	Where  string `json:"where"`          // its folder; or the server and database
	Note   string `json:"note,omitempty"`
}

// String says where the ledger is, for messages.
func (o *owner) String() string {
	if o.Kind == "sqlite" {
		return fmt.Sprintf("the SQLite ledger in %s on the machine %s", printable(o.Where), printable(o.Host))
	}
	return "the PostgreSQL ledger at " + printable(o.Where)
}

// printable is s as a message shows what a record says: quoted, with
// escapes, when it holds anything but printable text (a hostile record's
// escape sequences never reach the terminal).
func printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return s
	}
	return strconv.QuoteToASCII(s)
}

// sameLedger reports whether the record o names the ledger own: the same
// identity and kind and, for SQLite, the same folder on the same machine.
// A copy of ledger.db has the identity of its original, and is another
// ledger: each would pay for the jobs the other did.
func sameLedger(o, own *owner) bool {
	if o.Ledger != own.Ledger || o.Kind != own.Kind {
		return false
	}
	if own.Kind != "sqlite" || o.Where == own.Where && o.Host == own.Host {
		return true
	}
	a, err := os.Stat(o.Where)
	b, err2 := os.Stat(own.Where)
	return o.Host == own.Host && err == nil && err2 == nil && os.SameFile(a, b)
}

// ownerOf describes the ledger l, opened from name (a postgres:// URL or
// a folder); nil for a ledger without an identity (every ledger the
// command line opens has one, tests' ledgers in memory have none).
func ownerOf(ctx context.Context, l batch.Ledger, name string) (*owner, error) {
	ider, ok := l.(interface {
		ID(ctx context.Context) (string, error)
	})
	if !ok {
		return nil, nil
	}
	id, err := ider.ID(ctx)
	if err != nil {
		return nil, err
	}
	o := &owner{Ledger: id, Kind: "postgres",
		Note: "the ledger that keeps the jobs of the outputs here: every run writing here must use it (creative batch --ledger)"}
	if u, err := url.Parse(name); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		host := u.Host
		if q := u.Query(); host == "" && q.Get("host") != "" {
			host = q.Get("host")
			if port := q.Get("port"); port != "" {
				host = net.JoinHostPort(host, port)
			}
		}
		o.Where = "postgres://" + host + u.Path
		return o, nil
	}
	path, err := localPath(name)
	if err == nil {
		path, err = filepath.Abs(path)
	}
	if err != nil {
		return nil, err
	}
	o.Kind, o.Where = "sqlite", path
	o.Host, _ = os.Hostname()
	return o, nil
}

// readOwner reads the owner the outputs s name, or nil when they name
// none.
func readOwner(ctx context.Context, s getter) (*owner, error) {
	b, err := readBounded(ctx, s, OwnerKey, maxOwner)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var o owner
	if err == nil && len(b) <= maxOwner {
		err = json.Unmarshal(b, &o)
	}
	if _, herr := hex.DecodeString(o.Ledger); err == nil && (len(b) > maxOwner || len(o.Ledger) != 32 || herr != nil || len(o.Host) > 255) {
		err = errors.New("it is not the name of a ledger that creative batch writes")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", OwnerKey, err)
	}
	return &o, nil
}

// maxOwner bounds what is read of OwnerKey: a record creative batch
// writes is a few hundred bytes.
const maxOwner = 4096

// readBounded reads key of s, but no more than max+1 bytes of it when s
// reads a stream (a bucket, a folder), so that a huge object is refused
// without being held in memory.
func readBounded(ctx context.Context, s getter, key string, max int64) ([]byte, error) {
	r, ok := s.(interface {
		NewReader(ctx context.Context, key string) (io.ReadCloser, error)
	})
	if !ok {
		return s.Get(ctx, key)
	}
	rc, err := r.NewReader(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, max+1))
}

// checkOwner refuses, before anything is sent, a run whose ledger, own,
// is not the one the bucket s (--out) names: two ledgers for one bucket
// would each pay for its jobs. With record, a bucket that names none is
// given own, written only where no object is (of runs racing to write
// it, one does) and read back.
func checkOwner(ctx context.Context, s batch.Store, out, ledger string, own *owner, record bool) error {
	o, err := readOwner(ctx, s)
	if o == nil && err == nil && record {
		c, ok := s.(interface {
			Create(ctx context.Context, key string, data []byte) error
		})
		if !ok {
			return cmdutil.Usagef("--out %s: this store cannot write %s only where it is not", redactURL(out), OwnerKey)
		}
		b, _ := json.MarshalIndent(own, "", "  ")
		if err = c.Create(ctx, OwnerKey, append(b, '\n')); err == nil || errors.Is(err, fs.ErrExist) {
			o, err = readOwner(ctx, s)
		}
	}
	if err != nil {
		return cmdutil.Usagef("--out %s: %v", redactURL(out), err)
	}
	if o == nil || sameLedger(o, own) {
		return nil
	}
	copied := ""
	if o.Ledger == own.Ledger {
		copied = ", a copy of it"
	}
	return cmdutil.Usagef("--out %s keeps the jobs of its outputs in %s (ledger %s, named in its %s), not in --ledger %s (ledger %s%s), which would pay for them again; nothing was sent. "+
		"Give every worker writing it --ledger naming that ledger (an SQLite ledger serves the workers of its own machine only), or another --out",
		redactURL(out), o, o.Ledger, OwnerKey, redactURL(ledger), own.Ledger, copied)
}

// A getter reads a file of the outputs (batch.Store's Get).
type getter interface {
	Get(ctx context.Context, key string) ([]byte, error)
}

// refuseNewLedger refuses a folder --out whose OwnerKey names a ledger
// elsewhere when the run would begin a ledger of its own there (no
// --ledger or the folder itself, no ledger.db yet), before that ledger is
// made.
func refuseNewLedger(ctx context.Context, s getter, dir, ledger string) error {
	if ledger != "" && !ownFolder(dir, ledger) || hasLedger(dir, "") {
		return nil
	}
	o, err := readOwner(ctx, s)
	if err != nil {
		return cmdutil.Usagef("--out %s: %v", dir, err)
	}
	if o == nil {
		return nil
	}
	return cmdutil.Usagef("--out %s keeps the jobs of its outputs in %s (ledger %s, named in its %s), not in a ledger of its own, which would pay for them again; "+
		"nothing was sent. Give --ledger naming that ledger, or another --out", dir, o, o.Ledger, OwnerKey)
}

// namedLedger refuses a folder --out without a ledger of its own whose
// OwnerKey names one elsewhere, saying which to give with --ledger; nil
// when it names none (or is no folder).
func namedLedger(ctx context.Context, out string) error {
	path, err := localPath(out)
	if err != nil || IsBucket(out) || !existsDir(path) {
		return nil
	}
	d, err := outdir.Open(path)
	if err != nil {
		return nil
	}
	defer d.Close()
	o, err := readOwner(ctx, dirGetter{d})
	if err != nil {
		return cmdutil.Usagef("--out %s: %v", path, err)
	}
	if o == nil {
		return nil
	}
	return cmdutil.Usagef("--out %s keeps the jobs of its outputs in %s (ledger %s, named in its %s): give --ledger naming that ledger", path, o, o.Ledger, OwnerKey)
}

// ownedStore is the outputs of p as checkOwner reads and writes them.
func ownedStore(p *place) batch.Store {
	if p.dir == "" {
		return p.out
	}
	return folderOwner{p.out, p.dir}
}

// folderOwner is a folder --out, which writes OwnerKey only where no
// file is.
type folderOwner struct {
	batch.Store
	dir string
}

// Create writes data to key through the folder's gate, only where no file
// is: fs.ErrExist otherwise.
func (f folderOwner) Create(_ context.Context, key string, data []byte) error {
	d, err := outdir.Open(f.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	t, err := d.CreateTemp(".", "owner-")
	if err != nil {
		return err
	}
	defer t.Remove()
	if _, err = t.Write(data); err == nil {
		err = t.Flush()
	}
	if err == nil {
		err = t.Link(key)
	}
	return err
}

// NewReader opens the file key through the folder's gate, for a bounded
// read.
func (f folderOwner) NewReader(_ context.Context, key string) (io.ReadCloser, error) {
	d, err := outdir.Open(f.dir)
	if err != nil {
		return nil, err
	}
	r, err := d.OpenFile(key, os.O_RDONLY, 0)
	if err != nil {
		d.Close()
		return nil, err
	}
	return closeBoth{r, d}, nil
}

// closeBoth is a file read, and its folder, closed together.
type closeBoth struct {
	*os.File
	d *outdir.Dir
}

func (c closeBoth) Close() error { return errors.Join(c.File.Close(), c.d.Close()) }

// dirGetter reads the files of a folder through its gate.
type dirGetter struct{ d *outdir.Dir }

func (g dirGetter) Get(_ context.Context, key string) ([]byte, error) { return g.d.ReadFile(key) }

// NewReader opens the file key through the folder's gate, for a bounded
// read.
func (g dirGetter) NewReader(_ context.Context, key string) (io.ReadCloser, error) {
	return g.d.OpenFile(key, os.O_RDONLY, 0)
}
