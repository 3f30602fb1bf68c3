package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
)

// A write whose caller's deadline passes while another connection (as
// another process would) holds the database's write lock returns at its
// deadline, not after SQLite's busy timeout, and is never applied; a write
// of another caller, waiting with it, is not failed by that deadline and
// is committed once the lock is let go.
func TestAWriteHonoursItsCallersDeadlineWhileItWaitsForTheLock(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	require.NoError(t, err)
	defer s.Close()

	name, err := dsn(filepath.Join(dir, DBFile))
	require.NoError(t, err)
	other, err := sql.Open("sqlite", name)
	require.NoError(t, err)
	defer other.Close()
	holder, err := other.Conn(context.Background())
	require.NoError(t, err)
	defer holder.Close()
	_, err = holder.ExecContext(context.Background(), `BEGIN IMMEDIATE`)
	require.NoError(t, err)

	patient := make(chan error, 1)
	go func() { patient <- s.Create(context.Background(), "b", []byte("b")) }()

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	err = s.Create(ctx, "a", []byte("a"))
	took := time.Since(start)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, took, 10*time.Second, "returned at its deadline, not after the 30 s busy timeout")

	select {
	case err := <-patient:
		t.Fatalf("the other caller's write ended while the lock was held: %v", err)
	default:
	}
	_, err = holder.ExecContext(context.Background(), `ROLLBACK`)
	require.NoError(t, err)
	require.NoError(t, <-patient, "the other caller's write waited on and was committed")

	_, err = s.Get(context.Background(), "a")
	assert.True(t, errors.Is(err, batch.ErrNotExist), "the write given up was never applied: %v", err)
	got, err := s.Get(context.Background(), "b")
	require.NoError(t, err)
	assert.Equal(t, "b", string(got))
}
