//go:build unix

package pgledger

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	batchpage "github.com/creativegen/creative-go/batch/page"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

// countingFolder is a batch.Folder that counts the objects written to it.
type countingFolder struct {
	*batch.Folder
	writes atomic.Int64
}

func (c *countingFolder) NewWriter(ctx context.Context, key string, meta map[string]string) (io.WriteCloser, error) {
	c.writes.Add(1)
	return c.Folder.NewWriter(ctx, key, meta)
}

// changeAfterVersion is a ledger that, once, makes a change right after
// its version was read and before the page's rows are: the page written
// then may show the change, but its stamp is older than it.
type changeAfterVersion struct {
	batch.Ledger
	change func()
}

func (c *changeAfterVersion) Version(ctx context.Context) (string, error) {
	v, err := c.Ledger.(batch.Versioned).Version(ctx)
	if c.change != nil {
		c.change()
		c.change = nil
	}
	return v, err
}

// index.html is written again only when a job or an attempt changed since
// the rows of the page in place were read: a second write of an unchanged
// ledger leaves the file as it is (same inode, same bytes); a claim, a
// record, a change made while the page was being read, a page removed, a
// page of another version or a page cut short are written again.
func TestIndexIsWrittenAgainOnlyWhenTheLedgerChanged(t *testing.T) {
	l := open(t, pgtest.Database(t))
	defer l.Close()
	ctx := t.Context()
	run, _ := beginRun(t, l, time.Minute)
	n := 0
	claimOne := func() string {
		n++
		j := job(string(rune('a' + n)))
		res, err := l.Claim(ctx, call(j, 1, run))
		require.NoError(t, err)
		require.True(t, res.Claimed)
		return j
	}
	first := claimOne()
	dir := t.TempDir()
	f, err := batch.OpenFolder(dir)
	require.NoError(t, err)
	defer f.Close()
	out := &countingFolder{Folder: f}
	path := filepath.Join(dir, batch.IndexFile)
	write := func(l batch.Ledger, want int64, why string) []byte {
		t.Helper()
		require.NoError(t, batch.WriteIndex(ctx, l, out))
		require.Equal(t, want, out.writes.Load(), why)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return b
	}
	inode := func() uint64 {
		st, err := os.Stat(path)
		require.NoError(t, err)
		return ino(st)
	}

	page1 := write(l, 1, "the first page")
	assert.Contains(t, string(page1), first)
	before := inode()
	assert.Equal(t, page1, write(l, 1, "nothing changed: the page is left as it is"))
	assert.Equal(t, before, inode())

	second := claimOne()
	assert.Contains(t, string(write(l, 2, "a claim")), second)
	e := &batch.Entry{Record: batch.Record{Job: second, Attempt: 1, Run: run, State: batch.Done, Files: []string{"x-second.png"}, Requests: 1}, Kind: batch.KindCall}
	require.NoError(t, l.Record(ctx, e))
	assert.Contains(t, string(write(l, 3, "a record")), "x-second.png")
	write(l, 3, "nothing changed")

	var fourth string
	third := claimOne()
	racing := &changeAfterVersion{Ledger: l, change: func() { fourth = claimOne() }}
	assert.Contains(t, string(write(racing, 4, "a claim, and another made after the version was read")), third)
	assert.Contains(t, string(write(l, 5, "the page bears the version from before the last claim")), fourth)
	write(l, 5, "nothing changed")

	require.NoError(t, os.Remove(path))
	write(l, 6, "the page was removed")

	var other bytes.Buffer
	require.NoError(t, batchpage.WriteStamped(&other, "batch", "another ledger's version", slices.Values([]batchpage.Entry{})))
	require.NoError(t, os.WriteFile(path, other.Bytes(), 0o644))
	write(l, 7, "a page of another version")

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b[:bytes.Index(b, []byte("\n<meta http-equiv"))], 0o644))
	write(l, 8, "a page cut short before its stamp's end")
	write(l, 8, "nothing changed")
}

// ino is the inode of the file st describes.
func ino(st os.FileInfo) uint64 { return st.Sys().(*syscall.Stat_t).Ino }

// A run's lookup of 500 jobs, on a ledger of 100,000, reads them by the
// index: no scan of the whole jobs table, which the planner picks with
// parallel workers for it (three processes' CPU for each lookup, most of a
// rerun's wall time on a small server). Counted by the server's own
// statistics, on the one connection the lookup used.
func TestALookupOfManyJobsReadsThemByTheIndexNotTheWholeTable(t *testing.T) {
	l, err := Open(t.Context(), pgtest.Database(t))
	require.NoError(t, err)
	defer l.Close()
	ctx := t.Context()
	db := l.DB()
	run, _ := beginRun(t, l, time.Minute)
	_, err = db.ExecContext(ctx, `INSERT INTO jobs (job, line, op, stem, fields, attempt, state)
		SELECT md5(i::text), i, 'image/text-to-image', 'stem' || i, '{"prompt":"a fox"}', 1, 'done' FROM generate_series(1, 100000) i`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO attempts (job, n, kind, run, worker, state, files, requests, claimed, ended)
		SELECT md5(i::text), 1, 'call', $1, 'w', 'done', '["a.png"]', 1, 1, 2 FROM generate_series(1, 100000) i`, run)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `ANALYZE jobs; ANALYZE attempts`)
	require.NoError(t, err)
	keys := make([]string, batch.MaxLast)
	for i := range keys {
		sum := md5.Sum([]byte(strconv.Itoa(1 + i*197)))
		keys[i] = hex.EncodeToString(sum[:])
	}
	db.SetMaxOpenConns(1) // the lookup and the statistics on one session
	scans := func() (n int64) {
		t.Helper()
		_, err := db.ExecContext(ctx, `SELECT pg_stat_force_next_flush()`)
		require.NoError(t, err)
		require.NoError(t, db.QueryRowContext(ctx, `SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'jobs'`).Scan(&n))
		return n
	}
	before := scans()
	got, err := l.Last(ctx, keys)
	require.NoError(t, err)
	require.Len(t, got, batch.MaxLast)
	assert.Equal(t, before, scans(), "the lookup scanned the jobs table whole")
}
