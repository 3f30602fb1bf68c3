package faults

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/sqliteledger"
	"github.com/creativegen/creative-go/cmd/creative/internal/bucket"
	"github.com/creativegen/creative-go/cmd/creative/internal/cli"
)

// workerEnv holds a worker's config: set, the test binary runs as one.
const workerEnv = "FAULTS_WORKER"

// An engine is the database a schedule's workers keep their ledger in:
// the harness's one parameter of the ledger.
type engine struct {
	name string
	// ledger makes the ledger of a schedule whose files are in dir, and
	// returns its --ledger, what the workers' environment needs, and, for
	// an engine with faults of its own (netFaults), what deals one.
	ledger func(t *testing.T, dir string) (ledger string, env []string, strike func(fault string, d time.Duration))
	// netFaults are the faults of the engine's network and server, by
	// name, that a schedule draws besides the workers' own.
	netFaults []string
	// open opens the ledger named ledger, in a worker or for the checks.
	open func(ctx context.Context, ledger string) (engineLedger, error)
	// exact says that a live process is never taken for gone, however
	// long it is stopped (one machine, flock); otherwise a process stopped
	// past its lease may be.
	exact bool
}

// An engineLedger is a Ledger whose tables the checks read.
type engineLedger interface {
	batch.Ledger
	DB() *sql.DB
}

// engines are the engines the harness runs over, by name.
var engines = map[string]engine{
	"sqlite": {
		name: "sqlite",
		ledger: func(_ *testing.T, dir string) (string, []string, func(string, time.Duration)) {
			return filepath.Join(dir, "out"), nil, nil
		},
		open:  func(_ context.Context, ledger string) (engineLedger, error) { return sqliteledger.Open(ledger) },
		exact: true,
	},
}

// A config says how one worker process runs.
type config struct {
	Name         string
	Engine       string
	Out, Ledger  string // the outputs' folder and the ledger
	Jobs         string
	BaseURL, Key string
	Seed         uint64
	LedgerFaults bool // faults strike its ledger and its outputs
	Resend       bool // Options.ResendUnknown
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
	Faults     map[string]int // ledger and output faults injected, by kind
	RunEnded   time.Time      // when Run returned, its session ended
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
	inner, err := engines[cfg.Engine].open(ctx, cfg.Ledger)
	if err != nil {
		// A ledger that cannot be opened (its server cut off or
		// restarting) stops the run before it sends anything.
		_ = json.NewEncoder(os.Stdout).Encode(report{Name: cfg.Name, Err: err.Error(), Ledger: true, RunEnded: time.Now()})
		return 0
	}
	defer inner.Close()
	out, err := batch.OpenFolder(cfg.Out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer out.Close()
	f := &faults{rng: rand.New(rand.NewPCG(cfg.Seed, 7)), on: cfg.LedgerFaults, lease: cfg.Lease, counts: map[string]int{}}
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
	r, err := batch.New(c, &faultLedger{Ledger: inner, f: f}, &faultStore{Store: out, f: f}, batch.Options{Concurrency: cfg.Concurrency,
		Base: filepath.Dir(cfg.Jobs), ResendUnknown: cfg.Resend, Worker: cfg.Name, Lease: cfg.Lease, CallOptions: []creative.Option{tag}, Budget: cfg.Budget})
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
	rep := report{Name: cfg.Name, Summary: sum, Faults: f.snapshot(), RunEnded: time.Now()}
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

// faults draws, from a worker's seed, the faults that strike its ledger
// and its outputs, and counts them.
type faults struct {
	mu     sync.Mutex
	rng    *rand.Rand
	on     bool
	lease  time.Duration
	counts map[string]int
}

func (f *faults) snapshot() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts
}

// draw draws the fault of one operation: "" for none, else one of kinds,
// each with its probability.
func (f *faults) draw(kinds ...struct {
	name string
	p    float64
}) (string, time.Duration) {
	if !f.on {
		return "", 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, d := f.rng.Float64(), time.Duration(f.rng.Int64N(int64(f.lease)))
	for _, k := range kinds {
		if p < k.p {
			f.counts[k.name]++
			return k.name, d
		}
		p -= k.p
	}
	return "", d
}

type kind = struct {
	name string
	p    float64
}

// A faultLedger strikes the writes of its Ledger: one that fails before
// it lands, one that lands and whose answer is lost, one that is slow,
// one that hangs past the lease whatever its deadline, and a kill of the
// process once a claim took its share of the budget, before its call is
// sent; and heartbeats that fail or hang.
type faultLedger struct {
	batch.Ledger
	f *faults
}

var writeFaults = []kind{{"ledger write failed", 0.02}, {"ledger write landed, answer lost", 0.03}, {"ledger write slow", 0.05}, {"ledger write hung", 0.005}}

// write runs op under the fault drawn for it.
func (l *faultLedger) write(ctx context.Context, op func() error) error {
	k, d := l.f.draw(writeFaults...)
	switch k {
	case "ledger write failed":
		return fmt.Errorf("faults: %w", syscall.EIO)
	case "ledger write slow":
		select {
		case <-time.After(d / 4):
		case <-ctx.Done():
			return ctx.Err()
		}
	case "ledger write hung":
		time.Sleep(l.f.lease + d) // whatever ctx says
		return fmt.Errorf("faults: hung: %w", context.DeadlineExceeded)
	}
	err := op()
	if err == nil && k == "ledger write landed, answer lost" {
		return fmt.Errorf("faults: written, its answer lost: %w", syscall.EIO)
	}
	return err
}

func (l *faultLedger) Claim(ctx context.Context, c *batch.Claim) (batch.ClaimResult, error) {
	var res batch.ClaimResult
	err := l.write(ctx, func() error {
		var err error
		res, err = l.Ledger.Claim(ctx, c)
		return err
	})
	if err == nil && res.Claimed && c.Share.Calls > 0 && (c.Share.MaxCalls > 0 || c.Share.MaxSpend > 0) {
		if k, _ := l.f.draw(kind{"SIGKILL once a claim took its share", 0.06}); k != "" {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	return res, err
}

func (l *faultLedger) Record(ctx context.Context, a *batch.Entry) error {
	return l.write(ctx, func() error { return l.Ledger.Record(ctx, a) })
}

func (l *faultLedger) Take(ctx context.Context, run string, s batch.Share) error {
	return l.write(ctx, func() error { return l.Ledger.Take(ctx, run, s) })
}

func (l *faultLedger) Begin(ctx context.Context, run batch.RunInfo) (batch.Session, error) {
	s, err := l.Ledger.Begin(ctx, run)
	if err != nil {
		return nil, err
	}
	return &faultSession{Session: s, f: l.f}, nil
}

// A faultSession strikes heartbeats: one fails, one hangs past the lease.
type faultSession struct {
	batch.Session
	f *faults
}

func (s *faultSession) Beat(ctx context.Context) error {
	switch k, d := s.f.draw(kind{"heartbeat failed", 0.03}, kind{"heartbeat hung", 0.01}); k {
	case "heartbeat failed":
		return fmt.Errorf("faults: %w", syscall.EIO)
	case "heartbeat hung":
		time.Sleep(s.f.lease + d) // whatever ctx says
		return fmt.Errorf("faults: hung: %w", context.DeadlineExceeded)
	}
	return s.Session.Beat(ctx)
}

// A faultStore strikes the outputs: a write that fails, or meets a full
// disk.
type faultStore struct {
	batch.Store
	f *faults
}

func (s *faultStore) NewWriter(ctx context.Context, key string, meta map[string]string) (io.WriteCloser, error) {
	switch k, _ := s.f.draw(kind{"output failed", 0.01}, kind{"output on a full disk", 0.005}); k {
	case "output failed":
		return nil, fmt.Errorf("faults: %s: %w", key, syscall.EIO)
	case "output on a full disk":
		return nil, fmt.Errorf("faults: %s: %w", key, syscall.ENOSPC)
	}
	return s.Store.NewWriter(ctx, key, meta)
}
