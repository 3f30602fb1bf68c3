package sqlitestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

// The runs of these tests record in a folder, as creative batch does.

// lines writes the jobs file of n jobs of op (prompt "job i") and returns
// its path.
func lines(t *testing.T, n int, op string) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"op":%q,"prompt":"job %d"}`+"\n", op, i)
	}
	p := filepath.Join(t.TempDir(), "jobs.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	return p
}

// runIn runs the jobs file into the Store s.
func runIn(t *testing.T, c *creative.Client, s batch.Store, jobs string, o batch.Options) (batch.Summary, error) {
	t.Helper()
	o.Base = filepath.Dir(jobs)
	r, err := batch.New(c, s, o)
	require.NoError(t, err)
	return checkAndRun(r, batch.File(jobs))
}

// Two runs on one folder, each with a Store of its own as two processes
// have, meet each other's claims and pay for each job once; with
// ResendUnknown, each reads the other's heartbeat and leaves its claims.
func TestTwoRunsOnOneFolderPayForEachJobOnce(t *testing.T) {
	for _, resend := range []bool{false, true} {
		t.Run(fmt.Sprint("ResendUnknown ", resend), func(t *testing.T) {
			srv := creativetest.Start(t)
			jobs := lines(t, 60, "image/text-to-image")
			dir := t.TempDir()
			var sums [2]batch.Summary
			var errs [2]error
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range 2 {
				s := openT(t, dir)
				wg.Go(func() {
					<-start
					sums[i], errs[i] = runIn(t, srv.Client(), s, jobs, batch.Options{Concurrency: 8, Worker: fmt.Sprint("worker-", i), ResendUnknown: resend})
				})
			}
			close(start)
			wg.Wait()
			require.NoError(t, errs[0])
			require.NoError(t, errs[1])
			assert.Equal(t, 60, srv.Count("image/text-to-image"), "every job paid once, none twice")
			assert.Equal(t, 60, sums[0].Done+sums[1].Done, "%+v %+v", sums[0], sums[1])
			for i := range 2 {
				assert.Equal(t, 60, sums[i].Done+sums[i].Elsewhere+sums[i].DoneBefore, "worker %d: %+v", i, sums[i])
				assert.Zero(t, sums[i].Claimed, "a claim of the other, live, worker is never taken for a dead one's")
			}
		})
	}
}

// A database that can take no more (a full disk: SQLite's own "database
// or disk is full") stops the run at once; the paid answer it could not
// record is handed back, and a rerun with room pays for no job twice.
func TestAFullDatabaseStopsTheRunAndARerunPaysNothingTwice(t *testing.T) {
	srv := creativetest.Start(t)
	const n = 40
	jobs := lines(t, n, "audio/text-to-music") // claim, answer, end: three records a job
	dir := t.TempDir()
	s := openT(t, dir)
	var pages int
	require.NoError(t, s.db.QueryRow(`PRAGMA page_count`).Scan(&pages))
	require.NoError(t, s.Close())

	full, err := open(dir, local, pages+2)
	require.NoError(t, err)
	_, err = runIn(t, srv.Client(), full, jobs, batch.Options{Concurrency: 2})
	require.NoError(t, full.Close())
	var le *batch.LedgerError
	require.ErrorAs(t, err, &le)
	assert.Contains(t, err.Error(), "full")
	paid := srv.Count("audio/text-to-music")
	require.Positive(t, paid)
	require.Less(t, paid, n, "the run stopped before the end")
	for _, rec := range le.Unrecorded {
		assert.NotEmpty(t, rec.URLs, "an unrecorded answer comes back with its links")
	}

	// Every paid call is in the ledger, or was handed back.
	s = openT(t, dir)
	var inLedger int
	require.NoError(t, s.db.QueryRow(`SELECT count(*) FROM jobs WHERE state IN ('done', 'answered', 'claimed') AND kind = 'call'`).Scan(&inLedger))
	assert.GreaterOrEqual(t, inLedger, paid, "a paid call the ledger does not hold is lost")

	sum, err := runIn(t, srv.Client(), s, jobs, batch.Options{Concurrency: 4})
	require.NoError(t, err)
	sent := prompts(srv)
	for prompt, count := range sent {
		assert.Equal(t, 1, count, "%s was paid %d times", prompt, count)
	}
	// A job never sent is one left claimed: its claim was made, then the
	// ledger failed before its request went out, and the ledger cannot
	// tell it from one whose request did.
	assert.Equal(t, n, len(sent)+sum.Claimed-claimedAndSent(t, s, sent), "every job paid once or left claimed: %+v", sum)
}

// claimedAndSent counts the jobs left claimed whose request arrived.
func claimedAndSent(t *testing.T, s *Store, sent map[string]int) int {
	t.Helper()
	n := 0
	for _, row := range query(t, s.db, `SELECT json_extract(record, '$.fields.prompt') FROM jobs WHERE state = 'claimed'`) {
		if sent[row[0]] > 0 {
			n++
		}
	}
	return n
}

// prompts counts the requests that arrived at srv by prompt.
func prompts(srv *creativetest.Server) map[string]int {
	out := map[string]int{}
	for _, r := range srv.Requests() {
		if m := regexp.MustCompile(`"prompt":"([^"]*)"`).FindSubmatch(r.JSON); m != nil {
			out[string(m[1])]++
		}
	}
	return out
}

// The README's queries answer what they say, for a run that did some
// jobs, failed one and left one unknown.
func TestTheREADMEsQueriesReadTheLedger(t *testing.T) {
	srv := creativetest.Start(t)
	srv.Fail("image/generate-logo", creativetest.Fault{Status: 400, Message: "no logos today"})
	srv.Fail("audio/text-to-speech", creativetest.Fault{Status: 500})
	jobs := filepath.Join(t.TempDir(), "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(strings.Join([]string{
		`{"op":"image/text-to-image","prompt":"a"}`,
		`{"op":"image/text-to-image","prompt":"b"}`,
		`{"op":"image/generate-logo","prompt":"c"}`,
		`{"op":"audio/text-to-speech","prompt":"d","voiceId":"female 1"}`,
		`{"op":"audio/text-to-music","prompt":"e"}`,
	}, "\n")), 0o644))
	s := openT(t, t.TempDir())
	_, err := runIn(t, srv.Client(), s, jobs, batch.Options{Concurrency: 1})
	require.NoError(t, err)

	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllSubmatch(readme, -1)
	require.Len(t, blocks, 3, "the README shows three queries")
	assert.Equal(t, [][]string{{"done", "3"}, {"failed", "1"}, {"unknown", "1"}}, query(t, s.db, string(blocks[0][1])), "jobs by state")
	unknown := query(t, s.db, string(blocks[1][1]))
	require.Len(t, unknown, 1, "jobs to review before --resend-unknown")
	assert.Equal(t, []string{"4", "", "audio/text-to-speech", "unknown"}, unknown[0][:4])
	assert.Equal(t, [][]string{{"audio/text-to-music", "2"}, {"audio/text-to-speech", "1"}, {"image/generate-logo", "1"}, {"image/text-to-image", "2"}},
		query(t, s.db, string(blocks[2][1])), "requests sent, the music's download included")
	assert.Len(t, query(t, s.db, `SELECT * FROM runs`), 0, "no run under way")
}

// checkAndRun checks the jobs of src, then runs them.
func checkAndRun(r *batch.Runner, src batch.Source) (batch.Summary, error) {
	c, err := r.Check(context.Background(), src)
	if err != nil {
		return batch.Summary{}, err
	}
	return r.Run(context.Background(), c)
}
