//go:build unix

package pgledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/pgledger/pgproxy"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

// TestFaults is the randomized fault harness of the PostgreSQL ledger: two
// or three workers share one ledger, each through a proxy of its own, and
// run a batch's jobs against a service that counts what it is sent, as the
// runner does (a job claimed before it is sent, sent only while the
// worker's lease is proven, its answer recorded after), while faults drawn
// from a seed strike: the proxy drops, resets and stalls connections and
// cuts one before or after its commit; a worker is killed (its
// connections closed, nothing more sent or written) or stopped past its
// lease and resumed; PostgreSQL is crashed and restarted; a worker's clock
// is minutes off. Some workers take over maybe-paid jobs (ResendUnknown),
// some schedules cap the calls. A last clean run ends the work. The
// invariants are checked against the service's count: no attempt is sent
// twice; no worker sends after its job was taken over, nor has a job
// taken over while its lease is proven; every send was claimed in the
// ledger by its run; every job recorded done was sent; a job is sent
// twice only when a worker with ResendUnknown took it over; the cap is
// never passed; in the end every job is done or maybe paid.
//
// Each schedule logs its seed; FAULTS_SEED=<seed> replays one, and
// FAULTS_SCHEDULES=<n> runs n of them (10 unless told, beside the 25 of
// the command line's harness over PostgreSQL; 5 under the race detector).
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault harness takes minutes")
	}
	srv := pgtest.Start(t)
	n := defaultSchedules
	if s := os.Getenv("FAULTS_SCHEDULES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = rand.Uint64()
	}
	if s := os.Getenv("FAULTS_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seeds = []uint64{seed}
	}
	ty := &tally{faults: map[string]int{}}
	start := time.Now()
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("FAULTS_SEED=%d", seed)
			runSchedule(t, srv, seed, ty)
		})
	}
	t.Logf("%d schedules in %v: %d jobs, %d sends, %d jobs sent twice (taken over once their worker was gone, with ResendUnknown), %d answers fenced; faults %v; %d violations",
		ty.schedules, time.Since(start).Round(time.Second), ty.jobs, ty.sends, ty.twice, ty.fenced, ty.faults, ty.violations)
}

// defaultSchedules is how many schedules TestFaults runs unless told.
var defaultSchedules = 10

// A tally sums the schedules' figures.
type tally struct {
	schedules, jobs, sends, twice, fenced, violations int
	faults                                            map[string]int
}

// A send is one request the service got.
type send struct {
	job, run string
	n        int
	at       time.Time
}

// A schedule is one seed's run.
type schedule struct {
	t       *testing.T
	rng     *rand.Rand
	srv     *pgtest.Server
	lease   time.Duration
	jobs    []string
	maxCall int64 // the calls' cap; 0: none

	mu       sync.Mutex
	sends    []send
	claimed  map[[2]any]time.Time // (job, attempt) -> when its claim returned
	workers  map[string]*worker   // by run
	errors   []string
	fenced   int
	faultLog map[string]int
}

func (s *schedule) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors = append(s.errors, fmt.Sprintf(format, args...))
	s.t.Errorf(format, args...)
}

// A worker is one process of the fleet, simulated: its goroutines stop
// at its gate while it is stopped.
type worker struct {
	s       *schedule
	name    string
	run     string
	l       *Ledger
	p       *pgproxy.Proxy
	sess    batch.Session
	resend  bool
	skew    time.Duration
	delay   time.Duration // before it starts on the jobs
	rng     *rand.Rand    // its order of the jobs
	until   time.Time     // a worker that resends goes over the jobs again until then
	killed  atomic.Bool
	stopMu  sync.Mutex
	resumed chan struct{} // while the worker is stopped: closed when it resumes

	mu       sync.Mutex
	lastBeat time.Time // when the last heartbeat that completed began
	lapsed   bool
	mine     map[string]bool // jobs it claimed: a pass again leaves them
}

// gate waits while the worker is stopped.
func (w *worker) gate() {
	w.stopMu.Lock()
	c := w.resumed
	w.stopMu.Unlock()
	if c != nil {
		<-c
	}
}

// stop stops the worker's goroutines at their gates for d.
func (w *worker) stop(d time.Duration) {
	c := make(chan struct{})
	w.stopMu.Lock()
	w.resumed = c
	w.stopMu.Unlock()
	time.Sleep(d)
	w.stopMu.Lock()
	w.resumed = nil
	w.stopMu.Unlock()
	close(c)
}

// proven says whether the worker may send: its lease proven by its own
// monotonic clock and its lock not lost. Once in doubt, never again.
func (w *worker) proven() bool {
	w.gate()
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.sess.Lost():
		w.lapsed = true
	default:
	}
	if w.killed.Load() || time.Since(w.lastBeat) >= w.s.lease-w.s.lease/3 {
		w.lapsed = true
	}
	return !w.lapsed
}

// canSend is proven as another worker sees it at a takeover, without
// the gate: a stopped worker's lease lapses by its clock all the same.
func (w *worker) canSend() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	lost := false
	select {
	case <-w.sess.Lost():
		lost = true
	default:
	}
	return !w.lapsed && !lost && !w.killed.Load() && time.Since(w.lastBeat) < w.s.lease-w.s.lease/3
}

// beat renews the lease every sixth of it, each write bounded by a ninth.
func (w *worker) beat() {
	for {
		time.Sleep(w.s.lease / 6)
		if !w.proven() {
			return
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), w.s.lease/9)
		err := w.sess.Beat(ctx)
		cancel()
		w.mu.Lock()
		switch {
		case err == nil && !w.lapsed:
			w.lastBeat = start
		case errors.Is(err, batch.ErrLeaseLost):
			w.lapsed = true
		}
		w.mu.Unlock()
	}
}

func (s *schedule) claim(job string, n int, w *worker) *batch.Claim {
	c := &batch.Claim{Entry: batch.Entry{Record: batch.Record{Job: job, Line: 1, Op: "image/text-to-image", Attempt: n,
		Fields: map[string]any{"prompt": job}, Worker: w.name, Run: w.run, Time: time.Now().Add(w.skew)},
		Kind: batch.KindCall, Stem: job[:8]}}
	if s.maxCall > 0 {
		c.Share = batch.Share{Calls: 1, MaxCalls: s.maxCall}
	}
	return c
}

// work runs jobs as the runner does, until they are done or the lease
// lapses.
func (w *worker) work(jobs <-chan string) {
	s := w.s
	for job := range jobs {
		if !w.proven() {
			return
		}
		w.mu.Lock()
		mine := w.mine[job]
		w.mu.Unlock()
		if mine {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c := s.claim(job, 1, w)
		res, err := w.l.Claim(ctx, c)
		if err == nil && !res.Claimed && w.resend && res.Last != nil && !res.Live &&
			(res.Last.State == batch.Claimed && res.Last.Kind == batch.KindCall || res.Last.State == batch.Unknown) {
			prev := res.Last
			c = s.claim(job, prev.Attempt+1, w)
			c.ResendUnknown = true
			res, err = w.l.Claim(ctx, c)
			if err == nil && res.Claimed {
				s.mu.Lock()
				pw := s.workers[prev.Run]
				s.mu.Unlock()
				if pw != nil && pw.canSend() {
					s.fail("job %s: attempt %d of %s taken over by %s while its lease was proven", job, prev.Attempt, pw.name, w.name)
				}
			}
		}
		cancel()
		if err != nil || !res.Claimed {
			continue
		}
		s.mu.Lock()
		s.claimed[[2]any{job, c.Attempt}] = time.Now()
		s.mu.Unlock()
		w.mu.Lock()
		w.mine[job] = true
		w.mu.Unlock()
		time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond) // the request made ready
		if !w.proven() {
			continue // claimed, never sent: maybe paid for the others
		}
		s.mu.Lock()
		s.sends = append(s.sends, send{job: job, run: w.run, n: c.Attempt, at: time.Now()})
		s.mu.Unlock()
		time.Sleep(time.Duration(50+rand.IntN(150)) * time.Millisecond) // the service at work
		w.record(job, c.Attempt)
	}
}

// record writes the answer, trying again for a while; a fenced answer is
// handed back.
func (w *worker) record(job string, n int) {
	for try := range 5 {
		w.gate()
		if w.killed.Load() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := w.l.Record(ctx, &batch.Entry{Record: batch.Record{Job: job, Attempt: n, Run: w.run, State: batch.Done,
			Requests: 1, Files: []string{job[:8] + ".png"}, Time: time.Now().Add(w.skew)}, Kind: batch.KindCall})
		cancel()
		if errors.Is(err, batch.ErrFenced) {
			w.s.mu.Lock()
			w.s.fenced++
			w.s.mu.Unlock()
			return
		}
		if err == nil {
			return
		}
		time.Sleep(time.Duration(100<<try) * time.Millisecond)
	}
}

// start opens a worker on the ledger at url, through a proxy of its own
// when proxied.
func (s *schedule) start(name, url string, proxied, resend bool, lease time.Duration) *worker {
	w := &worker{s: s, name: name, run: newToken(), resend: resend, mine: map[string]bool{},
		rng: rand.New(rand.NewPCG(s.rng.Uint64(), 1))}
	if proxied {
		var err error
		if w.p, err = pgproxy.New(s.srv.Addr()); err != nil {
			s.t.Fatal(err)
		}
		s.t.Cleanup(func() { _ = w.p.Close() })
		url, _ = w.p.URL(url)
	}
	l, err := Open(s.t.Context(), url)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = l.Close() })
	w.l = l
	w.lastBeat = time.Now()
	if w.sess, err = l.Begin(s.t.Context(), batch.RunInfo{Token: w.run, Worker: name, Lease: lease}); err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	s.workers[w.run] = w
	s.mu.Unlock()
	return w
}

// runWorkers runs ws over the jobs, each in its own order, three
// goroutines a worker, and waits for them. A worker that resends goes
// over them again until its until, as an operator who runs
// --resend-unknown again and again: it takes over a job the moment the
// ledger lets it.
func (s *schedule) runWorkers(ws []*worker) {
	var wg sync.WaitGroup
	for _, w := range ws {
		go w.beat()
		wg.Go(func() {
			time.Sleep(w.delay)
			for pass := 0; pass == 0 || w.resend && time.Now().Before(w.until); pass++ {
				order := slices.Clone(s.jobs)
				w.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				jobs := make(chan string, len(order))
				for _, j := range order {
					jobs <- j
				}
				close(jobs)
				var pw sync.WaitGroup
				for range 3 {
					pw.Go(func() { w.work(jobs) })
				}
				pw.Wait()
				if !w.proven() {
					return
				}
				time.Sleep(s.lease / 6)
			}
		})
	}
	wg.Wait()
}

// The faults a worker, or the server, is struck with.
var faultKinds = []string{"drop", "reset", "stall", "cut before commit", "cut after commit", "kill", "stop past the lease", "server restart"}

// A blow is one fault, drawn before the workers start: when it strikes,
// whom, which, how long a stall or a server's stop lasts, and which
// commit from then on is cut.
type blow struct {
	at   time.Duration
	w    *worker
	kind string
	d    time.Duration
	n    int
}

func (s *schedule) draw(ws []*worker) blow {
	return blow{at: time.Duration(s.rng.Int64N(int64(time.Second))), w: ws[s.rng.IntN(len(ws))],
		kind: faultKinds[s.rng.IntN(len(faultKinds))], d: time.Duration(s.rng.Int64N(int64(3 * s.lease / 2))), n: 1 + s.rng.IntN(4)}
}

// strike deals blow b.
func (s *schedule) strike(b blow) {
	w := b.w
	s.mu.Lock()
	s.faultLog[b.kind]++
	s.mu.Unlock()
	switch b.kind {
	case "drop":
		w.p.Drop()
	case "reset":
		w.p.Reset()
	case "stall":
		w.p.Stall()
		time.Sleep(b.d)
		w.p.Resume()
	case "cut before commit":
		w.p.CutCommit(b.n, pgproxy.BeforeCommit)
	case "cut after commit":
		w.p.CutCommit(b.n, pgproxy.AfterCommit)
	case "kill":
		w.killed.Store(true)
		w.p.Refuse(true)
		w.p.Drop()
	case "stop past the lease":
		w.stop(2 * s.lease)
	case "server restart":
		s.srv.Crash()
		time.Sleep(b.d / 3)
		if err := s.srv.Restart(); err != nil {
			s.t.Error(err)
		}
	}
}

func runSchedule(t *testing.T, srv *pgtest.Server, seed uint64, ty *tally) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s := &schedule{t: t, rng: rng, srv: srv, lease: 2 * time.Second, claimed: map[[2]any]time.Time{},
		workers: map[string]*worker{}, faultLog: map[string]int{}}
	url := srv.Database(t)
	for i := range 30 + rng.IntN(31) {
		s.jobs = append(s.jobs, fmt.Sprintf("%08x%024x", seed>>32, i))
	}
	if rng.IntN(3) == 0 {
		s.maxCall = int64(len(s.jobs) * 3 / 4)
	}
	var ws []*worker
	for i := range 2 + rng.IntN(2) {
		w := s.start(fmt.Sprint("w", i), url, true, rng.IntN(2) == 0, s.lease)
		w.until = time.Now().Add(3 * s.lease)
		if i > 0 {
			w.delay = time.Duration(rng.Int64N(int64(2 * s.lease))) // a worker started later
		}
		if rng.IntN(4) == 0 {
			w.skew = time.Duration(rng.IntN(21)-10) * time.Minute
			s.faultLog["clock off"]++
		}
		ws = append(ws, w)
	}
	// Faults strike over the first second of the work.
	var blows []blow
	for range 1 + rng.IntN(3) {
		blows = append(blows, s.draw(ws))
	}
	slices.SortFunc(blows, func(a, b blow) int { return int(a.at - b.at) })
	strikes := make(chan struct{})
	go func() {
		defer close(strikes)
		start := time.Now()
		for _, b := range blows {
			time.Sleep(b.at - time.Since(start))
			s.strike(b)
		}
	}()
	s.runWorkers(ws)
	<-strikes
	for _, w := range ws {
		if !w.killed.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = w.sess.End(ctx)
			cancel()
		}
	}
	// A clean run ends the work, taking over maybe-paid jobs when the
	// schedule says so; a worker's lock is free by then, or its heartbeat
	// stale within the lease and a third.
	time.Sleep(s.lease * 4 / 3)
	last := s.start("final", url, false, rng.IntN(2) == 0, 30*time.Second)
	s.runWorkers([]*worker{last})
	_ = last.sess.End(t.Context())
	s.check(last)

	ty.schedules++
	ty.jobs += len(s.jobs)
	ty.sends += len(s.sends)
	ty.fenced += s.fenced
	for k, v := range s.faultLog {
		ty.faults[k] += v
	}
	perJob := map[string]int{}
	for _, sd := range s.sends {
		perJob[sd.job]++
	}
	for _, n := range perJob {
		if n > 1 {
			ty.twice++
		}
	}
	ty.violations += len(s.errors)
}

// check holds the schedule's sends against the ledger.
func (s *schedule) check(final *worker) {
	ctx := s.t.Context()
	db := final.l.DB()
	attempts := map[[2]any]string{} // (job, n) -> run
	done := map[[2]any]bool{}
	rows, err := db.QueryContext(ctx, `SELECT job, n, run, state FROM attempts`)
	if err != nil {
		s.t.Fatal(err)
	}
	for rows.Next() {
		var job, run, state string
		var n int
		if err := rows.Scan(&job, &n, &run, &state); err != nil {
			s.t.Fatal(err)
		}
		attempts[[2]any{job, n}] = run
		done[[2]any{job, n}] = state == string(batch.Done)
	}
	rows.Close()
	resent := false
	for _, w := range s.workers {
		resent = resent || w.resend
	}
	sent := map[[2]any]send{}
	perJob := map[string][]send{}
	for _, sd := range s.sends {
		k := [2]any{sd.job, sd.n}
		if _, twice := sent[k]; twice {
			s.fail("job %s: attempt %d sent twice", sd.job, sd.n)
		}
		sent[k] = sd
		perJob[sd.job] = append(perJob[sd.job], sd)
		if run, ok := attempts[k]; !ok || run != sd.run {
			s.fail("job %s: attempt %d sent by run %s, claimed in the ledger by %q", sd.job, sd.n, sd.run, run)
		}
		if at, ok := s.claimed[[2]any{sd.job, sd.n + 1}]; ok && sd.at.After(at) {
			s.fail("job %s: attempt %d sent %v after attempt %d was claimed", sd.job, sd.n, sd.at.Sub(at), sd.n+1)
		}
	}
	for k, d := range done {
		if _, ok := sent[k]; d && !ok {
			s.fail("job %s: attempt %d recorded done and never sent", k[0], k[1])
		}
	}
	for job, ss := range perJob {
		if len(ss) > 1 && !resent {
			s.fail("job %s: sent %d times, and no worker resends", job, len(ss))
		}
	}
	if s.maxCall > 0 && int64(len(s.sends)) > s.maxCall {
		s.fail("%d calls sent under a cap of %d", len(s.sends), s.maxCall)
	}
	st, err := final.l.Status(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	if st.Jobs != len(s.jobs) && s.maxCall == 0 {
		s.fail("the ledger holds %d jobs of %d", st.Jobs, len(s.jobs))
	}
	for e, err := range final.l.Jobs(ctx, false) {
		if err != nil {
			s.t.Fatal(err)
		}
		if e.State != batch.Done && e.State != batch.Unknown && !(e.State == batch.Claimed && e.Run != final.run) {
			s.fail("job %s ends %s by %s: neither done nor maybe paid", e.Job, e.State, e.Run)
		}
	}
}
