package sqliteledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/sqlledger"
)

// hookLedger runs hook once Jobs has handed on its first entry.
type hookLedger struct {
	*sqlledger.Ledger
	hook func()
}

func (h *hookLedger) Jobs(ctx context.Context, maybePaid bool) iter.Seq2[*batch.Entry, error] {
	return func(yield func(*batch.Entry, error) bool) {
		first := true
		for e, err := range h.Ledger.Jobs(ctx, maybePaid) {
			if !yield(e, err) {
				return
			}
			if first {
				first = false
				h.hook()
			}
		}
	}
}

// The page shows the ledger as it was at one moment: two ends recorded
// one after the other while the page is read are shown both, the first
// alone or neither, never the second without the first.
func TestAttackIndexShowsOneMoment(t *testing.T) {
	l, err := Open(t.TempDir())
	require.NoError(t, err)
	defer l.Close()
	l.SetPage(1)
	var b [16]byte
	_, _ = rand.Read(b[:])
	run := hex.EncodeToString(b[:])
	s, err := l.Begin(t.Context(), batch.RunInfo{Token: run, Worker: "atk", Lease: time.Minute})
	require.NoError(t, err)
	defer func() { _ = s.End(context.Background()) }()
	claim := func(i int) *batch.Claim {
		job := fmt.Sprintf("%032x", i+1)
		return &batch.Claim{Entry: batch.Entry{Record: batch.Record{Job: job, ID: fmt.Sprintf("j%d", i), Line: i + 1, Op: "image/text-to-image",
			Attempt: 1, State: batch.Claimed, Run: run, Worker: "atk"}, Kind: batch.KindCall, Stem: "j" + job}}
	}
	for i := range 3 {
		res, err := l.Claim(t.Context(), claim(i))
		require.NoError(t, err)
		require.True(t, res.Claimed)
	}
	end := func(i int, why string) {
		e := claim(i).Entry
		e.State, e.Error = batch.Failed, why
		require.NoError(t, l.Record(context.Background(), &e))
	}
	h := &hookLedger{Ledger: l, hook: func() { end(0, "first-ended"); end(2, "second-ended") }}
	dir := t.TempDir()
	out, err := batch.OpenFolder(dir)
	require.NoError(t, err)
	defer out.Close()
	require.NoError(t, batch.WriteIndex(t.Context(), h, out))
	page, err := os.ReadFile(filepath.Join(dir, batch.IndexFile))
	require.NoError(t, err)
	if p := string(page); strings.Contains(p, "second-ended") && !strings.Contains(p, "first-ended") {
		t.Fatal("the page shows the second end without the first, which was recorded before it")
	}
}
