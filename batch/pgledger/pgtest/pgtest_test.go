//go:build unix

package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// exec runs sql on a connection of its own and returns the first column
// of its first row, if it has one.
func exec(t *testing.T, url, sql string) string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var out string
	rows, err := c.Query(ctx, sql)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		if err := rows.Scan(&out); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func TestEachTestGetsAFreshDatabaseOnTheSharedServer(t *testing.T) {
	a, b := pgtest.Database(t), pgtest.Database(t)
	if a == b {
		t.Fatalf("two calls gave one database, %s", a)
	}
	exec(t, a, "CREATE TABLE mark (x int)")
	if got := exec(t, b, "SELECT count(*)::text FROM pg_tables WHERE tablename = 'mark'"); got != "0" {
		t.Fatalf("a table made in %s is in %s", a, b)
	}
	if first := pgtest.Shared(t); pgtest.Shared(t) != first {
		t.Fatal("the test binary started two shared servers")
	}
}

func TestAServerKeepsWhatWasCommittedAcrossACrashAndAStop(t *testing.T) {
	s := pgtest.Start(t)
	url := s.Database(t)
	exec(t, url, "CREATE TABLE kept (v text)")
	exec(t, url, "INSERT INTO kept VALUES ('paid')")
	s.Crash()
	ctx := context.Background()
	if c, err := pgx.Connect(ctx, url); err == nil {
		c.Close(ctx)
		t.Fatal("a crashed server took a connection")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := exec(t, url, "SELECT v FROM kept"); got != "paid" {
		t.Fatalf("after a crash the row reads %q, want paid", got)
	}
	s.Stop()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := exec(t, url, "SELECT v FROM kept"); got != "paid" {
		t.Fatalf("after a stop the row reads %q, want paid", got)
	}
}
