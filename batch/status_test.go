package batch_test

import (
	"context"
	"errors"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

// localStore is a Store that does not say its reads are round trips.
type localStore struct{ batch.Store }

// A status of a bucket's large ledger lists its 16 parts at once, and says
// what one listing says: the same counts, and the jobs to review in the
// same order, that of their keys.
func TestAStatusListedInPartsSaysWhatOneListingSays(t *testing.T) {
	f := newFixture(t)
	var lines []string
	for i := range 60 {
		op := []string{"image/text-to-image", "audio/text-to-music", "image/generate-logo"}[i%3]
		lines = append(lines, `{"op":"`+op+`","prompt":"job `+string(rune('a'+i%26))+string(rune('a'+i/26))+`"}`)
	}
	f.write(t, lines...)
	f.srv.Fail("audio/text-to-music", creativetest.Fault{Times: 20, Status: 500}) // unknown: to review
	f.srv.Fail("image/generate-logo", creativetest.Fault{Times: 20, Status: 400}) // failed
	_, err := f.run(t, batch.Options{Concurrency: 4})
	require.NoError(t, err)

	read := func(s batch.Store) (batch.Status, []string) {
		var review []string
		st, err := batch.ReadStatus(context.Background(), s, func(r batch.Record) { review = append(review, r.Job) })
		require.NoError(t, err)
		return st, review
	}
	want, wantReview := read(localStore{f.store})
	assert.Equal(t, map[batch.State]int{batch.Done: 20, batch.Unknown: 20, batch.Failed: 20}, want.States)
	require.Len(t, wantReview, 20)
	assert.True(t, slices.IsSorted(wantReview), "in the order of the jobs' keys")

	store := &askCounter{Store: f.store, asked: map[string]int{}}
	got, gotReview := read(store)
	assert.Equal(t, want, got)
	assert.Equal(t, wantReview, gotReview)
	assert.Equal(t, 1, store.take()["List"], "a small ledger: one listing")

	defer batch.ListLedgerInParts()()
	got, gotReview = read(store)
	assert.Equal(t, want, got)
	assert.Equal(t, wantReview, gotReview)
	assert.Equal(t, 31, store.take()["List"], "the ledger, cut after its first part, and the other 15, part b in its 16 groups")

	// Whatever the first part says, the status is the same: the listing
	// is cut at the end of the first part or not at all.
	for n := 16; n <= 16*200; n += 16 {
		restore := batch.ListStatusInPartsFrom(n)
		got, gotReview = read(store)
		restore()
		require.Equal(t, want, got, "from %d keys", n)
		require.Equal(t, wantReview, gotReview, "from %d keys", n)
		lists := store.take()["List"]
		require.True(t, lists == 1 || lists == 31, "from %d keys: %d listings", n, lists)
	}
}

// failingPart is a remote Store whose listing of one part of the ledger
// fails after its first key.
type failingPart struct {
	batch.Store
	prefix string
}

func (s *failingPart) Remote() bool { return true }

func (s *failingPart) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for k, err := range s.Store.List(ctx, prefix) {
			if err == nil && strings.HasPrefix(k, s.prefix) {
				yield("", errPartListing)
				return
			}
			if !yield(k, err) {
				return
			}
		}
	}
}

var errPartListing = errors.New("the listing broke")

// A part whose listing fails fails the status, whichever part it is, and
// no part is left waiting.
func TestAStatusWhosePartFailsSaysSo(t *testing.T) {
	defer batch.ListLedgerInParts()()
	f := newFixture(t)
	f.write(t, imageJobs(40)...)
	_, err := f.run(t, batch.Options{Concurrency: 4})
	require.NoError(t, err)
	for _, part := range []string{"ledger/0", "ledger/7", "ledger/f"} {
		_, err := batch.ReadStatus(context.Background(), &failingPart{f.store, part}, func(batch.Record) {})
		assert.ErrorIs(t, err, errPartListing, part)
	}
}

// budgetWatch is a remote Store that counts the shares of the budget its
// listings of the ledger yield (a Store that cannot list a folder alone
// has its outputs listed with everything else).
type budgetWatch struct {
	batch.Store
	shares int
}

func (s *budgetWatch) Remote() bool { return true }

func (s *budgetWatch) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for k, err := range s.Store.List(ctx, prefix) {
			if prefix != "" && strings.HasPrefix(k, "ledger/budget/") {
				s.shares++
			}
			if !yield(k, err) {
				return
			}
		}
	}
}

// A ledger listed in parts leaves the budget's shares out, however many:
// part b lists its groups of folders, not ledger/budget/.
func TestAListingInPartsLeavesTheBudgetOut(t *testing.T) {
	defer batch.ListLedgerInParts()()
	f := newFixture(t)
	f.write(t, imageJobs(40)...)
	_, err := f.run(t, batch.Options{Concurrency: 4, Budget: batch.Budget{MaxCalls: 100}})
	require.NoError(t, err)
	store := &budgetWatch{Store: f.store}
	st, err := batch.ReadStatus(context.Background(), store, nil)
	require.NoError(t, err)
	assert.Equal(t, 40, st.States[batch.Done])
	assert.Zero(t, store.shares, "shares listed by the status")

	r, err := batch.New(f.c, store, batch.Options{Concurrency: 4, Base: filepath.Dir(f.jobs)})
	require.NoError(t, err)
	sum, err := checkAndRun(r, batch.File(f.jobs))
	require.NoError(t, err)
	assert.Equal(t, 40, sum.DoneBefore, "%+v", sum)
	assert.Zero(t, store.shares, "shares listed by the rerun")
}
