package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/sqlitestore"
	"github.com/creativegen/creative-go/cmd/creative/internal/bucket"
	"github.com/creativegen/creative-go/cmd/creative/internal/cli"
)

// workerEnv holds a worker's config: set, the test binary runs as one.
const workerEnv = "FAULTS_WORKER"

// A config says how one worker process runs.
type config struct {
	Name         string
	Out          string // a folder, or an s3:// URL
	Jobs         string
	BaseURL, Key string
	Seed         uint64
	StoreFaults  bool // faults strike its store
	Resend       bool // Options.ResendUnknown
	OtherMachine bool // it sees no run's lock, nor shows its own, as on another machine
	Lease        time.Duration
	Concurrency  int
	Budget       batch.Budget // its cap, if any (see budget_test.go)
}

// A report is what a worker prints as it ends.
type report struct {
	Name       string
	Summary    batch.Summary
	Err        string
	Ledger     bool // the run ended with a *batch.LedgerError
	Unrecorded []batch.Record
	MaybePaid  []batch.Record
	Faults     map[string]int // store faults injected, by kind
	RunEnded   time.Time      // when Run returned, its lock let go
	Spent      string         // why the run stopped for its budget (Runner.Spent), if it did
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(workerEnv); cfg != "" {
		os.Exit(work(cfg))
	}
	if os.Getenv(cliEnv) != "" {
		os.Exit(cli.Main(&cli.Buckets{Open: bucket.OpenStore, OpenFS: bucket.OpenFS}))
	}
	os.Exit(m.Run())
}

// work runs one worker and prints its report on stdout.
func work(raw string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	var cfg config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	inner, err := openStore(ctx, cfg.Out)
	for try := 0; err != nil && try < 5; try++ {
		// versitygw refuses at times the probe objects of workers that
		// open one bucket at the same moment (409 on a folder it is
		// making): no fault of the harness's.
		time.Sleep(100 * time.Millisecond)
		inner, err = openStore(ctx, cfg.Out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer inner.Close()
	fs := &faultStore{Store: inner, rng: rand.New(rand.NewPCG(cfg.Seed, 7)), on: cfg.StoreFaults, lease: cfg.Lease, faults: map[string]int{}}
	fs.locks = defaultLocks()
	if f, ok := inner.(interface{ RunLockFolder() string }); ok {
		fs.locks = f.RunLockFolder()
	}
	if cfg.OtherMachine {
		fs.locks = ""
	}
	c, err := creative.New(creative.WithBaseURL(cfg.BaseURL), creative.WithAccessKey(cfg.Key),
		creative.WithRetryWait(10*time.Millisecond, 100*time.Millisecond), creative.WithTimeout(30*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	tag := creative.WithMiddleware(func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
		req.Header.Set("X-Faults-Worker", cfg.Name)
		return next(req)
	})
	r, err := batch.New(c, fs, batch.Options{Concurrency: cfg.Concurrency, Base: filepath.Dir(cfg.Jobs), ResendUnknown: cfg.Resend,
		Worker: cfg.Name, Lease: cfg.Lease, CallOptions: []creative.Option{tag}, Budget: cfg.Budget})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	checked, err := r.Check(ctx, batch.File(cfg.Jobs))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	go func() { <-term; r.Stop() }()
	sum, err := r.Run(ctx, checked)
	rep := report{Name: cfg.Name, Summary: sum, Faults: fs.counts(), RunEnded: time.Now()}
	if err != nil {
		rep.Err = err.Error()
	}
	if err := r.Spent(); err != nil {
		rep.Spent = err.Error()
	}
	if le, ok := errors.AsType[*batch.LedgerError](err); ok {
		rep.Ledger, rep.Unrecorded, rep.MaybePaid = true, le.Unrecorded, le.MaybePaid
	}
	_ = json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// openStore opens a folder or a bucket.
func openStore(ctx context.Context, out string) (batch.Store, error) {
	if filepath.IsAbs(out) {
		return sqlitestore.Open(out)
	}
	return bucket.OpenStore(ctx, out)
}

// defaultLocks is where batch keeps the runs' locks for a store that has
// no folder of its own.
func defaultLocks() string {
	return filepath.Join(os.TempDir(), "creative-batch-runs-"+strconv.Itoa(os.Getuid()))
}

// A faultStore strikes some of the operations of its Store, at random
// from its seed: a hang (past the lease, ignoring the deadline, as a PUT
// on a stalled connection), a slow write, a failure, a full disk.
type faultStore struct {
	batch.Store
	mu     sync.Mutex
	rng    *rand.Rand
	on     bool
	lease  time.Duration
	locks  string
	faults map[string]int
}

// RunLockFolder is where the worker's runs keep their locks, or "" as on
// another machine.
func (s *faultStore) RunLockFolder() string { return s.locks }

// ModTime tells the store's clock where the store has one.
func (s *faultStore) ModTime(ctx context.Context, key string) (time.Time, error) {
	if mt, ok := s.Store.(interface {
		ModTime(context.Context, string) (time.Time, error)
	}); ok {
		return mt.ModTime(ctx, key)
	}
	return time.Time{}, errors.New("faults: no modification times in this store")
}

func (s *faultStore) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}

// strike draws the fault of one write, if any, and suffers it.
func (s *faultStore) strike(ctx context.Context, key string) error {
	if !s.on {
		return nil
	}
	s.mu.Lock()
	p := s.rng.Float64()
	d := time.Duration(s.rng.Int64N(int64(s.lease)))
	var kind string
	switch {
	case p < 0.01:
		kind = "hang"
	case p < 0.04:
		kind = "slow"
	case p < 0.05:
		kind = "fail"
	case p < 0.055:
		kind = "full"
	}
	if kind != "" {
		s.faults[kind]++
	}
	s.mu.Unlock()
	switch kind {
	case "hang":
		time.Sleep(s.lease + d) // whatever ctx says
		return fmt.Errorf("faults: %s: hung: %w", key, context.DeadlineExceeded)
	case "slow":
		select {
		case <-time.After(d / 4):
		case <-ctx.Done():
			return ctx.Err()
		}
	case "fail":
		return fmt.Errorf("faults: %s: %w", key, syscall.EIO)
	case "full":
		return fmt.Errorf("faults: %s: %w", key, syscall.ENOSPC)
	}
	return nil
}

func (s *faultStore) Create(ctx context.Context, key string, data []byte) error {
	if err := s.strike(ctx, key); err != nil {
		return err
	}
	fault := s.shareFault(key)
	if fault == "late" {
		time.Sleep(s.lease + s.lease/4) // whatever ctx says
	}
	err := s.Store.Create(ctx, key, data)
	switch {
	case err != nil || fault == "":
		return err
	case fault == "lost":
		return fmt.Errorf("faults: %s: written, its answer lost: %w", key, syscall.EIO)
	case fault == "late":
		return fmt.Errorf("faults: %s: hung, then written: %w", key, context.DeadlineExceeded)
	}
	// Killed with the share taken, before the call it is for is sent.
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// shareFault draws the fault of the create of a share of the budget, if
// any: "lost", the share is made and its answer lost (a PUT that lands as
// its connection fails), so its taker is told it failed; "late", the
// same after a hang past the lease (if no other worker took the share
// meanwhile); "kill", the process is killed once the share is made.
func (s *faultStore) shareFault(key string) string {
	if !s.on || !strings.HasPrefix(key, "ledger/budget/") {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch p := s.rng.Float64(); {
	case p < 0.08:
		s.faults["share made, answer lost"]++
		return "lost"
	case p < 0.11:
		s.faults["share hung, then made"]++
		return "late"
	case p < 0.17:
		return "kill"
	}
	return ""
}

func (s *faultStore) Put(ctx context.Context, key string, data []byte) error {
	if err := s.strike(ctx, key); err != nil {
		return err
	}
	return s.Store.Put(ctx, key, data)
}

func (s *faultStore) NewWriter(ctx context.Context, key string, meta map[string]string) (io.WriteCloser, error) {
	if err := s.strike(ctx, key); err != nil {
		return nil, err
	}
	return s.Store.NewWriter(ctx, key, meta)
}

func (s *faultStore) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.strike(ctx, key); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	return s.Store.Get(ctx, key)
}
