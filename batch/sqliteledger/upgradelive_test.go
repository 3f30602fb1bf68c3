//go:build unix

package sqliteledger

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
)

// A run of an earlier version that still goes (its process, on this
// machine, holds the lock of its run in the ledger's folder, as every
// version has) keeps its claims when the ledger is brought to the schema
// under it: they are in flight, not sent again even with --resend-unknown,
// until its lock is free.
func TestAnUpgradeLeavesTheClaimsOfARunThatStillGoesToIt(t *testing.T) {
	// The claimed job of the fixture, and its run's token.
	probe := fixture(t, false)
	l, err := Open(probe)
	require.NoError(t, err)
	var job, run string
	var n int
	require.NoError(t, l.DB().QueryRow(`SELECT job, n, run FROM attempts WHERE state = 'claimed'`).Scan(&job, &n, &run))
	require.NoError(t, l.Close())

	dir := fixture(t, false)
	old, err := runLocks(dir).lock(context.Background(), run) // the earlier version's process, still going
	require.NoError(t, err)
	l, err = Open(dir)
	require.NoError(t, err)
	defer l.Close()
	tok := "0123456789abcdef0123456789abcdef"
	s, err := l.Begin(t.Context(), batch.RunInfo{Token: tok, Worker: "t", Lease: 60e9})
	require.NoError(t, err)
	defer s.End(t.Context())
	st, err := l.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, st.InFlight, "the earlier run's claim is in flight")
	c := &batch.Claim{Entry: batch.Entry{Record: batch.Record{Job: job, Attempt: n + 1, Run: tok, Op: "audio/text-to-speech"},
		Kind: batch.KindCall, Stem: "x"}, ResendUnknown: true}
	res, err := l.Claim(t.Context(), c)
	require.NoError(t, err)
	assert.False(t, res.Claimed, "a claim of a run that goes is not sent again")
	assert.True(t, res.Live)

	// Once that process ends, its claim is maybe paid, and sent again
	// with the say-so.
	require.NoError(t, old.Release())
	_, err = os.Stat(filepath.Join(dir, lockName(run)))
	require.ErrorIs(t, err, os.ErrNotExist)
	res, err = l.Claim(t.Context(), c)
	require.NoError(t, err)
	assert.True(t, res.Claimed)
}
