//go:build unix

package pgledger

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/pgledger/pgproxy"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// proxied opens the ledger at url through a proxy of its own.
func proxied(t *testing.T, srv *pgtest.Server, url string) (batch.Ledger, *pgproxy.Proxy) {
	t.Helper()
	p, err := pgproxy.New(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	purl, err := p.URL(url)
	require.NoError(t, err)
	l := open(t, purl)
	t.Cleanup(func() { _ = l.Close() })
	return l, p
}

func beginRun(t *testing.T, l batch.Ledger, lease time.Duration) (string, batch.Session) {
	t.Helper()
	tok := newToken()
	s, err := l.Begin(t.Context(), batch.RunInfo{Token: tok, Worker: "test:" + tok[:4], Lease: lease})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.End(context.Background()) })
	return tok, s
}

func call(job string, n int, run string) *batch.Claim {
	return &batch.Claim{Entry: batch.Entry{Record: batch.Record{Job: job, Line: 1, Op: "image/text-to-image", Attempt: n,
		Fields: map[string]any{"prompt": "a fox"}, Worker: "w", Run: run}, Kind: batch.KindCall, Stem: "000001-" + job[:6]},
		Share: batch.Share{Calls: 1, MaxCalls: 1000}}
}

// job is the key of the job named name.
func job(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:16])
}

func lastOf(t *testing.T, l batch.Ledger, j string) batch.Last {
	t.Helper()
	got, err := l.Last(t.Context(), []string{j})
	require.NoError(t, err)
	require.Len(t, got, 1)
	return got[0]
}

// spent reads the calls the budget counts.
func spent(t *testing.T, l batch.Ledger) int64 {
	t.Helper()
	var n int64
	require.NoError(t, l.(interface{ DB() *sql.DB }).DB().QueryRowContext(t.Context(), `SELECT spent FROM budget WHERE cap = 'calls'`).Scan(&n))
	return n
}

func TestACommitWhoseAnswerWasLostIsRecognisedAsTheRunsOwn(t *testing.T) {
	srv := pgtest.Shared(t)
	url := srv.Database(t)
	l, p := proxied(t, srv, url)
	run, _ := beginRun(t, l, time.Minute)
	capped := 0
	for _, where := range []pgproxy.CommitCut{pgproxy.AfterCommit, pgproxy.BeforeCommit} {
		// A capped claim is a transaction of its own; an uncapped one goes
		// in a batch's statement.
		for _, budget := range []bool{true, false} {
			name := fmt.Sprintf("%s, capped %v", where, budget)
			j := job(name)
			cuts := p.Stats().Cut
			p.CutCommit(1, where)
			c := call(j, 1, run)
			if budget {
				capped++
			} else {
				c.Share = batch.Share{}
			}
			res, err := l.Claim(t.Context(), c)
			require.NoError(t, err, name)
			assert.True(t, res.Claimed, "%s: a claim whose commit's answer was lost is the run's own", name)
			assert.Equal(t, cuts+1, p.Stats().Cut, "%s: the claim's commit was cut", name)
			got := lastOf(t, l, j)
			assert.Equal(t, run, got.Run)
			assert.Equal(t, 1, got.Attempt)
			assert.True(t, got.Live, "%s: the claim reads live", name)

			p.CutCommit(1, where)
			done := &batch.Entry{Record: batch.Record{Job: j, Attempt: 1, Run: run, State: batch.Done, Requests: 1}, Kind: batch.KindCall}
			require.NoError(t, l.Record(t.Context(), done), "%s: a record whose commit's answer was lost is the run's own", name)
			assert.Equal(t, cuts+2, p.Stats().Cut, "%s: the record's commit was cut", name)
			assert.Equal(t, batch.Done, lastOf(t, l, j).State)
		}
	}
	assert.EqualValues(t, capped, spent(t, l), "each capped claim took one share, whatever its commit's answer")
}

func TestAWorkerWhoseConnectionIsCutStopsBeforeAnotherCanTakeItsJobsOver(t *testing.T) {
	srv := pgtest.Shared(t)
	url := srv.Database(t)
	la, pa := proxied(t, srv, url)
	lb := open(t, url)
	const lease = 3 * time.Second
	began := time.Now()
	a, sa := beginRun(t, la, lease)
	j := job("cut")
	res, err := la.Claim(t.Context(), call(j, 1, a))
	require.NoError(t, err)
	require.True(t, res.Claimed)
	cut := time.Now()
	pa.Reset()
	select {
	case <-sa.Lost():
	case <-time.After(time.Minute):
		t.Fatal("the worker did not learn that its connection was cut")
	}
	lostAfter := time.Since(cut)
	// Within the lease's margin the job is still the worker's, though its
	// lock is free: it may not have stopped sending yet.
	b, _ := beginRun(t, lb, lease)
	c := call(j, 2, b)
	c.ResendUnknown = true
	var took time.Time
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		res, err := lb.Claim(t.Context(), c)
		require.NoError(t, err)
		if res.Claimed {
			took = time.Now()
			break
		}
		assert.True(t, res.Live, "the worker's claim reads live until taken over")
		require.Less(t, time.Since(start), time.Minute, "the job was never taken over")
	}
	assert.Less(t, lostAfter, took.Sub(cut), "the worker knew before the job was taken")
	assert.GreaterOrEqual(t, took.Sub(began), lease/3, "taken over within the margin after the worker's last heartbeat")
	require.ErrorIs(t, sa.Beat(t.Context()), batch.ErrLeaseLost)
	err = la.Record(t.Context(), &batch.Entry{Record: batch.Record{Job: j, Attempt: 1, Run: a, State: batch.Done}, Kind: batch.KindCall})
	require.ErrorIs(t, err, batch.ErrFenced, "the worker's late answer is fenced")
}

func TestAWorkerWhoseClockIsOffKeepsItsLiveJobs(t *testing.T) {
	for _, skew := range []time.Duration{-10 * time.Minute, 10 * time.Minute} {
		url := pgtest.Database(t)
		la, lb := open(t, url), open(t, url)
		const lease = time.Second
		a, sa := beginRun(t, la, lease)
		j := job("skew" + skew.String())
		c := call(j, 1, a)
		c.Time = time.Now().Add(skew) // what the worker's clock says
		res, err := la.Claim(t.Context(), c)
		require.NoError(t, err)
		require.True(t, res.Claimed)
		b, _ := beginRun(t, lb, lease)
		// Several leases pass; the worker beats (its session's clock is
		// the database's), and its job is never taken.
		for end := time.Now().Add(3 * lease); time.Now().Before(end); time.Sleep(lease / 6) {
			require.NoError(t, sa.Beat(t.Context()))
			c := call(j, 2, b)
			c.ResendUnknown = true
			res, err := lb.Claim(t.Context(), c)
			require.NoError(t, err)
			require.False(t, res.Claimed, "skew %v: a live job was taken over", skew)
			require.True(t, res.Live)
		}
		got := lastOf(t, lb, j)
		assert.WithinDuration(t, time.Now(), got.Time, time.Minute, "the claim's time is the database's")
	}
}

func TestAServerRestartedMidRunLosesEveryLockAndKeepsEveryClaim(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.Database(t)
	l := open(t, url)
	t.Cleanup(func() { _ = l.Close() })
	const lease = 2 * time.Second
	a, sa := beginRun(t, l, lease)
	j := job("restart")
	res, err := l.Claim(t.Context(), call(j, 1, a))
	require.NoError(t, err)
	require.True(t, res.Claimed)
	srv.Crash()
	select {
	case <-sa.Lost():
	case <-time.After(time.Minute):
		t.Fatal("the worker did not learn that the server stopped")
	}
	require.NoError(t, srv.Restart())
	require.ErrorIs(t, sa.Beat(t.Context()), batch.ErrLeaseLost)
	// Once the margin passes, another run finds the claim maybe paid.
	time.Sleep(lease / 3)
	l2 := open(t, url)
	b, _ := beginRun(t, l2, lease)
	got := lastOf(t, l2, j)
	assert.False(t, got.Live)
	res, err = l2.Claim(t.Context(), call(j, 2, b))
	require.NoError(t, err)
	assert.False(t, res.Claimed, "maybe paid: not sent again without ResendUnknown")
}

func TestOpenRefusesWhatIsNoLedgerAndKeepsPasswordsOutOfErrors(t *testing.T) {
	_, err := Open(t.Context(), "mysql://u:secret@host/db")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret")
	_, err = Open(t.Context(), "postgres://u:secret@"+pgtest.Shared(t).Addr()+"/db?sslmode=disable&connect_timeout=5")
	require.Error(t, err, "no such user")
	assert.NotContains(t, err.Error(), "secret")

	url := pgtest.Database(t)
	db := open(t, url).(interface{ DB() *sql.DB }).DB()
	_, err = db.ExecContext(t.Context(), `UPDATE ledger_version SET version = 99`)
	require.NoError(t, err)
	_, err = Open(t.Context(), url)
	require.ErrorContains(t, err, "version 99")

	other := pgtest.Database(t)
	l := open(t, other)
	_, err = l.(interface{ DB() *sql.DB }).DB().ExecContext(t.Context(), `DROP TABLE ledger_version`)
	require.NoError(t, err)
	_, err = Open(t.Context(), other)
	require.ErrorContains(t, err, "no ledger")
}

func TestWorkersOpeningANewDatabaseAtOnceMakeOneSchema(t *testing.T) {
	url := pgtest.Database(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			l, err := Open(context.Background(), url)
			if err == nil {
				err = l.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
}

func TestOpenWaitsForAServerThatIsRestarting(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.Database(t)
	srv.Stop()
	restarted := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		restarted <- srv.Restart()
	}()
	l, err := Open(t.Context(), url)
	require.NoError(t, <-restarted)
	require.NoError(t, err, "Open gives up on a server that is down for a second")
	_ = l.Close()
}
