package batchcmd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vbauerster/mpb/v8"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
	"github.com/creativegen/creative-go/creativetest"
)

// console is a command's stderr that tells when a line holding mark was
// written.
type console struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	mark string
	seen chan struct{}
	once sync.Once
}

func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.mark) {
		c.once.Do(func() { close(c.seen) })
	}
	return len(p), nil
}

func (c *console) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// failsAfterSignal is a ledger whose first claim sends Ctrl-C and waits
// until the run is stopping, and whose records fail from then on: a ledger
// that fails quickly during the grace.
type failsAfterSignal struct {
	batch.Ledger
	signals  chan<- os.Signal
	stopping <-chan struct{}
	failing  atomic.Bool
}

func (l *failsAfterSignal) Claim(ctx context.Context, c *batch.Claim) (batch.ClaimResult, error) {
	res, err := l.Ledger.Claim(ctx, c)
	if !l.failing.Swap(true) {
		l.signals <- os.Interrupt
		select {
		case <-l.stopping:
		case <-time.After(10 * time.Second):
		}
	}
	return res, err
}

func (l *failsAfterSignal) Record(ctx context.Context, e *batch.Entry) error {
	if l.failing.Load() {
		return errors.New("disk I/O error")
	}
	return l.Ledger.Record(ctx, e)
}

// A ledger that fails during the grace ends the run interrupted (exit
// status 130, as the help says), its error said first, not as a failure
// of the ledger alone (1).
func TestALedgerThatFailsDuringTheGraceEndsTheRunInterrupted(t *testing.T) {
	srv := creativetest.Start(t)
	signals := make(chan os.Signal, 2)
	con := &console{mark: "creative: batch: stopping", seen: make(chan struct{})}
	ledger := &failsAfterSignal{Ledger: ledgertest.NewMemory(), signals: signals, stopping: con.seen}
	was := openPostgres
	openPostgres = func(context.Context, string) (batch.Ledger, error) { return ledger, nil }
	t.Cleanup(func() { openPostgres = was })

	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(`{"op":"image/text-to-image","prompt":"owl"}`+"\n"), 0o644))
	var sending atomic.Bool
	cmd := New(func() Env {
		return Env{
			Stdout:       &bytes.Buffer{},
			Console:      con,
			GuardConsole: func(wrap func(w io.Writer) io.Writer) {},
			Getenv:       func(string) string { return "" },
			Signals:      signals,
			Sending:      &sending,
			Grace:        10 * time.Second,
			AtLineStart:  func() {},
			StartDisplay: func() (func(int64, func() string) *mpb.Bar, func()) {
				return func(int64, func() string) *mpb.Bar { return nil }, func() {}
			},
			StopBy: func(ctx context.Context) (context.Context, context.CancelFunc) { return context.WithCancel(ctx) },
			NewClient: func(extra ...creative.Option) (*creative.Client, func(), error) {
				return srv.Client(extra...), func() {}, nil
			},
		}
	})
	cmd.SetArgs([]string{jobs, "--out", filepath.Join(dir, "out"), "--ledger", "postgres://u:secret@ledger.invalid/db"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	start := time.Now()
	err := cmd.Execute()
	assert.Less(t, time.Since(start), 5*time.Second, "not held for the grace")
	require.ErrorIs(t, err, cmdutil.ErrInterrupted, "%v\n%s", err, con)
	assert.Contains(t, con.String(), "creative: batch: the ledger could not be written, so the run stopped: disk I/O error")
	assert.NotContains(t, con.String(), "secret")
	t.Logf("stderr:\n%s", con)
}
