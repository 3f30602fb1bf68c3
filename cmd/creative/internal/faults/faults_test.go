package faults

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creativegen/creative-go/creativetest"
)

// defaultSchedules is how many schedules TestFaults runs over each engine.
var defaultSchedules = 25

// TestFaults runs FAULTS_SCHEDULES schedules (default 25) over each
// engine, or the one of FAULTS_SEED.
func TestFaults(t *testing.T) {
	n := defaultSchedules
	if v, err := strconv.Atoi(os.Getenv("FAULTS_SCHEDULES")); err == nil {
		n = v
	}
	var seeds []uint64
	if v, err := strconv.ParseUint(os.Getenv("FAULTS_SEED"), 10, 64); err == nil {
		seeds = []uint64{v}
	} else {
		base := uint64(time.Now().UnixNano())
		for i := range n {
			seeds = append(seeds, base+uint64(i))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(engines)) {
		t.Run(name, func(t *testing.T) {
			ty := &tally{ledger: map[string]int{}, service: map[string]int{}, process: map[string]int{}, budget: map[string]int{}}
			start := time.Now()
			// The schedules run -test.parallel at a time (GOMAXPROCS): their
			// workers mostly wait.
			t.Run("schedules", func(t *testing.T) {
				for _, seed := range seeds {
					t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
						t.Parallel()
						runSchedule(t, engines[name], seed, ty)
					})
				}
			})
			t.Logf("%s: %d schedules in %v, %d jobs, %d paid calls, %d jobs paid twice (resent once their first worker was gone); ledger and output faults %v; service faults %v; process faults %v; budget %v; %d violations",
				name, ty.schedules, time.Since(start).Round(time.Second), ty.jobs, ty.paid, ty.twice, ty.ledger, ty.service, ty.process, ty.budget, ty.violations)
		})
	}
}

func runSchedule(t *testing.T, e engine, seed uint64, ty *tally) {
	dir := t.TempDir()
	fake := creativetest.NewServer(creativetest.WithLatency(time.Duration(20+seed%200) * time.Millisecond))
	defer fake.Close()
	s := &schedule{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 1)), engine: e, jobs: filepath.Join(dir, "jobs.jsonl"), fake: fake, front: &front{}, ty: ty}
	s.url = s.front.start(t, fake.URL)
	s.out = filepath.Join(dir, "out")
	s.ledger, s.env, s.engineStrike = e.ledger(t, dir)
	s.run()
	ty.mu.Lock()
	ty.schedules++
	ty.violations += len(s.errors)
	ty.mu.Unlock()
	if len(s.errors) > 0 {
		var b strings.Builder
		for _, p := range s.procs {
			fmt.Fprintf(&b, "  %s %+v killed=%v\n    %s\n", p.cfg.Name, p.cfg, !p.killed.IsZero(), strings.ReplaceAll(strings.TrimSpace(p.out.String()), "\n", "\n    "))
		}
		t.Errorf("schedule %s seed %d (replay: FAULTS_SEED=%d go test -run TestFaults/%s ./internal/faults/):\n%s\n%s",
			e.name, seed, seed, e.name, strings.Join(s.errors, "\n"), b.String())
	}
}
