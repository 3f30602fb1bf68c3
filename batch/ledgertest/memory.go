package ledgertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/creativegen/creative-go/batch"
)

// A Memory is a batch.Ledger in the memory of one process, for tests of
// programs that run batches: it keeps the rules as the engines do, under
// one lock, and nothing in it is durable. A run is live until it ends,
// or until Kill.
type Memory struct {
	mu    sync.Mutex
	jobs  map[string][]batch.Entry // every attempt of each job, in order
	runs  map[string]*memRun
	spent map[string]int64
	lim   map[string]int64
}

type memRun struct{ ended, gone bool }

// NewMemory returns an empty Memory.
func NewMemory() *Memory {
	return &Memory{jobs: map[string][]batch.Entry{}, runs: map[string]*memRun{}, spent: map[string]int64{}, lim: map[string]int64{}}
}

var _ batch.Ledger = (*Memory)(nil)

// Kill takes the run with token for gone, as an engine does once its
// process died.
func (m *Memory) Kill(token string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.runs[token]; r != nil {
		r.gone = true
	}
}

// Begin records the run.
func (m *Memory) Begin(_ context.Context, run batch.RunInfo) (batch.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs[run.Token] = &memRun{}
	return &memSession{m: m, token: run.Token}, nil
}

type memSession struct {
	m     *Memory
	token string
}

func (s *memSession) Beat(context.Context) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if !s.m.liveRun(s.token) {
		return batch.ErrLeaseLost
	}
	return nil
}

func (s *memSession) Lost() <-chan struct{} { return nil }

func (s *memSession) End(context.Context) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.runs[s.token].ended = true
	return nil
}

func (m *Memory) liveRun(token string) bool {
	r := m.runs[token]
	return r != nil && !r.ended && !r.gone
}

// last is the job's last attempt, a copy, and whether it is live.
func (m *Memory) last(job string) (*batch.Entry, bool) {
	as := m.jobs[job]
	if len(as) == 0 {
		return nil, false
	}
	e := copyEntry(as[len(as)-1])
	return &e, (e.State == batch.Claimed || e.State == batch.Answered && !e.Lost && e.Error == "") && m.liveRun(e.Run)
}

func copyEntry(e batch.Entry) batch.Entry {
	e.Fields = maps.Clone(e.Fields)
	e.URLs, e.Files = slices.Clone(e.URLs), slices.Clone(e.Files)
	return e
}

// Claim applies c.Allowed under the lock.
func (m *Memory) Claim(_ context.Context, c *batch.Claim) (batch.ClaimResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last, live := m.last(c.Job)
	if last != nil && last.Attempt == c.Attempt && last.Run == c.Run {
		return batch.ClaimResult{Claimed: true}, nil
	}
	if !c.Allowed(last, live) {
		return batch.ClaimResult{Last: last, Live: live}, nil
	}
	if !m.liveRun(c.Run) {
		return batch.ClaimResult{}, batch.ErrLeaseLost
	}
	if c.Kind == batch.KindCall {
		if err := m.spend(c.Share); err != nil {
			return batch.ClaimResult{}, err
		}
	}
	if last != nil && last.State == batch.Claimed {
		m.runs[last.Run].gone = true
	}
	e := copyEntry(c.Entry)
	e.State, e.Time = batch.Claimed, time.Now().UTC()
	m.jobs[c.Job] = append(m.jobs[c.Job], e)
	return batch.ClaimResult{Claimed: true}, nil
}

func (m *Memory) spend(s batch.Share) error {
	type cap struct {
		name        string
		amount, max int64
	}
	caps := []cap{{"calls", s.Calls, s.MaxCalls}, {"spend", s.Spend, s.MaxSpend}}
	for _, c := range caps {
		if c.max > 0 && c.amount > 0 && m.spent[c.name]+c.amount > c.max {
			return fmt.Errorf("%w: a call would pass the cap of %d %s", batch.ErrBudgetSpent, c.max, c.name)
		}
	}
	for _, c := range caps {
		if c.max > 0 && c.amount > 0 {
			m.spent[c.name] += c.amount
			m.lim[c.name] = c.max
		}
	}
	return nil
}

// Take takes a share of the budget.
func (m *Memory) Take(_ context.Context, _ string, s batch.Share) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.spend(s)
}

// Record writes a stage of an attempt, fenced.
func (m *Memory) Record(_ context.Context, a *batch.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	as := m.jobs[a.Job]
	if a.Attempt < 1 || a.Attempt > len(as) || as[a.Attempt-1].Run != a.Run {
		return batch.ErrFenced
	}
	old := &as[a.Attempt-1]
	switch {
	case old.State == a.State && old.Lost == a.Lost && old.Error == a.Error:
		return nil
	case a.Attempt != len(as) || !m.liveRun(a.Run) || old.State != batch.Claimed && old.State != batch.Answered:
		return batch.ErrFenced
	}
	e := copyEntry(*a)
	e.Kind, e.Stem, e.Fields, e.ID, e.Line, e.Op, e.Worker = old.Kind, old.Stem, old.Fields, old.ID, old.Line, old.Op, old.Worker
	e.Time = time.Now().UTC()
	*old = e
	return nil
}

// Last returns the last attempts of jobs.
func (m *Memory) Last(_ context.Context, jobs []string) ([]batch.Last, error) {
	if len(jobs) > batch.MaxLast {
		return nil, errors.New("ledgertest: too many jobs at once")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []batch.Last
	for _, j := range jobs {
		if e, live := m.last(j); e != nil {
			out = append(out, batch.Last{Entry: *e, Live: live})
		}
	}
	return out, nil
}

// Jobs yields every job's last attempt, in the order of their keys, as
// the ledger was when it was called: a copy, as a test's ledger may hold.
func (m *Memory) Jobs(ctx context.Context, maybePaid bool) iter.Seq2[*batch.Entry, error] {
	return func(yield func(*batch.Entry, error) bool) {
		m.mu.Lock()
		var entries []*batch.Entry
		for _, k := range slices.Sorted(maps.Keys(m.jobs)) {
			e, live := m.last(k)
			if !maybePaid || e.State == batch.Unknown || e.State == batch.Claimed && e.Kind == batch.KindCall && !live {
				entries = append(entries, e)
			}
		}
		m.mu.Unlock()
		for _, e := range entries {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// Status counts the jobs by state.
func (m *Memory) Status(context.Context) (batch.Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := batch.Status{States: map[batch.State]int{}}
	for k := range m.jobs {
		e, live := m.last(k)
		st.Jobs++
		st.States[e.State]++
		if e.Lost {
			st.Lost++
		}
		if live && e.State == batch.Claimed {
			st.InFlight++
		}
	}
	st.Budget = batch.BudgetStatus{Calls: m.spent["calls"], CallsLimit: m.lim["calls"],
		Spent: float64(m.spent["spend"]) / 1e6, SpendLimit: float64(m.lim["spend"]) / 1e6}
	return st, nil
}

// Close does nothing.
func (m *Memory) Close() error { return nil }

// Files is a batch.Store of outputs in memory, for tests.
type Files struct {
	mu sync.Mutex
	m  map[string][]byte
}

// NewFiles returns an empty Files.
func NewFiles() *Files { return &Files{m: map[string][]byte{}} }

// NewWriter writes key when closed whole, unless ctx was cancelled.
func (f *Files) NewWriter(ctx context.Context, key string, _ map[string]string) (io.WriteCloser, error) {
	if err := batch.CheckKey(key); err != nil {
		return nil, err
	}
	return &memWriter{ctx: ctx, f: f, key: key}, nil
}

// Exists reports whether key was written.
func (f *Files) Exists(_ context.Context, key string) (bool, error) {
	if err := batch.CheckKey(key); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.m[key]
	return ok, nil
}

// Bytes returns what key holds, or nil.
func (f *Files) Bytes(key string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[key]
}

// Get returns what key holds, or an error matching fs.ErrNotExist.
func (f *Files) Get(_ context.Context, key string) ([]byte, error) {
	if b := f.Bytes(key); b != nil {
		return b, nil
	}
	return nil, fmt.Errorf("ledgertest: %s: %w", key, fs.ErrNotExist)
}

// List yields the keys that start with prefix, in order.
func (f *Files) List(_ context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, k := range f.Keys() {
			if strings.HasPrefix(k, prefix) && !yield(k, nil) {
				return
			}
		}
	}
}

// Delete removes key.
func (f *Files) Delete(_ context.Context, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, key)
	return nil
}

// Keys lists the keys written, in order.
func (f *Files) Keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.m))
}

// Close does nothing.
func (f *Files) Close() error { return nil }

type memWriter struct {
	ctx context.Context
	f   *Files
	key string
	buf bytes.Buffer
}

func (w *memWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	return w.buf.Write(p)
}

func (w *memWriter) Close() error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	w.f.m[w.key] = bytes.Clone(w.buf.Bytes())
	return nil
}
