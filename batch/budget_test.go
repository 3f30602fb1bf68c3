package batch_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

// A cap of 5 calls over 20 jobs: exactly 5 reach the server, the run stops
// claiming and says why, and a new run on the spent budget sends nothing.
func TestACapOfCallsIsNeverExceededAndASpentBudgetSendsNothing(t *testing.T) {
	f := newFixture(t)
	f.write(t, imageJobs(20)...)
	o := batch.Options{Concurrency: 4, Base: filepath.Dir(f.jobs), Budget: batch.Budget{MaxCalls: 5}}
	r, err := batch.New(f.c, f.store, o)
	require.NoError(t, err)
	sum, err := checkAndRun(r, batch.File(f.jobs))
	require.NoError(t, err)
	assert.Equal(t, 5, f.srv.Count("image/text-to-image"), "the server's count")
	assert.Equal(t, 5, sum.Done, "%+v", sum)
	assert.Equal(t, 15, sum.Refused+sum.NotStarted, "%+v", sum)
	require.ErrorIs(t, r.Spent(), batch.ErrBudgetSpent)
	assert.Contains(t, r.Spent().Error(), "5 of 5 calls taken")
	b, err := batch.ReadBudget(context.Background(), f.store)
	require.NoError(t, err)
	assert.Equal(t, batch.BudgetStatus{Calls: 5, CallsLimit: 5}, b)

	f.srv.Reset()
	r, err = batch.New(f.c, f.store, o)
	require.NoError(t, err)
	sum, err = checkAndRun(r, batch.File(f.jobs))
	require.NoError(t, err)
	assert.Zero(t, f.srv.Count("image/text-to-image"), "a run on a spent budget sent calls")
	assert.Zero(t, sum.Done)
	require.ErrorIs(t, r.Spent(), batch.ErrBudgetSpent)

	// A larger cap lets the rest through, once each.
	o.MaxCalls = 20
	sum, err = f.run(t, o)
	require.NoError(t, err)
	assert.Equal(t, 15, f.srv.Count("image/text-to-image"))
	assert.Equal(t, 15, sum.Done, "%+v", sum)
	assert.Equal(t, 5, sum.DoneBefore, "%+v", sum)
}

// A cap on spending with a price table of two operations: what reached the
// server, priced, never exceeds the cap, and a run on one worker leaves
// less than the dearest call of it unspent.
func TestACapOnSpendingPricesEachOperation(t *testing.T) {
	f := newFixture(t)
	var lines []string
	for i := range 12 {
		lines = append(lines, fmt.Sprintf(`{"op":"image/text-to-image","prompt":"image %d"}`, i),
			fmt.Sprintf(`{"op":"audio/text-to-speech","prompt":"speech %d","voiceId":"female 1"}`, i))
	}
	f.write(t, lines...)
	prices := map[string]float64{"image/text-to-image": 0.04, "audio/text-to-speech": 0.015}
	sum, err := f.run(t, batch.Options{Concurrency: 1, Budget: batch.Budget{MaxSpend: 0.5, Prices: prices}})
	require.NoError(t, err)
	images, speech := f.srv.Count("image/text-to-image"), f.srv.Count("audio/text-to-speech")
	spent := float64(images)*0.04 + float64(speech)*0.015
	t.Logf("%d images and %d speeches: %.3f of 0.5; %+v", images, speech, spent, sum)
	assert.LessOrEqual(t, spent, 0.5+1e-9)
	assert.Greater(t, spent, 0.5-0.04)
	assert.Equal(t, images+speech, sum.Done)
	b, err := batch.ReadBudget(context.Background(), f.store)
	require.NoError(t, err)
	assert.InDelta(t, spent, b.Spent, 1e-9)
	assert.InDelta(t, 0.5, b.SpendLimit, 1e-9)

	// A job of an operation with no price fails the check, before
	// anything is sent, under a cap on spending.
	f.srv.Reset()
	f.write(t, `{"op":"image/text-to-image","prompt":"priced"}`, `{"op":"image/generate-qr","url":"https://e.example","prompt":"qr"}`)
	r, err := batch.New(f.c, f.store, batch.Options{Base: filepath.Dir(f.jobs), Budget: batch.Budget{MaxSpend: 5, Prices: prices}})
	require.NoError(t, err)
	_, err = r.Check(context.Background(), batch.File(f.jobs))
	var ce *batch.CheckError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Lines, 1, "%v", err)
	assert.Equal(t, 2, ce.Lines[0].Line)
	assert.Equal(t, "op", ce.Lines[0].Field)
	assert.Contains(t, ce.Lines[0].Error(), "no price was given for image/generate-qr")
	assert.Empty(t, f.srv.Requests())
}

// A retry after a 429 reuses its share (the service did nothing); every
// attempt whose outcome may be paid takes one.
func TestARefusedAttemptKeepsItsShare(t *testing.T) {
	f := newFixture(t)
	f.srv.Fail("image/text-to-image", creativetest.Fault{Times: 2, Status: 429, RetryAfter: "0"})
	f.write(t, imageJobs(3)...)
	r, err := batch.New(f.c, f.store, batch.Options{Concurrency: 1, Base: filepath.Dir(f.jobs), Budget: batch.Budget{MaxCalls: 3}})
	require.NoError(t, err)
	sum, err := checkAndRun(r, batch.File(f.jobs))
	require.NoError(t, err)
	assert.Equal(t, 3, sum.Done, "%+v", sum)
	assert.NoError(t, r.Spent())
	assert.Equal(t, 5, f.srv.Count("image/text-to-image"), "two refused, three answered")
}

func TestABudgetIsChecked(t *testing.T) {
	for _, b := range []batch.Budget{
		{MaxCalls: -1},
		{MaxSpend: -1},
		{MaxSpend: 1},
		{MaxSpend: 1, Prices: map[string]float64{"image/no-such-thing": 1}},
		{MaxSpend: 1, Prices: map[string]float64{"image/text-to-image": -0.5}},
	} {
		_, err := batch.New(nil, nil, batch.Options{Budget: b})
		assert.Error(t, err, "%+v", b)
	}
}

// What was taken of a budget is read from the cap's hint and the few
// shares taken since, not from a listing of every share; a hint left far
// behind, or none, still reads the same.
func TestABudgetIsReadFromItsHint(t *testing.T) {
	f := newFixture(t)
	f.write(t, imageJobs(300)...)
	sum, err := f.run(t, batch.Options{Concurrency: 4, Budget: batch.Budget{MaxCalls: 290}})
	require.NoError(t, err)
	require.Equal(t, 290, sum.Done, "%+v", sum)
	want := batch.BudgetStatus{Calls: 290, CallsLimit: 290}
	ctx := context.Background()
	store := &askCounter{Store: f.store, asked: map[string]int{}}
	b, err := batch.ReadBudget(ctx, store)
	require.NoError(t, err)
	assert.Equal(t, want, b)
	asked := store.take()
	assert.Equal(t, 1, asked["List"], "only of the cap on spending, which has no hint: %v", asked)
	assert.LessOrEqual(t, asked["Get"], 2+16, "the hints, and the shares since: %v", asked)

	for _, tc := range []struct {
		name string
		hint string // "": none
	}{
		{"a hint left behind", `{"end":100,"limit":290}`},
		{"a hint further behind than a walk", `{"end":0,"limit":290}`},
		{"a hint that does not parse", `{`},
		{"no hint", ""},
	} {
		if tc.hint == "" {
			require.NoError(t, f.store.Delete(ctx, "ledger/budget/calls.hint.json"))
		} else {
			require.NoError(t, f.store.Put(ctx, "ledger/budget/calls.hint.json", []byte(tc.hint)))
		}
		b, err := batch.ReadBudget(ctx, f.store)
		require.NoError(t, err)
		assert.Equal(t, want, b, tc.name)
	}

	// A run on the spent budget learns so from it, and sends nothing.
	f.srv.Reset()
	sum, err = f.run(t, batch.Options{Concurrency: 4, Budget: batch.Budget{MaxCalls: 290}})
	require.NoError(t, err)
	assert.Zero(t, f.srv.Count("image/text-to-image"), "%+v", sum)
}
