package cli

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/sqlitestore"
)

// isURL reports whether --out or a jobs file names a bucket URL
// (s3://, gs://, azblob://, file://, mem://) rather than a local path.
func isURL(name string) bool {
	u, err := url.Parse(name)
	return err == nil && len(u.Scheme) > 1 && u.Opaque == "" && (u.Host != "" || u.Path != "" || u.Scheme == "mem")
}

// isBucket reports whether name is a URL that Buckets opens: any but
// file://, which names a folder on this machine.
func isBucket(name string) bool {
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

// openStore opens the place of record named by --out: a plain path is the
// local folder store (package sqlitestore); file:///path is the same folder
// store (its exclusive create works across processes, gocloud.dev's
// fileblob's does not); any other URL is a bucket, opened by b (nil in
// creative, which hands such a command over to creative-cloud before it
// gets here).
func (b *Buckets) openStore(ctx context.Context, out string) (batch.Store, error) {
	if !isBucket(out) {
		path, err := localPath(out)
		if err != nil {
			return nil, fmt.Errorf("--out: %w", err)
		}
		return openDir(path)
	}
	if b == nil {
		return nil, errNoCloud
	}
	s, err := b.Open(ctx, out)
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	return s, nil
}

// openDir opens the local folder store at path.
func openDir(path string) (batch.Store, error) {
	d, err := sqlitestore.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	return d, nil
}

// openJobs opens the folder of a jobs file (a path, a file:// URL, or a
// bucket URL such as s3://bucket/batches/jobs.jsonl, opened by b) as an
// fs.FS, and returns the jobs file's name in it: the jobs file and the
// files its lines name are read through it. Close the returned Closer when
// reading is done.
func (b *Buckets) openJobs(ctx context.Context, name string) (fs.FS, string, io.Closer, error) {
	if isBucket(name) {
		if b == nil {
			return nil, "", nil, errNoCloud
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
func openLog(ctx context.Context, store batch.Store, out string) (*resultLog, error) {
	if d, ok := store.(*sqlitestore.Store); ok {
		return openResultLog(filepath.Join(d.Path(), resultsFile))
	}
	host, _ := os.Hostname()
	key := fmt.Sprintf("results/%s-%s-%d.jsonl", time.Now().UTC().Format("20060102T150405Z"), safeName(host), os.Getpid())
	w, err := store.NewWriter(ctx, key, nil)
	if err != nil {
		return nil, err
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

// hasLedger reports whether --out names a ledger to read: a bucket, or a
// folder holding the database, or an earlier version's ledger folder that
// opening imports.
func hasLedger(out string) bool {
	if isURL(out) {
		return true
	}
	if st, err := os.Stat(filepath.Join(out, sqlitestore.DBFile)); err == nil && st.Mode().IsRegular() {
		return true
	}
	return existsDir(filepath.Join(out, "ledger"))
}
