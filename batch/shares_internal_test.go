package batch

import (
	"context"
	"fmt"
	"io"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memStore is a Store in memory for the tests of this package, which
// cannot import storetest's; it counts the reads and listings it is asked.
type memStore struct {
	mu          sync.Mutex
	m           map[string][]byte
	gets, lists int
}

func newMem() *memStore { return &memStore{m: map[string][]byte{}} }

func (s *memStore) Create(_ context.Context, k string, d []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[k]; ok {
		return fmt.Errorf("mem: %s: %w", k, ErrExist)
	}
	s.m[k] = slices.Clone(d)
	return nil
}

func (s *memStore) Put(_ context.Context, k string, d []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k] = slices.Clone(d)
	return nil
}

func (s *memStore) Get(_ context.Context, k string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	b, ok := s.m[k]
	if !ok {
		return nil, fmt.Errorf("mem: %s: %w", k, ErrNotExist)
	}
	return slices.Clone(b), nil
}

func (s *memStore) List(_ context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		s.mu.Lock()
		s.lists++
		var keys []string
		for k := range s.m {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		s.mu.Unlock()
		slices.Sort(keys)
		for _, k := range keys {
			if !yield(k, nil) {
				return
			}
		}
	}
}

func (s *memStore) NewWriter(context.Context, string, map[string]string) (io.WriteCloser, error) {
	return nil, fmt.Errorf("mem: no files")
}

func (s *memStore) Exists(_ context.Context, k string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[k]
	return ok, nil
}

func (s *memStore) Delete(_ context.Context, k string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, k)
	return nil
}

func (s *memStore) Close() error { return nil }

func (s *memStore) asked() (gets, lists int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gets, lists, s.gets, s.lists = s.gets, s.lists, 0, 0
	return gets, lists
}

// A store whose hints are lost or land late: some writes of a hint are
// dropped (a kill between a share and its hint), others held back and
// written later, over newer ones.
type lateHints struct {
	*memStore
	hmu  sync.Mutex
	r    *rand.Rand
	held [][2]string
}

func (s *lateHints) Put(ctx context.Context, k string, d []byte) error {
	if !strings.HasSuffix(k, ".hint.json") {
		return s.memStore.Put(ctx, k, d)
	}
	s.hmu.Lock()
	defer s.hmu.Unlock()
	switch s.r.IntN(3) {
	case 0:
		return nil
	case 1:
		s.held = append(s.held, [2]string{k, string(d)})
		return nil
	}
	_ = s.memStore.Put(ctx, k, d)
	if len(s.held) > 0 && s.r.IntN(2) == 0 {
		i := s.r.IntN(len(s.held))
		_ = s.memStore.Put(ctx, s.held[i][0], []byte(s.held[i][1]))
		s.held = slices.Delete(s.held, i, i+1)
	}
	return nil
}

// chainOf walks the listing of a cap's shares: it fails the test unless
// each starts where the one before it ends, within the limit it gave, and
// returns where the chain ends.
func chainOf(t *testing.T, s Store, what string) int64 {
	t.Helper()
	var pos int64
	for k, err := range s.List(context.Background(), budgetPrefix+what+"/") {
		require.NoError(t, err)
		p, err := strconv.ParseInt(strings.TrimSuffix(k[strings.LastIndex(k, "/")+1:], ".json"), 10, 64)
		require.NoError(t, err)
		require.Equal(t, pos, p, "%s: a share off the chain", k)
		sh, err := readShare(context.Background(), s, k)
		require.NoError(t, err)
		require.LessOrEqual(t, p+sh.Size, sh.Limit, "%s: past its limit", k)
		pos = p + sh.Size
	}
	return pos
}

// Workers with their own prices and caps take shares at once, are killed
// (no hint at their end) or end (their hints written), their hints lost or
// landing late and out of order: the chain has no gap and no overlap, no
// share passes its limit, and the hint's way to the last share says what
// the listing says. Each seed is a case, the same on every run.
func TestTheShareChainHoldsUnderRacesKillsAndLostHints(t *testing.T) {
	ops := []string{"image/text-to-image", "audio/text-to-music", "image/generate-logo"}
	for seed := range uint64(24) {
		ctx := context.Background()
		s := &lateHints{memStore: newMem(), r: rand.New(rand.NewPCG(seed, 1))}
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(seed, uint64(w)+100))
				for range 4 {
					sp, err := newSpender(s, Budget{MaxCalls: 50 + r.IntN(300), MaxSpend: 1 + float64(r.IntN(3)),
						Prices: map[string]float64{ops[0]: 0.01 * float64(1+r.IntN(5)), ops[1]: 0.003 * float64(1+r.IntN(7)), ops[2]: 0}})
					if err != nil {
						panic(err)
					}
					for range r.IntN(80) {
						if sp.take(ctx, ops[r.IntN(3)]) != nil {
							break
						}
						if r.IntN(10) == 0 {
							if _, err := ReadBudget(ctx, s); err != nil {
								panic(err)
							}
						}
					}
					if r.IntN(2) == 0 {
						sp.finish(ctx) // it ended; else it was killed
					}
				}
			})
		}
		wg.Wait()
		for _, what := range []string{"calls", "spend"} {
			end := chainOf(t, s, what)
			fromHint, _, err := lastShare(ctx, s, what)
			require.NoError(t, err)
			listed, _, err := listLastShare(ctx, s, what)
			require.NoError(t, err)
			require.Equal(t, listed, fromHint, "seed %d, %s", seed, what)
			require.Equal(t, end, fromHint.end, "seed %d, %s", seed, what)
		}
	}
}

// A hint that is corrupt, hostile or names no share of the chain is not
// believed: what was taken is never read as less than the chain says, and
// no take passes the cap.
func TestAHintThatLiesIsNotBelieved(t *testing.T) {
	const limit = 10
	for _, tc := range []struct {
		name string
		hint string
	}{
		{"an end at the top of int64", fmt.Sprintf(`{"start":0,"end":%d,"limit":%d}`, int64(math.MaxInt64), limit)},
		{"an end past its limit", `{"start":3,"end":20,"limit":10}`},
		{"a start below 0", `{"start":-1,"end":4,"limit":10}`},
		{"an end before its start", `{"start":4,"end":3,"limit":10}`},
		{"a share of another size", `{"start":2,"end":4,"limit":10}`},
		{"a share that is not there", `{"start":5,"end":6,"limit":10}`},
		{"a share behind the chain's start", `{"start":0,"end":1,"limit":10}`},
		{"not JSON", `{`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := newMem()
			sp, err := newSpender(s, Budget{MaxCalls: limit})
			require.NoError(t, err)
			for range 4 { // 4 shares: 0 to 4
				require.NoError(t, sp.take(ctx, "image/text-to-image"))
			}
			require.NoError(t, s.Put(ctx, hintKey("calls"), []byte(tc.hint)))
			if tc.name == "a share behind the chain's start" {
				// The shares were removed and taken again from 0 by a
				// version that reads no hint: the hint names a share that
				// is there, but the chain went on past it.
				require.Equal(t, int64(4), chainOf(t, s, "calls"))
			}
			last, _, err := lastShare(ctx, s, "calls")
			require.NoError(t, err)
			assert.Equal(t, int64(4), last.end, "what was taken")

			sp, err = newSpender(s, Budget{MaxCalls: limit})
			require.NoError(t, err)
			sent := 0
			for range 100 {
				if sp.take(ctx, "image/text-to-image") != nil {
					break
				}
				sent++
			}
			assert.Equal(t, limit-4, sent, "calls let through")
			assert.Equal(t, int64(limit), chainOf(t, s, "calls"))
		})
	}
}

// Runs that each take fewer shares than hintEvery write their hint when
// they end: a status or the next run's start reads the hint and the share
// it names, not a walk or a listing.
func TestShortRunsLeaveTheirHintAtTheirEnd(t *testing.T) {
	ctx := context.Background()
	s := newMem()
	for range 100 {
		sp, err := newSpender(s, Budget{MaxCalls: 100000})
		require.NoError(t, err)
		for range 10 {
			require.NoError(t, sp.take(ctx, "image/text-to-image"))
		}
		sp.finish(ctx)
	}
	s.asked()
	b, err := ReadBudget(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, int64(1000), b.Calls)
	gets, lists := s.asked()
	assert.Equal(t, 1, lists, "only of the cap on spending, which has no hint")
	assert.LessOrEqual(t, gets, 4, "the hints, the share named, and the end of the chain")
}

// A price or a cap on spending that an int64 of millionths cannot count,
// or a price above the cap, is refused; a price too small to count is
// counted as one millionth, never as free.
func TestPricesAreCountedOrRefused(t *testing.T) {
	for _, tc := range []struct {
		price, maxSpend float64
		refused         bool
	}{
		{1e13, 5, true},
		{1e300, 5, true},
		{math.Inf(1), 5, true},
		{math.NaN(), 5, true},
		{-1, 5, true},
		{6, 5, true},
		{1, 1e13, true},
		{4e-7, 5, false},
		{0, 5, false},
	} {
		name := fmt.Sprintf("price %v under %v", tc.price, tc.maxSpend)
		sp, err := newSpender(newMem(), Budget{MaxSpend: tc.maxSpend, Prices: map[string]float64{"image/text-to-image": tc.price}})
		if tc.refused {
			assert.Error(t, err, name)
			continue
		}
		require.NoError(t, err, name)
		if tc.price > 0 {
			assert.Equal(t, int64(1), sp.prices["image/text-to-image"], name)
		}
	}
}

// A share that does not parse counts as the whole budget, even at the top
// of the positions: nothing more is taken after it.
func TestAShareThatDoesNotParseSpendsTheBudget(t *testing.T) {
	ctx := context.Background()
	s := newMem()
	require.NoError(t, s.Create(ctx, shareKey("calls", 0), []byte(`{`)))
	sp, err := newSpender(s, Budget{MaxCalls: 10})
	require.NoError(t, err)
	require.ErrorIs(t, sp.take(ctx, "image/text-to-image"), ErrBudgetSpent)
	b, _ := json.Marshal(share{Size: 1, Limit: 10})
	require.NoError(t, s.Create(ctx, shareKey("calls", math.MaxInt64/2), b))
	last, _, err := lastShare(ctx, s, "calls")
	require.NoError(t, err)
	assert.Greater(t, last.end, int64(10))
}
