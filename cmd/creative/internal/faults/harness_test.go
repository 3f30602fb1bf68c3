package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creativegen/creative-go/creativetest"
)

const (
	// image and speech are the operations of the jobs.
	image  = "image/text-to-image"
	speech = "audio/text-to-speech"
	// lease is the workers' lease: short, so that a schedule takes seconds.
	lease = 3 * time.Second
	// skew is what others allow past it (a third of it), as batch does.
	skew = lease / 3
	// bound is how long a process may run once its last fault ended.
	bound = 20 * time.Second
)

// A call is one request the service's front saw, whole.
type call struct {
	worker, prompt string
	status         int
	at, end        time.Time
}

// front records every call on its way to the fake and the status the fake
// answered (502 when it answered nothing: a dropped connection, a caller
// gone).
type front struct {
	mu    sync.Mutex
	calls []call
}

func (f *front) start(t *testing.T, fake string) string {
	u, err := url.Parse(fake)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		var c struct{ Prompt string }
		_ = json.Unmarshal(body, &c)
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w}
		proxy.ServeHTTP(sw, r)
		if r.Method == http.MethodPost && c.Prompt != "" {
			f.mu.Lock()
			f.calls = append(f.calls, call{worker: r.Header.Get("X-Faults-Worker"), prompt: c.Prompt, status: sw.status, at: at, end: time.Now()})
			f.mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// A proc is one worker process of a schedule.
type proc struct {
	mu       sync.Mutex // guards killed, exited and lastHit
	cfg      config
	cmd      *exec.Cmd
	out      bytes.Buffer
	rep      *report
	killed   time.Time // SIGKILL sent
	exited   time.Time
	lastHit  time.Time // when its last fault ended
	overtime bool
}

func (p *proc) hit() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastHit
}

// tally counts what the schedules did.
type tally struct {
	mu         sync.Mutex
	schedules  int
	ledger     map[string]int // faults of the ledger and the outputs
	service    map[string]int
	process    map[string]int
	budget     map[string]int // the caps drawn, and how they ended
	violations int
	paid, jobs int
	twice      int // jobs paid twice, each resent after its first worker was gone
}

func (ty *tally) add(m map[string]int, k string, n int) {
	ty.mu.Lock()
	m[k] += n
	ty.mu.Unlock()
}

// A schedule is one draw of faults over one ledger.
type schedule struct {
	t            *testing.T
	seed         uint64
	rng          *rand.Rand
	engine       engine
	out          string                              // the outputs' folder
	ledger       string                              // the workers' --ledger
	env          []string                            // for the workers
	engineStrike func(fault string, d time.Duration) // deals a fault of the engine's (engine.netFaults)
	jobs         string
	ops          map[string]string // each job's operation, by its prompt
	cap          fleetCap          // the workers' budget (budget_test.go)
	status       statusBudget      // batch status --json's budget once the capped workers ended
	fake         *creativetest.Server
	front        *front
	url          string
	ty           *tally
	procs        []*proc
	errors       []string
}

func (s *schedule) fail(format string, args ...any) {
	s.errors = append(s.errors, fmt.Sprintf(format, args...))
}

// start starts the process of worker p.
func (s *schedule) start(p *proc) *proc {
	cfg := &p.cfg
	cfg.Engine, cfg.Out, cfg.Ledger, cfg.Jobs, cfg.BaseURL, cfg.Key, cfg.Lease = s.engine.name, s.out, s.ledger, s.jobs, s.url, creativetest.DefaultAccessKey, lease
	raw, _ := json.Marshal(cfg)
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(append(os.Environ(), s.env...), workerEnv+"="+string(raw))
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.mu.Lock() // the engine's faults mark every process hit
	p.lastHit = time.Now()
	p.mu.Unlock()
	if err := p.cmd.Start(); err != nil {
		s.t.Errorf("seed %d: %s: %v", s.seed, cfg.Name, err)
	}
	return p
}

// wait waits for p, for bound past its last fault at most, and reads its
// report.
func (s *schedule) wait(p *proc) {
	if p.cmd.Process == nil {
		return // not started: said so
	}
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	for {
		select {
		case <-done:
		case <-time.After(time.Until(p.hit().Add(bound))):
			if time.Since(p.hit()) < bound {
				continue // a fault was struck meanwhile
			}
			p.overtime = true
			s.fail("%s did not end within %v of its last fault", p.cfg.Name, bound)
			_ = p.cmd.Process.Kill()
			<-done
		}
		break
	}
	p.mu.Lock()
	p.exited = time.Now()
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && p.killed.IsZero() {
		// A SIGTERM that came before the worker listened for it, or the
		// worker's own SIGKILL once it took a share of the budget.
		p.killed = p.exited
		if ws.Signal() == syscall.SIGKILL && !p.overtime {
			s.ty.add(s.ty.process, "SIGKILL after a share", 1)
		}
	}
	killed := !p.killed.IsZero()
	p.mu.Unlock()
	if killed {
		return
	}
	var rep report
	line := p.out.Bytes()
	if i := bytes.LastIndex(line, []byte(`{"Name"`)); i >= 0 {
		line = line[i:]
	}
	if err := json.Unmarshal(bytes.TrimSpace(line), &rep); err != nil {
		if p.overtime {
			return
		}
		s.fail("%s left no report (%v): %s", p.cfg.Name, err, p.out.String())
		return
	}
	p.rep = &rep
	for k, n := range rep.Faults {
		s.ty.add(s.ty.ledger, k, n)
	}
}

// serviceFaults queues the service's faults of the schedule.
func (s *schedule) serviceFaults() {
	for range s.rng.IntN(5) {
		var f creativetest.Fault
		op := []string{image, speech}[s.rng.IntN(2)]
		switch s.rng.IntN(7) {
		case 0:
			f = creativetest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "0"}
		case 1:
			f = creativetest.Fault{Status: http.StatusInternalServerError}
		case 2:
			f = creativetest.Fault{Status: http.StatusBadGateway}
		case 3:
			f = creativetest.Fault{Status: http.StatusServiceUnavailable}
		case 4:
			f = creativetest.Fault{Drop: true}
		case 5:
			f = creativetest.Fault{Delay: time.Duration(300+s.rng.IntN(1500)) * time.Millisecond, Drop: s.rng.IntN(2) == 0}
		case 6:
			f = creativetest.Fault{Status: http.StatusUnauthorized, Message: "x-access-key: not a valid key"}
		}
		s.fake.Fail(op, f)
	}
}

// countServiceFaults counts the faults the fake answered with.
func (s *schedule) countServiceFaults() {
	for _, r := range s.fake.Requests() {
		switch {
		case r.Operation != image && r.Operation != speech || r.Status == http.StatusOK:
		case r.Status == 0:
			s.ty.add(s.ty.service, "drop or stall", 1)
		case r.Status == http.StatusUnauthorized:
			s.ty.add(s.ty.service, "refused key", 1)
		case r.Status == http.StatusTooManyRequests:
			s.ty.add(s.ty.service, "429", 1)
		default:
			s.ty.add(s.ty.service, "5xx", 1)
		}
	}
}

// A blow is a process fault drawn for a worker: its kind (below 2, none),
// when it strikes after the start, and how long a SIGSTOP lasts.
type blow struct {
	kind        int
	at, stopFor time.Duration
	// taker, when set, is a worker with ResendUnknown started while the
	// stopped one is stopped past its lease: it tries to take over the
	// claims of a worker that lives.
	taker *proc
}

func (s *schedule) drawStrike(p *proc) blow {
	b := blow{kind: s.rng.IntN(5), at: 100*time.Millisecond + time.Duration(s.rng.Int64N(int64(900*time.Millisecond))),
		stopFor: lease + skew + time.Duration(s.rng.Int64N(int64(lease)))}
	if b.kind == 3 {
		b.taker = &proc{cfg: config{Name: p.cfg.Name + "-taker", Seed: s.rng.Uint64(), Resend: true, Concurrency: 3}}
	}
	return b
}

// strike deals p's process fault b, if any.
func (s *schedule) strike(p *proc, b blow) {
	kind, stopFor := b.kind, b.stopFor
	if kind < 2 || p.cmd.Process == nil {
		return
	}
	func() {
		time.Sleep(b.at)
		p.mu.Lock()
		defer func() { p.lastHit = time.Now(); p.mu.Unlock() }()
		if !p.exited.IsZero() {
			return
		}
		var err error
		switch kind {
		case 2:
			if err = p.cmd.Process.Signal(syscall.SIGKILL); err == nil {
				p.killed = time.Now()
				s.ty.add(s.ty.process, "SIGKILL", 1)
			}
		case 3:
			if err = p.cmd.Process.Signal(syscall.SIGSTOP); err == nil {
				s.ty.add(s.ty.process, "SIGSTOP", 1)
				if b.taker == nil {
					time.Sleep(stopFor)
				} else {
					// Once its heartbeat is stale by the database's clock:
					// its lease and a third past its last beat.
					time.Sleep(lease + skew + lease/6)
					s.start(b.taker)
					time.Sleep(max(0, stopFor-lease-skew-lease/6))
				}
				_ = p.cmd.Process.Signal(syscall.SIGCONT)
			}
		case 4:
			if err = p.cmd.Process.Signal(syscall.SIGTERM); err == nil {
				s.ty.add(s.ty.process, "SIGTERM", 1)
			}
		}
	}()
}

// run runs the schedule: its workers under faults, then a rerun and a
// --resend-unknown run, then checks the invariants.
func (s *schedule) run() {
	nJobs := 8 + s.rng.IntN(13)
	var lines strings.Builder
	s.ops = map[string]string{}
	for i := range nJobs {
		prompt := fmt.Sprintf("s%d-job-%d", s.seed, i)
		if s.rng.IntN(2) == 0 {
			s.ops[prompt] = image
			fmt.Fprintf(&lines, `{"op":%q,"prompt":%q}`+"\n", image, prompt)
		} else {
			s.ops[prompt] = speech
			fmt.Fprintf(&lines, `{"op":%q,"prompt":%q,"voiceId":"female 1"}`+"\n", speech, prompt)
		}
	}
	if err := os.WriteFile(s.jobs, []byte(lines.String()), 0o644); err != nil {
		s.t.Fatal(err)
	}
	nWorkers := 2 + s.rng.IntN(2)
	s.cap = s.drawCap(nWorkers)
	s.serviceFaults()
	// Every draw is made before any process starts, so that a seed
	// replays them whatever the timing; half the workers after the first
	// start late, when others' claims may look gone.
	var ends sync.WaitGroup
	for w := range nWorkers {
		cfg := config{Name: "w" + strconv.Itoa(w+1), Seed: s.rng.Uint64(), LedgerFaults: s.rng.IntN(10) < 7,
			Resend: s.rng.IntN(2) == 0, Concurrency: 1 + s.rng.IntN(3), Budget: s.cap.of(w)}
		var late time.Duration
		if w > 0 && s.rng.IntN(2) == 0 {
			late = time.Duration(s.rng.Int64N(int64(2 * lease)))
		}
		p := &proc{cfg: cfg}
		s.procs = append(s.procs, p)
		strike := s.drawStrike(p)
		if strike.taker != nil {
			strike.taker.cfg.Budget = cfg.Budget
			s.procs = append(s.procs, strike.taker)
		}
		ends.Go(func() {
			time.Sleep(late)
			s.start(p)
			var faults sync.WaitGroup
			faults.Go(func() { s.strike(p, strike) })
			s.wait(p)
			faults.Wait()
			if strike.taker != nil && strike.taker.cmd != nil {
				s.ty.add(s.ty.process, "takeover attempt", 1)
				s.wait(strike.taker)
			}
		})
	}
	s.engineFaults(&ends)
	ends.Wait()
	s.status = s.budgetStatus()
	s.countServiceFaults()
	s.fake.Reset() // the faults not used, with the requests it kept
	// Where the engine judges by heartbeats, a killed worker is gone once
	// its heartbeat is older than its lease and a third.
	for _, p := range s.procs {
		if !s.engine.exact && (!p.killed.IsZero() || p.overtime) {
			time.Sleep(lease + skew)
			break
		}
	}
	for _, name := range []string{"rerun", "resend"} {
		// A run that could not write its ledger on a loaded machine (its
		// session not begun within its deadline) is started again, twice
		// at most: the faults are over. These two runs have no cap, so that
		// they end the work whatever the capped workers left (and take no
		// share: the budget's shares are the capped workers' alone).
		for try := range 3 {
			p := s.start(&proc{cfg: config{Name: name + strings.Repeat("'", try), Seed: s.rng.Uint64(), Resend: name == "resend", Concurrency: 3}})
			s.procs = append(s.procs, p)
			s.wait(p)
			if p.rep == nil || !p.rep.Ledger {
				break
			}
		}
	}
	s.check(nJobs)
}

// engineFaults draws the faults of the engine's network and server (none
// for an engine without them) and deals them while the workers run.
func (s *schedule) engineFaults(ends *sync.WaitGroup) {
	if len(s.engine.netFaults) == 0 {
		return
	}
	type netBlow struct {
		fault string
		at, d time.Duration
	}
	var blows []netBlow
	for range s.rng.IntN(4) {
		blows = append(blows, netBlow{s.engine.netFaults[s.rng.IntN(len(s.engine.netFaults))],
			100*time.Millisecond + time.Duration(s.rng.Int64N(int64(2*time.Second))), time.Duration(s.rng.Int64N(int64(3 * lease / 2)))})
	}
	slices.SortFunc(blows, func(a, b netBlow) int { return int(a.at - b.at) })
	start := time.Now()
	ends.Go(func() {
		for _, b := range blows {
			time.Sleep(b.at - time.Since(start))
			s.engineStrike(b.fault, b.d)
			s.ty.add(s.ty.ledger, b.fault, 1)
			for _, p := range s.procs {
				p.mu.Lock()
				p.lastHit = time.Now()
				p.mu.Unlock()
			}
		}
		s.engineStrike("", 0) // the faults end: none stays armed
	})
}

// gone reports whether the worker named w was really gone at at: killed,
// ended, or stopped by its lease in doubt or its ledger.
func (s *schedule) gone(w string, at time.Time) bool {
	p := s.proc(w)
	return p != nil && (s.ended(p, at) || p.rep != nil && p.rep.Ledger)
}

// ended reports whether p's process was killed, or its run had ended, at
// at.
func (s *schedule) ended(p *proc, at time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.killed.IsZero() && p.killed.Before(at) || !p.exited.IsZero() && p.exited.Before(at) ||
		p.rep != nil && p.rep.RunEnded.Before(at)
}

func (s *schedule) proc(name string) *proc {
	for _, p := range s.procs {
		if p.cfg.Name == name {
			return p
		}
	}
	return nil
}
