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
	r, err := batch.New(f.c, f.ledger, f.store, o)
	require.NoError(t, err)
	sum, err := checkAndRun(r, batch.File(f.jobs))
	require.NoError(t, err)
	assert.Equal(t, 5, f.srv.Count("image/text-to-image"), "the server's count")
	assert.Equal(t, 5, sum.Done, "%+v", sum)
	assert.Equal(t, 15, sum.Refused+sum.NotStarted, "%+v", sum)
	require.ErrorIs(t, r.Spent(), batch.ErrBudgetSpent)
	assert.Contains(t, r.Spent().Error(), "the cap of 5 calls")
	b, err := batch.ReadBudget(context.Background(), f.ledger)
	require.NoError(t, err)
	assert.Equal(t, batch.BudgetStatus{Calls: 5, CallsLimit: 5}, b)

	f.srv.Reset()
	r, err = batch.New(f.c, f.ledger, f.store, o)
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
	b, err := batch.ReadBudget(context.Background(), f.ledger)
	require.NoError(t, err)
	assert.InDelta(t, spent, b.Spent, 1e-9)
	assert.InDelta(t, 0.5, b.SpendLimit, 1e-9)

	// A job of an operation with no price fails the check, before
	// anything is sent, under a cap on spending.
	f.srv.Reset()
	f.write(t, `{"op":"image/text-to-image","prompt":"priced"}`, `{"op":"image/generate-qr","url":"https://e.example","prompt":"qr"}`)
	r, err := batch.New(f.c, f.ledger, f.store, batch.Options{Base: filepath.Dir(f.jobs), Budget: batch.Budget{MaxSpend: 5, Prices: prices}})
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
	r, err := batch.New(f.c, f.ledger, f.store, batch.Options{Concurrency: 1, Base: filepath.Dir(f.jobs), Budget: batch.Budget{MaxCalls: 3}})
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
		_, err := batch.New(nil, nil, nil, batch.Options{Budget: b})
		assert.Error(t, err, "%+v", b)
	}
}

// A price counts in millionths rounded up, never less than it is; "*"
// prices the operations not named.
func TestPricesAreRoundedUpAndStarPricesTheRest(t *testing.T) {
	for _, tc := range []struct {
		price float64
		want  int64
	}{{0.0000014, 2}, {0.05, 50000}, {0.04, 40000}, {0.000001, 1}, {1e-9, 1}, {0, 0}, {12.3456789, 12345679}} {
		assert.Equal(t, tc.want, batch.Micros(tc.price), "%v", tc.price)
	}
	f := newFixture(t)
	f.write(t, `{"op":"image/text-to-image","prompt":"a"}`, `{"op":"image/generate-qr","url":"https://e.example","prompt":"qr"}`,
		`{"op":"image/generate-qr","url":"https://e.example","prompt":"qr2"}`)
	sum, err := f.run(t, batch.Options{Concurrency: 1, Budget: batch.Budget{MaxSpend: 0.1, Prices: map[string]float64{"image/text-to-image": 0.0000014, "*": 0.05}}})
	require.NoError(t, err)
	assert.Equal(t, 2, sum.Done, "0.000002 + 0.05, and no room for another 0.05: %+v", sum)
	b, err := batch.ReadBudget(context.Background(), f.ledger)
	require.NoError(t, err)
	assert.InDelta(t, 0.050002, b.Spent, 1e-12)
}
