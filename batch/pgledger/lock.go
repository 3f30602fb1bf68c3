package pgledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrLockLost is matched by the error of a run's lock once the session
// that held it is gone: its connection died, or the server ended it.
var ErrLockLost = errors.New("pgledger: the run's connection to PostgreSQL was lost, and its lock with it")

// errLockTaken reports a run's lock already held by another session.
var errLockTaken = errors.New("pgledger: another session holds the run's lock")

// lockKey is the advisory lock's key of the run with token (32 hex
// digits): its first 64 bits.
func lockKey(token string) (int64, error) {
	u, err := strconv.ParseUint(token[:min(16, len(token))], 16, 64)
	if len(token) != 32 || err != nil {
		return 0, fmt.Errorf("pgledger: a run's token is 32 hex digits, not %q", token)
	}
	return int64(u), nil
}

// keyCond is the SQL condition that pg_locks row l is the advisory lock
// of key $1, as pg_try_advisory_lock(bigint) takes it in this database:
// its high and low 32 bits as classid and objid, objsubid 1.
const keyCond = `l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
	AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND l.classid::text::bigint = ($1::bigint >> 32) & 4294967295
	AND l.objid::text::bigint = $1::bigint & 4294967295`

// A sessionLock is a run's advisory lock, held by a connection of its own
// that no pool hands around. A goroutine owns the connection: it waits on
// it, so that its end (the server stopped, the connection cut) is seen at
// once, and runs each Check on it.
type sessionLock struct {
	conn   *pgx.Conn
	token  string
	key    int64
	tuned  bool // the session's keepalives follow the run's lease
	checks chan check
	lost   context.Context         // done once the lock is lost; its cause says why
	lose   context.CancelCauseFunc // the first cause given holds
	done   chan struct{}
	stop   context.CancelFunc
}

// A check asks the goroutine that owns the connection to run fn on it
// (the lock's ping).
type check struct {
	ctx   context.Context
	fn    func(ctx context.Context) error
	reply chan error
}

// takeLock connects with cfg and takes the advisory lock of token.
func takeLock(ctx context.Context, cfg *pgx.ConnConfig, token string) (*sessionLock, error) {
	key, err := lockKey(token)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgledger: connecting for the run's lock: %w", err)
	}
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&got); err != nil || !got {
		_ = conn.Close(context.Background())
		return nil, fmt.Errorf("pgledger: taking the run's lock: %w", cmp.Or(err, errLockTaken))
	}
	wctx, stop := context.WithCancel(context.Background())
	lost, lose := context.WithCancelCause(context.Background())
	l := &sessionLock{conn: conn, token: token, key: key, checks: make(chan check), lost: lost, lose: lose,
		done: make(chan struct{}), stop: stop}
	go l.own(wctx)
	return l, nil
}

// own waits on the connection until it ends, the lock is released, or a
// check asks for it.
func (l *sessionLock) own(ctx context.Context) {
	defer close(l.done)
	defer func() { _ = l.conn.Close(context.Background()) }()
	for {
		wait, cancel := context.WithCancel(ctx)
		waited := make(chan error, 1)
		go func() { waited <- l.conn.PgConn().WaitForNotification(wait) }()
		var c check // none when the wait ended by itself: the connection did
		select {
		case c = <-l.checks:
		case <-ctx.Done():
		case err := <-waited:
			waited <- err // read below, as after a wait cut short
		}
		cancel()
		err := <-waited
		if ctx.Err() != nil { // released: the wait ended for that
			l.unlock()
			return
		}
		if c.reply != nil {
			if !l.conn.PgConn().IsClosed() {
				err = c.fn(c.ctx) // the wait was cut short for the check
			}
			c.reply <- err
		}
		if err != nil || c.reply == nil {
			l.fail(err)
			return
		}
	}
}

// unlock lets the lock go before the connection closes, so that it is
// free when Release returns (a closed connection's is freed by the
// server a moment later).
func (l *sessionLock) unlock() {
	if l.conn.PgConn().IsClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = l.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", l.key)
}

// ping proves the session still holds the lock, and sets the session's
// keepalives by the run's lease once the run's row is there.
func (l *sessionLock) ping(ctx context.Context) error {
	if !l.tuned {
		var ms int64
		err := l.conn.QueryRow(ctx, "SELECT lease_ms FROM runs WHERE token = $1", l.token).Scan(&ms)
		if err == nil {
			_, err = l.conn.Exec(ctx, keepaliveSQL(time.Duration(ms)*time.Millisecond))
			l.tuned = err == nil
		}
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); err != nil && !errors.Is(err, pgx.ErrNoRows) && !(ok && pgErr.Code == "42P01") {
			return err // not "no row yet" nor "no table yet"
		}
	}
	var held bool
	err := l.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l WHERE `+keyCond+` AND l.pid = pg_backend_pid())`, l.key).Scan(&held)
	if err == nil && !held {
		err = errors.New("pgledger: the session no longer holds the run's lock")
	}
	return err
}

// keepaliveSQL sets the session's TCP keepalives so that the server ends
// it, and lets its lock go, once it has heard nothing from the worker
// for about the lease: never sooner than the worker stops sending on its
// own (its lease is proven for the lease less its margin), and within the
// lease plus a few seconds.
func keepaliveSQL(lease time.Duration) string {
	var sets []string
	for name, v := range keepalives(lease) {
		sets = append(sets, "SET "+name+" = "+v)
	}
	return strings.Join(sets, "; ")
}

// keepalives are the settings of keepaliveSQL, by name.
func keepalives(lease time.Duration) map[string]string {
	secs := max(int(lease/time.Second), 3)
	idle := max(secs/2, 1)
	interval := max((secs-idle)/3, 1)
	return map[string]string{"tcp_keepalives_idle": strconv.Itoa(idle), "tcp_keepalives_interval": strconv.Itoa(interval),
		"tcp_keepalives_count": "3", "tcp_user_timeout": strconv.FormatInt(max(lease.Milliseconds(), 3000), 10)}
}

func (l *sessionLock) fail(err error) { l.lose(fmt.Errorf("%w: %w", ErrLockLost, err)) }

// Check proves the lock is still held, within ctx's deadline.
func (l *sessionLock) Check(ctx context.Context) error { return l.on(ctx, l.ping) }

// on runs fn on the lock's connection, in the goroutine that owns it: an
// error of fn loses the lock.
func (l *sessionLock) on(ctx context.Context, fn func(ctx context.Context) error) error {
	c := check{ctx: ctx, fn: fn, reply: make(chan error, 1)}
	select {
	case l.checks <- c:
	case <-l.lost.Done():
		return context.Cause(l.lost)
	case <-l.done:
		return cmp.Or(context.Cause(l.lost), errors.New("pgledger: the run's lock was released"))
	case <-ctx.Done():
		return fmt.Errorf("pgledger: checking the run's lock: %w", ctx.Err())
	}
	select {
	case err := <-c.reply:
		if err != nil {
			// The goroutine loses the lock for err once it replied.
			return fmt.Errorf("%w: %w", ErrLockLost, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pgledger: checking the run's lock: %w", ctx.Err())
	}
}

// Lost is closed once the lock is known to be lost.
func (l *sessionLock) Lost() <-chan struct{} { return l.lost.Done() }

// Release lets the lock go: the connection that holds it is closed.
func (l *sessionLock) Release() error {
	l.stop()
	<-l.done
	return nil
}
