//go:build unix

package pgledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/creativegen/creative-go/batch/pgledger/pgproxy"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const token = "0123456789abcdef0123456789abcdef"

// held says whether any session holds the advisory lock of token.
func held(t *testing.T, url, token string) bool {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	key, err := lockKey(token)
	if err != nil {
		t.Fatal(err)
	}
	var got bool
	if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l WHERE `+keyCond+`)`, key).Scan(&got); err != nil {
		t.Fatal(err)
	}
	return got
}

func config(t *testing.T, url string) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// waitLost waits, with a generous bound, for the lock to be lost.
func waitLost(t *testing.T, l *sessionLock) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(time.Minute):
		t.Fatal("the lock was not found lost")
	}
	if err := l.Check(context.Background()); !errors.Is(err, ErrLockLost) {
		t.Fatalf("Check of a lost lock: %v, want ErrLockLost", err)
	}
}

func TestARunsLockIsHeldByOneSessionUntilReleased(t *testing.T) {
	url := pgtest.Database(t)
	ctx := context.Background()
	l, err := takeLock(ctx, config(t, url), token)
	if err != nil {
		t.Fatal(err)
	}
	if !held(t, url, token) {
		t.Fatal("the lock is not in pg_locks")
	}
	if held(t, url, "1"+token[1:]) {
		t.Fatal("another token's lock reads as held")
	}
	if _, err := takeLock(ctx, config(t, url), token); !errors.Is(err, errLockTaken) {
		t.Fatalf("a second session took a held lock: %v", err)
	}
	for range 3 {
		if err := l.Check(ctx); err != nil {
			t.Fatalf("Check of a held lock: %v", err)
		}
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if held(t, url, token) {
		t.Fatal("a released lock is still held")
	}
	select {
	case <-l.Lost():
		t.Fatal("a released lock reads as lost")
	default:
	}
	l2, err := takeLock(ctx, config(t, url), token)
	if err != nil {
		t.Fatalf("a released lock could not be taken again: %v", err)
	}
	_ = l2.Release()
}

func TestALockIsLostAtOnceWhenItsConnectionIsCutOrTheServerStops(t *testing.T) {
	for _, fault := range []string{"drop", "reset", "crash"} {
		t.Run(fault, func(t *testing.T) {
			srv := pgtest.Start(t)
			url := srv.Database(t)
			p, err := pgproxy.New(srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			purl, _ := p.URL(url)
			l, err := takeLock(context.Background(), config(t, purl), token)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			switch fault {
			case "drop":
				p.Drop()
			case "reset":
				p.Reset()
			case "crash":
				srv.Crash()
				if err := srv.Restart(); err != nil {
					t.Fatal(err)
				}
			}
			waitLost(t, l)
			// The server lets it go once it reads the connection's end.
			for start := time.Now(); held(t, url, token); time.Sleep(20 * time.Millisecond) {
				if time.Since(start) > time.Minute {
					t.Fatal("the server still holds the lock of a cut session")
				}
			}
		})
	}
}

func TestACheckThatCannotReachTheServerInTimeLosesTheLock(t *testing.T) {
	srv := pgtest.Shared(t)
	url := srv.Database(t)
	p, err := pgproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	purl, _ := p.URL(url)
	l, err := takeLock(context.Background(), config(t, purl), token)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	p.Stall()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := l.Check(ctx); err == nil {
		t.Fatal("a check through a stalled network proved the lock")
	}
	p.Resume()
	waitLost(t, l)
}

func TestTheSessionsKeepalivesFollowTheRunsLease(t *testing.T) {
	url := pgtest.Database(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE runs (token text PRIMARY KEY, lease_ms bigint)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO runs VALUES ($1, 12000)", token); err != nil {
		t.Fatal(err)
	}
	l, err := takeLock(ctx, config(t, url), token)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := l.Check(ctx); err != nil {
		t.Fatal(err)
	}
	var idle, interval, count, user string
	if err := l.on(ctx, func(ctx context.Context) error {
		return l.conn.QueryRow(ctx, "SELECT current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_interval'), current_setting('tcp_keepalives_count'), current_setting('tcp_user_timeout')").Scan(&idle, &interval, &count, &user)
	}); err != nil {
		t.Fatal(err)
	}
	if idle != "6" || interval != "2" || count != "3" || user != "12000" {
		t.Fatalf("keepalives idle %s, interval %s, count %s, user timeout %s; want 6, 2, 3, 12000 (the lease of 12 s)", idle, interval, count, user)
	}
}
