//go:build unix

package pgledger

import (
	"fmt"
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
	ledgertest.RunKnown(t, func(t *testing.T) batch.Ledger { return open(t, pgtest.Database(t)) }, map[string]string{
		// Once, under the race detector, claims whose contexts ended
		// midway left every connection of the pool taken, and the claims
		// beside them waited for one for ever.
		"claims cancelled midway never undo the claims of others": "cancelled claims can leave the pool without a free connection",
	})
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
