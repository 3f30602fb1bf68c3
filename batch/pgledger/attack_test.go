//go:build unix

package pgledger

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/pgledger/pgproxy"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

func hexToken() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// atkProxied opens a ledger of a fresh database through a fault proxy.
func atkProxied(t *testing.T) (*Ledger, *pgproxy.Proxy) {
	t.Helper()
	srv := pgtest.Shared(t)
	url := srv.Database(t)
	p, err := pgproxy.New(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	purl, err := p.URL(url)
	require.NoError(t, err)
	l, err := Open(t.Context(), purl)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l, p
}

func newClaim(run string, i int) *batch.Claim {
	job := fmt.Sprintf("%032x", i+1)
	return &batch.Claim{Entry: batch.Entry{Record: batch.Record{Job: job, Line: i + 1, Op: "image/text-to-image",
		Attempt: 1, State: batch.Claimed, Run: run, Worker: "atk"}, Kind: batch.KindCall, Stem: "j" + job}}
}

// A claim whose context is cancelled returns, even while every batch in
// flight is another caller's and the network holds their answers.
func TestAttackACancelledClaimQueuedBehindHeldBatchesReturns(t *testing.T) {
	srv := pgtest.Shared(t)
	url := srv.Database(t)
	p, err := pgproxy.New(srv.Addr())
	require.NoError(t, err)
	defer func() { _ = p.Close() }()
	purl, err := p.URL(url)
	require.NoError(t, err)
	l, err := Open(t.Context(), purl)
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	run := hexToken()
	s, err := l.Begin(t.Context(), batch.RunInfo{Token: run, Worker: "atk", Lease: time.Minute})
	require.NoError(t, err)
	defer func() { _ = s.End(context.Background()) }()
	const batches = 8 // the batches a ledger has in flight at once
	p.SetDelay(8 * time.Second)
	bg, stopBG := context.WithCancel(context.Background())
	var held sync.WaitGroup
	defer func() { p.SetDelay(0); stopBG(); held.Wait() }()
	for i := range batches {
		// Each its own batch, holding a slot: it sent its statement (or
		// the ping of its connection, or opened one), and the answer is
		// held.
		before := p.Stats()
		held.Go(func() { _, _ = l.Claim(bg, newClaim(run, i)) })
		require.Eventually(t, func() bool {
			now := p.Stats()
			return now.RoundTrips > before.RoundTrips || now.Conns > before.Conns
		}, 20*time.Second, time.Millisecond, "batch %d", i)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := l.Claim(ctx, newClaim(run, 100))
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		require.Error(t, err, "a cancelled claim that was never sent is not claimed")
	case <-time.After(5 * time.Second):
		t.Fatal("a claim whose context was cancelled waited for other callers' batches held by the network")
	}
}

// claimOutcome is what one claim of a job by one run was told.
type claimOutcome struct {
	claimed bool
	err     error
	other   string // the run of the last attempt, when refused
}

// Two runs on a pool of one connection claim the same jobs with contexts cancelled at
// random and the proxy resetting connections and cutting them around
// their commits; with a cap, each claim takes one share. Nothing hangs,
// every connection is free at the end, a job is the claim of one run
// only, a claim cancelled or failed is, tried again, the run's own or
// another's (never both), and the budget counts one share an attempt.
func TestAttackRandomCancelsAndCutsOnASmallPool(t *testing.T) {
	for _, capped := range []bool{false, true} {
		t.Run(fmt.Sprintf("capped=%v", capped), func(t *testing.T) { randomCancels(t, capped) })
	}
}

func randomCancels(t *testing.T, capped bool) {
	rnd := seeded(t, 1)

	l, p := atkProxied(t)
	l.DB().SetMaxOpenConns(1)
	const jobs, workers, maxCalls = 120, 12, 40
	runs := []string{hexToken(), hexToken()}
	for _, run := range runs {
		s, err := l.Begin(t.Context(), batch.RunInfo{Token: run, Worker: "atk", Lease: 10 * time.Minute})
		require.NoError(t, err)
		defer func() { _ = s.End(context.Background()) }()
	}
	claimOf := func(run string, i int) *batch.Claim {
		c := newClaim(run, i)
		if capped {
			c.Share = batch.Share{Calls: 1, MaxCalls: maxCalls}
		}
		return c
	}

	stop := cutAtRandom(p, rnd, 5, 30, true, 3)

	outcomes := make([]map[string]claimOutcome, jobs)
	for i := range outcomes {
		outcomes[i] = map[string]claimOutcome{}
	}
	var omu sync.Mutex
	deadline, cancelAll := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelAll()
	var wg sync.WaitGroup
	for _, run := range runs {
		for w := range workers {
			wg.Go(func() {
				for i := w; i < jobs; i += workers {
					ctx, cancel := context.WithCancel(deadline)
					if d := rnd(6); d < 4 {
						time.AfterFunc(time.Duration(d*rnd(3000))*time.Microsecond, cancel)
					}
					res, err := l.Claim(ctx, claimOf(run, i))
					cancel()
					o := claimOutcome{claimed: res.Claimed, err: err}
					if res.Last != nil {
						o.other = res.Last.Run
					}
					omu.Lock()
					outcomes[i][run] = o
					omu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	stop()
	p.CutCommit(0, 0)
	require.NoError(t, deadline.Err(), "claims hung")

	// Every connection of the pool is free once the claims returned.
	require.Eventually(t, func() bool { return l.DB().Stats().InUse == 0 }, 10*time.Second, 10*time.Millisecond,
		"connections left in use: %+v", l.DB().Stats())

	// Tried again, a claim that failed is its run's own, or refused.
	budgetSpent := 0
	for i := range jobs {
		for _, run := range runs {
			o := outcomes[i][run]
			if o.err == nil {
				continue
			}
			if errors.Is(o.err, batch.ErrBudgetSpent) {
				budgetSpent++
			}
			res, err := l.Claim(context.Background(), claimOf(run, i))
			if errors.Is(err, batch.ErrBudgetSpent) {
				continue
			}
			require.NoError(t, err, "job %d run %s", i, run)
			o2 := claimOutcome{claimed: res.Claimed}
			if res.Last != nil {
				o2.other = res.Last.Run
			}
			outcomes[i][run] = o2
		}
	}
	// Each job is the claim of one run at most, as the ledger holds it.
	rows, err := l.DB().QueryContext(context.Background(), `SELECT job, n, run FROM attempts`)
	require.NoError(t, err)
	held := map[string]string{}
	attempts := 0
	for rows.Next() {
		var job, run string
		var n int
		require.NoError(t, rows.Scan(&job, &n, &run))
		require.Equal(t, 1, n, "job %s has an attempt %d", job, n)
		held[job] = run
		attempts++
	}
	require.NoError(t, rows.Err())
	rows.Close()
	for i := range jobs {
		job := fmt.Sprintf("%032x", i+1)
		var told []string
		for _, run := range runs {
			if outcomes[i][run].claimed {
				told = append(told, run)
			}
		}
		require.LessOrEqual(t, len(told), 1, "job %d claimed by two runs: %v", i, told)
		if len(told) == 1 {
			require.Equal(t, told[0], held[job], "job %d: the run told claimed is not the ledger's", i)
		} else if !capped {
			t.Errorf("job %d claimed by no run: %+v (ledger: %q)", i, outcomes[i], held[job])
		}
	}
	if capped {
		var spent int
		require.NoError(t, l.DB().QueryRow(`SELECT spent FROM budget WHERE cap = 'calls'`).Scan(&spent))
		require.LessOrEqual(t, spent, maxCalls)
		require.Equal(t, attempts, spent, "one share an attempt")
	} else {
		require.Equal(t, jobs, attempts)
	}
	recordAll(t, l, p, held, runs, rnd)
	t.Logf("attempts %d, proxy %+v, budget refusals %d", attempts, p.Stats(), budgetSpent)
}

// recordAll has both runs record every job done, with contexts cancelled
// at random and connections reset and cut around their commits: a run's
// record of a job another run holds is refused, never taken, and a
// record that failed is, tried again, found landed or made.
func recordAll(t *testing.T, l *Ledger, p *pgproxy.Proxy, held map[string]string, runs []string, rnd func(int) int) {
	stop := cutAtRandom(p, rnd, 5, 30, true, 3)
	entry := func(job, run string) *batch.Entry {
		return &batch.Entry{Record: batch.Record{Job: job, Attempt: 1, State: batch.Done, Run: run, Worker: "atk",
			Files: []string{"j" + job + ".png"}, Requests: 1}, Kind: batch.KindCall, Stem: "j" + job}
	}
	deadline, cancelAll := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelAll()
	type key struct{ job, run string }
	failed := map[key]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for job := range held {
		for _, run := range runs {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				ctx, cancel := context.WithCancel(deadline)
				if d := rnd(6); d < 4 {
					time.AfterFunc(time.Duration(d*rnd(3000))*time.Microsecond, cancel)
				}
				err := l.Record(ctx, entry(job, run))
				cancel()
				if run != held[job] {
					if err == nil {
						t.Errorf("job %s held by %s: the record of %s was taken", job, held[job], run)
					}
					return
				}
				if err != nil {
					mu.Lock()
					failed[key{job, run}] = err
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	stop()
	p.CutCommit(0, 0)
	require.NoError(t, deadline.Err(), "records hung")
	require.Eventually(t, func() bool { return l.DB().Stats().InUse == 0 }, 10*time.Second, 10*time.Millisecond,
		"connections left in use: %+v", l.DB().Stats())
	for k := range failed {
		require.NoError(t, l.Record(context.Background(), entry(k.job, k.run)), "a record tried again")
	}
	rows, err := l.DB().QueryContext(context.Background(), `SELECT j.job, j.state, a.state, a.run FROM jobs j JOIN attempts a ON a.job = j.job AND a.n = j.attempt`)
	require.NoError(t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var job, js, as, run string
		require.NoError(t, rows.Scan(&job, &js, &as, &run))
		require.Equal(t, held[job], run)
		require.Equal(t, "done", js, "job %s", job)
		require.Equal(t, "done", as, "job %s", job)
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, len(held), n)
	t.Logf("records: %d failed and tried again", len(failed))
}

// Claims of the one-at-a-time way (a capped budget) whose contexts are
// cancelled while the network holds their transactions return, and give
// their connections back, while the network still holds everything.
func TestAttackCancelledClaimsInHeldTransactionsReturnTheirConnections(t *testing.T) {
	l, p := atkProxied(t)
	l.DB().SetMaxOpenConns(2)
	run := hexToken()
	s, err := l.Begin(t.Context(), batch.RunInfo{Token: run, Worker: "atk", Lease: time.Minute})
	require.NoError(t, err)
	defer func() { _ = s.End(context.Background()) }()
	p.Stall()
	defer p.Resume()
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		c := newClaim(run, i)
		c.Share = batch.Share{Calls: 1, MaxCalls: 100}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Duration(50*i)*time.Millisecond, cancel)
		wg.Go(func() {
			_, err := l.Claim(ctx, c)
			errs <- err
		})
	}
	returned := make(chan struct{})
	go func() { wg.Wait(); close(returned) }()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled claims hung while the network held their transactions")
	}
	close(errs)
	for err := range errs {
		require.Error(t, err)
	}
	// The pool may be opening connections for the claims that waited,
	// each bounded by the ledger's connect timeout (10 s).
	start := time.Now()
	require.Eventually(t, func() bool { return l.DB().Stats().InUse == 0 }, 45*time.Second, 10*time.Millisecond,
		"connections left in use: %+v", l.DB().Stats())
	t.Logf("the pool was free %v after the claims returned", time.Since(start))
}

// cutAtRandom, until the stop it returns has been called, cuts one of
// the next 1 to next commits through p before or after it is sent (with
// reset, or resets every connection instead), or does nothing, each at
// random moments least to least+spread milliseconds apart.
func cutAtRandom(p *pgproxy.Proxy, rnd func(int) int, least, spread int, reset bool, next int) (stop func()) {
	done := make(chan struct{})
	var faults sync.WaitGroup
	faults.Go(func() {
		kinds := 3
		if reset {
			kinds = 4
		}
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(least+rnd(spread)) * time.Millisecond):
			}
			k := rnd(kinds)
			if reset {
				if k == 0 {
					p.Reset()
					continue
				}
				k--
			}
			switch k {
			case 0:
				p.CutCommit(1+rnd(next), pgproxy.BeforeCommit)
			case 1:
				p.CutCommit(1+rnd(next), pgproxy.AfterCommit)
			}
		}
	})
	return func() { close(done); faults.Wait() }
}

// seeded returns a draw of 0 to n-1, safe for concurrent use, from a
// generator seeded by ATK_SEED when it is set, else by the clock: the seed
// is logged, so that a failing run is replayed with ATK_SEED=<seed>.
// stream tells one test's draws from another's.
func seeded(t *testing.T, stream uint64) func(n int) int {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ATK_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("ATK_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, stream))
	var mu sync.Mutex
	return func(n int) int { mu.Lock(); defer mu.Unlock(); return rng.IntN(n) }
}
