//go:build unix

package pgledger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

// atkIndexLedger opens a ledger of a fresh database with a run that claimed
// n jobs, ids j0, j1, ..., in the order of their keys.
func atkIndexLedger(t *testing.T, n int) (*Ledger, string) {
	t.Helper()
	l, err := Open(t.Context(), pgtest.Shared(t).Database(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	run := hexToken()
	s, err := l.Begin(t.Context(), batch.RunInfo{Token: run, Worker: "atk", Lease: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.End(context.Background()) })
	for i := range n {
		c := newClaim(run, i)
		c.ID = fmt.Sprintf("j%d", i)
		res, err := l.Claim(t.Context(), c)
		require.NoError(t, err)
		require.True(t, res.Claimed)
	}
	return l, run
}

// atkEnd records job i of run failed with why.
func atkEnd(t *testing.T, l *Ledger, run string, i int, why string) {
	t.Helper()
	c := newClaim(run, i)
	e := c.Entry
	e.ID, e.State, e.Error = fmt.Sprintf("j%d", i), batch.Failed, why
	require.NoError(t, l.Record(context.Background(), &e))
}

func atkFolder(t *testing.T) (*batch.Folder, string) {
	t.Helper()
	dir := t.TempDir()
	f, err := batch.OpenFolder(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f, filepath.Join(dir, batch.IndexFile)
}

// A page cut short (by a user, a copy that ran out of room) or edited
// keeps the stamp at its top: the next WriteIndex must not take it for
// the ledger's page, which it is not.
func TestAttackIndexTruncatedOrEditedPageIsRewritten(t *testing.T) {
	l, run := atkIndexLedger(t, 3)
	atkEnd(t, l, run, 2, "the-last-job-failed")
	out, page := atkFolder(t)
	require.NoError(t, batch.WriteIndex(t.Context(), l, out))
	whole, err := os.ReadFile(page)
	require.NoError(t, err)
	require.Contains(t, string(whole), "the-last-job-failed")
	for what, changed := range map[string]string{
		"cut short": string(whole[:len(whole)/2]),
		"edited":    strings.Replace(string(whole), "the-last-job-failed", "the-last-job-is-fine", 1),
		"added to":  string(whole) + "<p>a note</p>\n",
	} {
		require.NoError(t, os.WriteFile(page, []byte(changed), 0o644))
		require.NoError(t, batch.WriteIndex(t.Context(), l, out))
		got, err := os.ReadFile(page)
		require.NoError(t, err)
		if string(got) != string(whole) {
			t.Errorf("the page %s (%d bytes of %d) was left as the ledger's page", what, len(got), len(whole))
		}
	}
	// Unchanged, it is left alone.
	st, err := os.Stat(page)
	require.NoError(t, err)
	require.NoError(t, os.Chtimes(page, st.ModTime().Add(-time.Hour), st.ModTime().Add(-time.Hour)))
	require.NoError(t, batch.WriteIndex(t.Context(), l, out))
	again, err := os.Stat(page)
	require.NoError(t, err)
	require.Equal(t, st.ModTime().Add(-time.Hour), again.ModTime(), "the ledger's page was written again")
}
