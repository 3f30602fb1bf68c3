//go:build unix

package pgledger

import (
	"context"
	"fmt"
	mathrand "math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

func open(t *testing.T, url string) batch.Ledger {
	t.Helper()
	l, err := Open(t.Context(), url)
	require.NoError(t, err)
	return l
}

func TestLedger(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) batch.Ledger { return open(t, pgtest.Database(t)) })
}

// Claims cancelled at random moments, beside claims that are not, on a
// pool of two connections: batched claims, claims that take a share of a
// capped budget (one transaction each) and claims of jobs live on another
// run (which probe that run's lock) all finish within a generous bound,
// whatever was cancelled; a transaction never waits for a second
// connection while it holds one. Every claim is accounted for: one cancelled
// either landed, and is then the run's own when tried again, or did not,
// and the budget counts one share a capped job; no connection is left
// taken.
func TestClaimsCancelledAtRandomOnASmallPoolAllFinishAndAreAccountedFor(t *testing.T) {
	l, err := Open(t.Context(), pgtest.Database(t))
	require.NoError(t, err)
	defer l.Close()
	l.DB().SetMaxOpenConns(2)
	a, _ := beginRun(t, l, time.Minute)
	b, _ := beginRun(t, l, time.Minute)
	const jobs, held = 240, 24 // jobs of run a; the first held are live on run b
	name := func(i int) string { return job(fmt.Sprint("pool ", i)) }
	claimOf := func(i int, run string) *batch.Claim {
		c := call(name(i), 1, run)
		if i%3 != 0 {
			c.Share = batch.Share{} // batched
		}
		return c
	}
	for i := range held {
		res, err := l.Claim(t.Context(), claimOf(i, b))
		require.NoError(t, err)
		require.True(t, res.Claimed)
	}
	bound, stop := context.WithTimeout(t.Context(), time.Minute)
	defer stop()
	rng := mathrand.New(mathrand.NewPCG(3, 5))
	delays := make([]time.Duration, jobs)
	for i := range delays {
		delays[i] = time.Duration(rng.IntN(10000)) * time.Microsecond
	}
	errs := make([]error, jobs)
	claimed := make([]bool, jobs)
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			ctx := bound
			if i%2 == 1 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(bound)
				defer cancel()
				time.AfterFunc(delays[i], cancel)
			}
			res, err := l.Claim(ctx, claimOf(i, a))
			errs[i], claimed[i] = err, res.Claimed
		})
	}
	wg.Wait()
	require.NoError(t, bound.Err(), "claims waited past the bound")
	capped := 0
	for i := range jobs {
		mine := i >= held
		if i%2 == 0 {
			require.NoError(t, errs[i], "claim %d, whose context was never cancelled", i)
			require.Equal(t, mine, claimed[i], "claim %d", i)
		}
		if mine && i%3 == 0 {
			capped++
		}
		res, err := l.Claim(bound, claimOf(i, a)) // a cancelled claim that landed is the run's own
		require.NoError(t, err, "claim %d tried again", i)
		require.Equal(t, mine, res.Claimed, "claim %d tried again", i)
		last := lastOf(t, l, name(i))
		assert.Equal(t, map[bool]string{true: a, false: b}[mine], last.Run, "job %d", i)
		assert.Equal(t, batch.Claimed, last.State, "job %d", i)
	}
	st, err := l.Status(bound)
	require.NoError(t, err)
	assert.Equal(t, jobs, st.InFlight)
	assert.EqualValues(t, capped+(held+2)/3, st.Budget.Calls, "one share a capped job")
	for range 2 { // both connections free
		c, err := l.DB().Conn(bound)
		require.NoError(t, err, "a connection left taken")
		defer c.Close()
	}
}

func TestEverySessionEndsWhenIdleInATransactionOrSilent(t *testing.T) {
	l, err := Open(t.Context(), pgtest.Database(t))
	require.NoError(t, err)
	defer l.Close()
	var idleInTx, idle, count, app string
	require.NoError(t, l.DB().QueryRowContext(t.Context(), `SELECT current_setting('idle_in_transaction_session_timeout'),
		current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_count'), current_setting('application_name')`).
		Scan(&idleInTx, &idle, &count, &app))
	require.Equal(t, []string{"10s", "45", "3", "creative batch"}, []string{idleInTx, idle, count, app},
		"idle in a transaction, keepalives idle and count (the default lease of 90 s), the application's name")
}

// A read of every job (the page, the status) waits for one round trip a
// page of 5,000 rows, not one a page of 500: 1,200 jobs come back in one
// query.
func TestEveryJobIsReadInPagesOfThousandsOfRows(t *testing.T) {
	srv := pgtest.Shared(t)
	l, p := proxied(t, srv, srv.Database(t))
	tok, _ := beginRun(t, l, time.Minute)
	const n = 1200
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				c := call(job(fmt.Sprint(i)), 1, tok)
				c.Share = batch.Share{}
				res, err := l.Claim(t.Context(), c)
				assert.NoError(t, err)
				assert.True(t, res.Claimed)
			}
		})
	}
	wg.Wait()
	read := func() (jobs int, trips int64) {
		before := p.Stats().RoundTrips
		for _, err := range l.Jobs(t.Context(), false) {
			require.NoError(t, err)
			jobs++
		}
		return jobs, p.Stats().RoundTrips - before
	}
	read() // the statement prepared on its connection
	jobs, trips := read()
	assert.Equal(t, n, jobs)
	assert.LessOrEqual(t, trips, int64(1), "round trips of one read of every job")
}
