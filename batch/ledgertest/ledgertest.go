// Package ledgertest checks that a batch.Ledger keeps the pay-once rules:
// claims made once under concurrency, never over a live or maybe paid
// attempt without say-so, records fenced once a job is taken over,
// retries recognised as the run's own, and a budget never passed.
//
// A Ledger implementation runs it from its own tests:
//
//	func TestMyLedger(t *testing.T) {
//		ledgertest.Run(t, func(t *testing.T) batch.Ledger { return openMine(t) })
//	}
package ledgertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
)

// Run runs the conformance suite. open returns a Ledger on a new, empty
// database for one subtest; the suite closes it.
func Run(t *testing.T, open func(t *testing.T) batch.Ledger) {
	tests := []struct {
		name string
		fn   func(t *testing.T, l batch.Ledger)
	}{
		{"a claim makes the job's first attempt, read back live", claimNew},
		{"a claim live on another run is not made, even with ResendUnknown", claimLive},
		{"a claim tried again after it landed is the run's own and takes one share", claimRetried},
		{"an answer then an end are recorded, and a retried record is the run's own", recordStages},
		{"a claim of an ended run is maybe paid: sent again only with ResendUnknown, fencing the old run", takeOver},
		{"failed and refused jobs are claimed again; a claim must follow the last attempt", claimAfterEnd},
		{"an answered job is downloaded, not called; a lost one is called only with RepayLost", answeredJobs},
		{"an answer a live run is fetching is not fetched by another until that run ends", answerLive},
		{"a run that ended claims nothing", endedRunClaimsNothing},
		{"a heartbeat of a run taken over fails with ErrLeaseLost", beatAfterTakeOver},
		{"of concurrent claims of one job by many runs exactly one is made", claimRace},
		{"concurrent claims never pass the budget's caps", budgetRace},
		{"Take takes shares outside claims, against the same caps", take},
		{"Status, Jobs and Last read every job in few queries", readers},
		{"claims cancelled midway never undo the claims of others", cancelledClaims},
		{"a Versioned ledger's version changes with each claim and record, and with nothing read", versions},
		{"the page shows the ledger at one moment, however its rows are read", pageAtOneMoment},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := open(t)
			t.Cleanup(func() { _ = l.Close() })
			tc.fn(t, l)
		})
	}
}

func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// jobKey is the key of the job named name.
func jobKey(name string) string {
	return fmt.Sprintf("%032x", []byte(name))[:32]
}

// begin starts a run that ends with the test.
func begin(t *testing.T, l batch.Ledger) (string, batch.Session) {
	t.Helper()
	tok := token()
	s, err := l.Begin(t.Context(), batch.RunInfo{Token: tok, Worker: "test:" + tok[:4], Lease: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.End(context.Background()) })
	return tok, s
}

// claim asks for attempt n of job, a call by run.
func claim(job string, n int, run string) *batch.Claim {
	return &batch.Claim{Entry: batch.Entry{Record: batch.Record{Job: job, Line: 7, Op: "image/text-to-image", Attempt: n,
		Fields: map[string]any{"prompt": "a \"fox\"\n", "n": 2.0, "inputs": []any{"a", 1.0, map[string]any{"k": nil}}}, Worker: "w", Run: run}, Kind: batch.KindCall, Stem: "000007-text-to-image-" + job[:6]}}
}

func mustClaim(t *testing.T, l batch.Ledger, c *batch.Claim) {
	t.Helper()
	res, err := l.Claim(t.Context(), c)
	require.NoError(t, err)
	require.True(t, res.Claimed, "claim of %s attempt %d", c.Job, c.Attempt)
}

func last(t *testing.T, l batch.Ledger, job string) batch.Last {
	t.Helper()
	got, err := l.Last(t.Context(), []string{job})
	require.NoError(t, err)
	require.Len(t, got, 1)
	return got[0]
}

// end records attempt n of job as ended in state by run.
func end(job string, n int, run string, state batch.State) *batch.Entry {
	return &batch.Entry{Record: batch.Record{Job: job, Attempt: n, Run: run, State: state, Requests: 1}, Kind: batch.KindCall}
}

func claimNew(t *testing.T, l batch.Ledger) {
	a, _ := begin(t, l)
	j := jobKey("new")
	mustClaim(t, l, claim(j, 1, a))
	got := last(t, l, j)
	assert.True(t, got.Live)
	assert.Equal(t, batch.Claimed, got.State)
	assert.Equal(t, 1, got.Attempt)
	assert.Equal(t, a, got.Run)
	assert.Equal(t, batch.KindCall, got.Kind)
	assert.Equal(t, map[string]any{"prompt": "a \"fox\"\n", "n": 2.0, "inputs": []any{"a", 1.0, map[string]any{"k": nil}}}, got.Fields)
	assert.Equal(t, "image/text-to-image", got.Op)
	assert.Equal(t, 7, got.Line)
	assert.Equal(t, "000007-text-to-image-"+j[:6], got.Stem)
}

func claimLive(t *testing.T, l batch.Ledger) {
	a, _ := begin(t, l)
	b, _ := begin(t, l)
	j := jobKey("live")
	mustClaim(t, l, claim(j, 1, a))
	c := claim(j, 2, b)
	c.ResendUnknown = true
	res, err := l.Claim(t.Context(), c)
	require.NoError(t, err)
	assert.False(t, res.Claimed)
	require.NotNil(t, res.Last)
	assert.True(t, res.Live)
	assert.Equal(t, a, res.Last.Run)
	// Nor the first attempt again, by another run.
	res, err = l.Claim(t.Context(), claim(j, 1, b))
	require.NoError(t, err)
	assert.False(t, res.Claimed)
}

func claimRetried(t *testing.T, l batch.Ledger) {
	a, _ := begin(t, l)
	share := batch.Share{Calls: 1, MaxCalls: 2}
	for i, j := range []string{jobKey("r1"), jobKey("r1"), jobKey("r2")} {
		c := claim(j, 1, a)
		c.Share = share
		res, err := l.Claim(t.Context(), c)
		require.NoError(t, err, "claim %d", i)
		assert.True(t, res.Claimed, "claim %d", i)
	}
	c := claim(jobKey("r3"), 1, a)
	c.Share = share
	_, err := l.Claim(t.Context(), c)
	require.ErrorIs(t, err, batch.ErrBudgetSpent, "the retry of r1 took no second share")
	got, err := l.Last(t.Context(), []string{jobKey("r3")})
	require.NoError(t, err)
	assert.Empty(t, got, "a claim over the budget makes nothing")
}

func recordStages(t *testing.T, l batch.Ledger) {
	a, _ := begin(t, l)
	j := jobKey("stages")
	mustClaim(t, l, claim(j, 1, a))
	ans := end(j, 1, a, batch.Answered)
	ans.URLs = []string{"https://cdn.example/1.png", "https://cdn.example/2.png"}
	ans.Text = "hello"
	require.NoError(t, l.Record(t.Context(), ans))
	got := last(t, l, j)
	assert.Equal(t, batch.Answered, got.State)
	assert.Equal(t, ans.URLs, got.URLs)
	assert.True(t, got.Live, "its run fetches the files")
	done := *ans
	done.State, done.Files, done.RequestID, done.Seconds = batch.Done, []string{"a-1.png", "a-2.png"}, "req-1", 1.5
	require.NoError(t, l.Record(t.Context(), &done))
	require.NoError(t, l.Record(t.Context(), &done), "a retried record is the run's own")
	got = last(t, l, j)
	assert.Equal(t, batch.Done, got.State)
	assert.Equal(t, []string{"a-1.png", "a-2.png"}, got.Files)
	assert.Equal(t, "req-1", got.RequestID)
	assert.Equal(t, "hello", got.Text)
	assert.Equal(t, 1.5, got.Seconds)
	assert.WithinDuration(t, time.Now(), got.Time, time.Hour)
	// Another run cannot record it.
	b, _ := begin(t, l)
	require.ErrorIs(t, l.Record(t.Context(), end(j, 1, b, batch.Failed)), batch.ErrFenced)
}

func takeOver(t *testing.T, l batch.Ledger) {
	a, sa := begin(t, l)
	j := jobKey("takeover")
	mustClaim(t, l, claim(j, 1, a))
	require.NoError(t, sa.End(t.Context()))
	got := last(t, l, j)
	assert.False(t, got.Live, "a claim of an ended run is not live")
	b, _ := begin(t, l)
	res, err := l.Claim(t.Context(), claim(j, 2, b))
	require.NoError(t, err)
	assert.False(t, res.Claimed, "maybe paid: not sent again without ResendUnknown")
	var maybe []string
	for e, err := range l.Jobs(t.Context(), true) {
		require.NoError(t, err)
		maybe = append(maybe, e.Job)
	}
	assert.Equal(t, []string{j}, maybe)
	c := claim(j, 2, b)
	c.ResendUnknown = true
	mustClaim(t, l, c)
	require.ErrorIs(t, l.Record(t.Context(), end(j, 1, a, batch.Done)), batch.ErrFenced)
	assert.Equal(t, 2, last(t, l, j).Attempt)
}

func claimAfterEnd(t *testing.T, l batch.Ledger) {
	a, _ := begin(t, l)
	j := jobKey("again")
	mustClaim(t, l, claim(j, 1, a))
	require.NoError(t, l.Record(t.Context(), end(j, 1, a, batch.Failed)))
	res, err := l.Claim(t.Context(), claim(j, 3, a))
	require.NoError(t, err)
	assert.False(t, res.Claimed, "attempt 3 does not follow attempt 1")
	assert.Equal(t, 1, res.Last.Attempt)
	mustClaim(t, l, claim(j, 2, a))
	require.NoError(t, l.Record(t.Context(), end(j, 2, a, batch.Refused)))
	mustClaim(t, l, claim(j, 3, a))
	require.NoError(t, l.Record(t.Context(), end(j, 3, a, batch.Unknown)))
	res, err = l.Claim(t.Context(), claim(j, 4, a))
	require.NoError(t, err)
	assert.False(t, res.Claimed, "unknown: maybe paid")
}

func answeredJobs(t *testing.T, l batch.Ledger) {
	a, sa := begin(t, l)
	j, k := jobKey("waiting"), jobKey("lost")
	for _, job := range []string{j, k} {
		mustClaim(t, l, claim(job, 1, a))
		ans := end(job, 1, a, batch.Answered)
		ans.URLs = []string{"https://cdn.example/" + job}
		ans.Lost = job == k
		require.NoError(t, l.Record(t.Context(), ans))
	}
	require.NoError(t, sa.End(t.Context()))
	a, _ = begin(t, l)
	res, err := l.Claim(t.Context(), claim(j, 2, a))
	require.NoError(t, err)
	assert.False(t, res.Claimed, "a call would pay again for an answer to fetch")
	dl := claim(j, 2, a)
	dl.Kind, dl.URLs = batch.KindDownload, []string{"https://cdn.example/" + j}
	mustClaim(t, l, dl)
	assert.Equal(t, batch.KindDownload, last(t, l, j).Kind)
	res, err = l.Claim(t.Context(), claim(k, 2, a))
	require.NoError(t, err)
	assert.False(t, res.Claimed, "a lost answer is paid again only with RepayLost")
	c := claim(k, 2, a)
	c.RepayLost = true
	mustClaim(t, l, c)
}

// download is attempt n of job by run: the download of url.
func download(job string, n int, run, url string) *batch.Claim {
	c := claim(job, n, run)
	c.Kind, c.URLs = batch.KindDownload, []string{url}
	return c
}

func answerLive(t *testing.T, l batch.Ledger) {
	a, sa := begin(t, l)
	b, _ := begin(t, l)
	j := jobKey("fetching")
	mustClaim(t, l, claim(j, 1, a))
	ans := end(j, 1, a, batch.Answered)
	ans.URLs = []string{"https://cdn.example/" + j}
	require.NoError(t, l.Record(t.Context(), ans))
	assert.True(t, last(t, l, j).Live, "run a fetches its answer's files")
	res, err := l.Claim(t.Context(), download(j, 2, b, ans.URLs[0]))
	require.NoError(t, err)
	assert.False(t, res.Claimed, "the files of an answer a live run is fetching are fetched once")
	assert.True(t, res.Live)
	done := *ans
	done.State, done.Files = batch.Done, []string{"a.png"}
	require.NoError(t, l.Record(t.Context(), &done), "the run that fetched them records them")
	// An answer whose files its run could not fetch ends answered, with
	// why: fetched by another, though that run goes on.
	m := jobKey("unfetched")
	mustClaim(t, l, claim(m, 1, a))
	gave := end(m, 1, a, batch.Answered)
	gave.URLs = []string{"https://cdn.example/" + m}
	require.NoError(t, l.Record(t.Context(), gave))
	gave.Error = "the call was answered but its files were not all downloaded"
	require.NoError(t, l.Record(t.Context(), gave))
	assert.False(t, last(t, l, m).Live)
	mustClaim(t, l, download(m, 2, b, gave.URLs[0]))
	// An answer left by a run that ended is fetched by the next.
	k := jobKey("left")
	mustClaim(t, l, claim(k, 1, a))
	left := end(k, 1, a, batch.Answered)
	left.URLs = []string{"https://cdn.example/" + k}
	require.NoError(t, l.Record(t.Context(), left))
	require.NoError(t, sa.End(t.Context()))
	assert.False(t, last(t, l, k).Live)
	mustClaim(t, l, download(k, 2, b, left.URLs[0]))
}

func endedRunClaimsNothing(t *testing.T, l batch.Ledger) {
	a, sa := begin(t, l)
	require.NoError(t, sa.End(t.Context()))
	_, err := l.Claim(t.Context(), claim(jobKey("late"), 1, a))
	require.ErrorIs(t, err, batch.ErrLeaseLost)
	got, err := l.Last(t.Context(), []string{jobKey("late")})
	require.NoError(t, err)
	assert.Empty(t, got)
}

func beatAfterTakeOver(t *testing.T, l batch.Ledger) {
	a, sa := begin(t, l)
	require.NoError(t, sa.Beat(t.Context()))
	j := jobKey("beat")
	mustClaim(t, l, claim(j, 1, a))
	// The run is ended as a sweep would find it gone; then taken over.
	require.NoError(t, sa.End(t.Context()))
	b, _ := begin(t, l)
	c := claim(j, 2, b)
	c.ResendUnknown = true
	mustClaim(t, l, c)
	require.ErrorIs(t, sa.Beat(t.Context()), batch.ErrLeaseLost)
}

func take(t *testing.T, l batch.Ledger) {
	a, _ := begin(t, l)
	s := batch.Share{Calls: 1, MaxCalls: 3}
	require.NoError(t, l.Take(t.Context(), a, s))
	require.NoError(t, l.Take(t.Context(), a, s))
	c := claim(jobKey("t"), 1, a)
	c.Share = s
	mustClaim(t, l, c)
	require.ErrorIs(t, l.Take(t.Context(), a, s), batch.ErrBudgetSpent)
	// A larger cap of another run goes on from what was taken.
	require.NoError(t, l.Take(t.Context(), a, batch.Share{Calls: 1, MaxCalls: 4}))
}

// pageRows is the page a ledger with SetPage (package sqlledger) is given
// in readers, so that its Jobs crosses pages.
const pageRows = 500

func readers(t *testing.T, l batch.Ledger) {
	a, _ := begin(t, l)
	states := []batch.State{batch.Done, batch.Failed, batch.Unknown, batch.Answered, batch.Claimed}
	const n = 1203 // more than two pages of pageRows
	if p, ok := l.(interface{ SetPage(int) }); ok {
		p.SetPage(pageRows)
	}
	var keys []string
	for i := range n {
		j := jobKey(fmt.Sprintf("job%05d", i))
		keys = append(keys, j)
		mustClaim(t, l, claim(j, 1, a))
		if st := states[i%len(states)]; st != batch.Claimed {
			e := end(j, 1, a, st)
			e.Lost = st == batch.Answered && i%2 == 0
			require.NoError(t, l.Record(t.Context(), e))
		}
	}
	st, err := l.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, n, st.Jobs)
	for i, s := range states {
		assert.Equal(t, (n-i+len(states)-1)/len(states), st.States[s], "%s", s)
	}
	assert.Equal(t, st.States[batch.Claimed], st.InFlight, "claims of a live run")
	assert.Positive(t, st.Lost)
	var got []string
	for e, err := range l.Jobs(t.Context(), false) {
		require.NoError(t, err)
		got = append(got, e.Job)
	}
	slices.Sort(keys)
	assert.Equal(t, keys, got, "every job, in the order of their keys")
	some, err := l.Last(t.Context(), append([]string{jobKey("never claimed")}, keys[:batch.MaxLast-1]...))
	require.NoError(t, err)
	assert.Len(t, some, batch.MaxLast-1)
	for _, e := range some {
		assert.Equal(t, e.State == batch.Claimed || e.State == batch.Answered && !e.Lost && e.Error == "", e.Live)
	}
}

// versions checks a batch.Versioned ledger: each claim, record, lost
// answer and take-over gives a version never seen before; reading and
// taking shares of the budget change nothing the page shows, and keep it.
// A ledger whose engine has no version ("") is skipped.
func versions(t *testing.T, l batch.Ledger) {
	vl, ok := l.(batch.Versioned)
	version := func() string {
		t.Helper()
		v, err := vl.Version(t.Context())
		require.NoError(t, err)
		return v
	}
	if !ok || version() == "" {
		t.Skip("the ledger tells no version")
	}
	seen := map[string]string{}
	changed := func(what string) {
		t.Helper()
		v := version()
		if before, ok := seen[v]; ok {
			t.Fatalf("after %s the version is the one seen after %s: %q", what, before, v)
		}
		seen[v] = what
		require.Equal(t, v, version(), "read twice after %s", what)
	}
	changed("nothing")
	a, sa := begin(t, l)
	j, k := jobKey("version a"), jobKey("version b")
	mustClaim(t, l, claim(j, 1, a))
	changed("a claim")
	mustClaim(t, l, claim(k, 1, a))
	changed("another claim")
	ans := end(j, 1, a, batch.Answered)
	ans.URLs = []string{"https://cdn.example/v.png"}
	require.NoError(t, l.Record(t.Context(), ans))
	changed("an answer")
	done := *ans
	done.State, done.Files = batch.Done, []string{"v.png"}
	require.NoError(t, l.Record(t.Context(), &done))
	changed("its end")
	lost := end(k, 1, a, batch.Answered)
	lost.Lost = true
	require.NoError(t, l.Record(t.Context(), lost))
	changed("a lost answer")
	v := version()
	_, _ = l.Status(t.Context())
	for _, err := range l.Jobs(t.Context(), false) {
		require.NoError(t, err)
	}
	_, err := l.Last(t.Context(), []string{j, k})
	require.NoError(t, err)
	require.NoError(t, l.Take(t.Context(), a, batch.Share{Calls: 1, MaxCalls: 10}))
	assert.Equal(t, v, version(), "reading the jobs and taking a share change no job")
	require.NoError(t, sa.End(t.Context()))
	b, _ := begin(t, l)
	c := claim(k, 2, b)
	c.RepayLost = true
	mustClaim(t, l, c)
	changed("a lost answer claimed again by another run")
}

// hookLedger is a Ledger whose Jobs runs hook once it has handed on its
// first entry.
type hookLedger struct {
	batch.Ledger
	hook func()
}

func (h *hookLedger) Jobs(ctx context.Context, maybePaid bool) iter.Seq2[*batch.Entry, error] {
	return func(yield func(*batch.Entry, error) bool) {
		first := true
		for e, err := range h.Ledger.Jobs(ctx, maybePaid) {
			if !yield(e, err) {
				return
			}
			if first {
				first = false
				h.hook()
			}
		}
	}
}

// pageAtOneMoment: two ends recorded one after the other while the page
// is read (between its first row and the rest, on a ledger that would
// read a row a query were its rows read in pages) are shown both, the
// first alone or neither, never the second without the first.
func pageAtOneMoment(t *testing.T, l batch.Ledger) {
	if p, ok := l.(interface{ SetPage(int) }); ok {
		p.SetPage(1)
	}
	a, _ := begin(t, l)
	jobs := []string{jobKey("moment 0"), jobKey("moment 1"), jobKey("moment 2")}
	slices.Sort(jobs)
	for _, j := range jobs {
		mustClaim(t, l, claim(j, 1, a))
	}
	ended := func(j, why string) {
		e := end(j, 1, a, batch.Failed)
		e.Error = why
		require.NoError(t, l.Record(context.Background(), e))
	}
	h := &hookLedger{Ledger: l, hook: func() { ended(jobs[0], "first-ended"); ended(jobs[2], "second-ended") }}
	dir := t.TempDir()
	out, err := batch.OpenFolder(dir)
	require.NoError(t, err)
	defer out.Close()
	require.NoError(t, batch.WriteIndex(t.Context(), h, out))
	page, err := os.ReadFile(filepath.Join(dir, batch.IndexFile))
	require.NoError(t, err)
	if p := string(page); strings.Contains(p, "second-ended") && !strings.Contains(p, "first-ended") {
		t.Fatal("the page shows the second end without the first, which was recorded before it")
	}
}

// RequireDoneRecorded fails t unless every job reported done (in
// reported, by its key) is done in the ledger l, its files in store; it
// returns how many were reported done.
func RequireDoneRecorded(t *testing.T, l batch.Ledger, store batch.Store, reported map[string]batch.State) int {
	t.Helper()
	last := map[string]*batch.Entry{}
	for e, err := range l.Jobs(context.Background(), false) {
		require.NoError(t, err)
		last[e.Job] = e
	}
	done := 0
	for job, st := range reported {
		if st != batch.Done {
			continue
		}
		done++
		require.NotNil(t, last[job], "job %s reported done is not in the ledger", job)
		require.Equal(t, batch.Done, last[job].State, "job %s reported done", job)
		for _, file := range last[job].Files {
			ok, err := store.Exists(context.Background(), file)
			require.NoError(t, err)
			require.True(t, ok, "job %s reported done has no %s", job, file)
		}
	}
	return done
}
