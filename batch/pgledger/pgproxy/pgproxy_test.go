//go:build unix

package pgproxy_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/creativegen/creative-go/batch/pgledger/pgproxy"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// setup gives a fresh database, a proxy to its server, and the URLs of
// both.
func setup(t *testing.T) (p *pgproxy.Proxy, direct, proxied string) {
	t.Helper()
	direct = pgtest.Database(t)
	p, err := pgproxy.New(pgtest.Shared(t).Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	proxied, err = p.URL(direct)
	if err != nil {
		t.Fatal(err)
	}
	return p, direct, proxied
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func mustExec(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t *testing.T, url string) int {
	t.Helper()
	var n int
	if err := connect(t, url).QueryRow(context.Background(), "SELECT count(*) FROM paid").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTheProxyCountsEachRoundTripAndAddsItsDelayToEach(t *testing.T) {
	p, _, url := setup(t)
	c := connect(t, url)
	before := p.Stats()
	const delay = 100 * time.Millisecond
	p.SetDelay(delay)
	start := time.Now()
	for range 3 {
		mustExec(t, c, "SELECT 1")
	}
	if took := time.Since(start); took < 3*delay {
		t.Errorf("3 round trips with a delay of %v took %v", delay, took)
	}
	if got := p.Stats().RoundTrips - before.RoundTrips; got != 3 {
		t.Errorf("3 queries made %d round trips", got)
	}
	batch := &pgx.Batch{}
	batch.Queue("SELECT 1")
	batch.Queue("SELECT 2")
	before = p.Stats()
	if err := c.SendBatch(context.Background(), batch).Close(); err != nil {
		t.Fatal(err)
	}
	if got := p.Stats().RoundTrips - before.RoundTrips; got < 1 || got > 2 {
		t.Errorf("a batch of 2 made %d round trips", got)
	}
}

func TestACommitCutAfterItIsSentCommitsAndTheClientNeverLearnsIt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		where pgproxy.CommitCut
		rows  int
	}{
		{"after the COMMIT: committed", pgproxy.AfterCommit, 1},
		{"before the COMMIT: rolled back", pgproxy.BeforeCommit, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, direct, url := setup(t)
			mustExec(t, connect(t, direct), "CREATE TABLE paid (job text)")
			c := connect(t, url)
			ctx := context.Background()
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO paid VALUES ('a')"); err != nil {
				t.Fatal(err)
			}
			p.CutCommit(1, tc.where)
			if err := tx.Commit(ctx); err == nil {
				t.Fatal("the COMMIT answered though its connection was cut")
			}
			if got := count(t, direct); got != tc.rows {
				t.Errorf("%d rows committed, want %d", got, tc.rows)
			}
			if s := p.Stats(); s.Commits != 1 || s.Cut != 1 {
				t.Errorf("stats %+v, want 1 commit and 1 cut", s)
			}
			// Only the armed COMMIT is cut.
			c2 := connect(t, url)
			mustExec(t, c2, "BEGIN")
			mustExec(t, c2, "INSERT INTO paid VALUES ('b')")
			mustExec(t, c2, "COMMIT")
			if got := count(t, direct); got != tc.rows+1 {
				t.Errorf("%d rows after a second COMMIT, want %d", got, tc.rows+1)
			}
		})
	}
}

func TestADropOrAResetEndsOpenConnectionsOnly(t *testing.T) {
	for _, reset := range []bool{false, true} {
		p, _, url := setup(t)
		c := connect(t, url)
		mustExec(t, c, "SELECT 1")
		if reset {
			p.Reset()
		} else {
			p.Drop()
		}
		_, err := c.Exec(context.Background(), "SELECT 1")
		if err == nil {
			t.Fatalf("reset %v: a query on a cut connection answered", reset)
		}
		if reset && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("a reset connection failed with %v, want ECONNRESET", err)
		}
		mustExec(t, connect(t, url), "SELECT 1")
	}
}

func TestAStallHoldsEveryByteUntilResumedAndRefuseEndsNewConnections(t *testing.T) {
	p, _, url := setup(t)
	c := connect(t, url)
	p.Stall()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := c.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("a query answered through a stalled proxy")
	}
	p.Resume()
	mustExec(t, connect(t, url), "SELECT 1")
	p.Refuse(true)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if c, err := pgx.Connect(ctx2, url); err == nil {
		_ = c.Close(ctx2)
		t.Fatal("a connection opened through a proxy that refuses")
	}
	p.Refuse(false)
	mustExec(t, connect(t, url), "SELECT 1")
}

func TestAStatementOutsideATransactionCommitsOnItsOwnAndItsAnswerCanBeCut(t *testing.T) {
	p, direct, url := setup(t)
	mustExec(t, connect(t, direct), "CREATE TABLE paid (job text)")
	c := connect(t, url)
	p.CutCommit(1, pgproxy.AfterCommit)
	if _, err := c.Exec(context.Background(), "INSERT INTO paid VALUES ($1)", "a"); err == nil {
		t.Fatal("a statement answered though its connection was cut")
	}
	if got := count(t, direct); got != 1 {
		t.Errorf("%d rows committed, want 1", got)
	}
	if s := p.Stats(); s.Commits != 1 || s.Cut != 1 {
		t.Errorf("stats %+v, want 1 commit and 1 cut", s)
	}
}
