//go:build linux

package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/sqliteledger"
)

// The batch benchmark runs package batch in a child process (this test
// binary, started again with BENCH_BATCH_CHILD set), so that the child's
// peak RSS is the batch's alone: the instant server it calls runs here, in
// the parent. BENCH_BATCH_LINES sets the number of lines (default 2,000,
// so that CI's single run stays short); the README gives the figures at
// 10,000, 100,000 and 1,000,000.

func init() {
	if mode := os.Getenv("BENCH_BATCH_CHILD"); mode != "" {
		os.Exit(batchChild(mode))
	}
}

// pngAnswer is a text-to-image answer of one tiny PNG.
const pngAnswer = `{"success":true,"message":"ok","data":[{"base64":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}]}`

// childResult is what a child reports on stdout.
type childResult struct {
	Summary batch.Summary
	Calls   int
	Err     string
}

// batchChild runs one phase: "dry" checks the jobs and plans from the
// ledger, "run" runs them.
func batchChild(mode string) int {
	ctx := context.Background()
	jobs, out := os.Getenv("BENCH_BATCH_JOBS"), os.Getenv("BENCH_BATCH_OUT")
	c, err := creative.New(creative.WithBaseURL(os.Getenv("BENCH_BATCH_URL")), creative.WithAccessKey(key))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ledger, err := sqliteledger.Open(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ledger.Close()
	store, err := batch.OpenFolder(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer store.Close()
	r, err := batch.New(c, ledger, store, batch.Options{Concurrency: batchConcurrency, Base: filepath.Dir(jobs)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var res childResult
	if mode == "dry" {
		var checked *batch.Checked
		checked, err = r.Check(ctx, batch.File(jobs))
		if err == nil {
			var plan *batch.Plan
			plan, err = r.Plan(ctx, checked)
			if err == nil {
				res.Summary = plan.Summary
				for _, n := range plan.Calls {
					res.Calls += n
				}
			}
		}
	} else {
		var checked *batch.Checked
		if checked, err = r.Check(ctx, batch.File(jobs)); err == nil {
			res.Summary, err = r.Run(ctx, checked)
		}
	}
	if err != nil {
		res.Err = err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// batchConcurrency is the number of jobs a run has in flight.
const batchConcurrency = 16

// batchLines is the size of the benchmark's jobs file.
func batchLines() int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_BATCH_LINES")); err == nil && v > 0 {
		return v
	}
	return 2000
}

func BenchmarkBatch(b *testing.B) {
	lines := batchLines()
	dir := b.TempDir()
	jobs := filepath.Join(dir, "jobs.jsonl")
	f, err := os.Create(jobs)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range lines {
		fmt.Fprintf(w, `{"op":"image/text-to-image","prompt":"a fox in the snow, number %d","styleId":"anime"}`+"\n", i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, pngAnswer)
	}))
	defer srv.Close()

	for i := range b.N {
		out := filepath.Join(dir, "out-"+strconv.Itoa(i))
		floor := durableFloor(b, filepath.Join(dir, "floor-"+strconv.Itoa(i)), lines)
		b.Logf("%d lines, floor: %v (the run's files and a group-committed log, in plain os calls)", lines, floor.Round(time.Millisecond))
		b.ReportMetric(floor.Seconds(), "floor-s")
		for _, phase := range []struct{ name, mode string }{{"dry-run", "dry"}, {"run", "run"}, {"rerun", "run"}} {
			before := calls.Load()
			res, took, rss := runChild(b, phase.mode, jobs, out, srv.URL)
			sent := calls.Load() - before
			b.Logf("%d lines, %s: %v, peak RSS %.1f MiB, %d requests; %+v",
				lines, phase.name, took.Round(time.Millisecond), float64(rss)/(1<<20), sent, res.Summary)
			b.ReportMetric(float64(rss)/(1<<20), phase.name+"-MiB")
			b.ReportMetric(took.Seconds(), phase.name+"-s")
			checkPhase(b, phase.name, lines, res, sent)
			if phase.name == "run" {
				b.ReportMetric(took.Seconds()/floor.Seconds(), "run/floor")
				db := dbSize(b, out)
				b.Logf("%d lines: ledger.db and its WAL hold %.1f MiB, %.0f bytes a job", lines, float64(db)/(1<<20), float64(db)/float64(lines))
				b.ReportMetric(float64(db)/float64(lines), "db-B/job")
			}
		}
		os.RemoveAll(out)
	}
}

// durableFloor is the least a run of the benchmark's jobs must ask of the
// disk for the durability the ledger gives, done in plain os calls at the
// run's concurrency: per job, a claim appended to a shared log and waited
// for; the image written to a temporary file, flushed, renamed into the
// output folder and the folder flushed; the job's end appended and waited
// for. The log is synced with fdatasync by one writer for all who wait at
// that moment (a group commit), as the database's one writer does with
// its WAL.
func durableFloor(b *testing.B, dir string, lines int) time.Duration {
	b.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	lf, err := os.OpenFile(filepath.Join(dir, "log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer lf.Close()
	log := &groupLog{f: lf}
	record := make([]byte, 400) // about a ledger record
	image := make([]byte, 70)   // the answer's PNG
	put := func(i int) error {
		tmp := filepath.Join(dir, "."+strconv.Itoa(i)+".tmp")
		f, err := os.Create(tmp)
		if err != nil {
			return err
		}
		_, err = f.Write(image)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, filepath.Join(dir, strconv.Itoa(i)+".png"))
		}
		if err != nil {
			return err
		}
		d, err := os.Open(dir)
		if err != nil {
			return err
		}
		defer d.Close()
		return d.Sync()
	}
	job := func(i int) error {
		if err := log.append(record); err != nil {
			return err
		}
		if err := put(i); err != nil {
			return err
		}
		return log.append(record)
	}
	var next atomic.Int64
	errs := make(chan error, batchConcurrency)
	start := time.Now()
	for range batchConcurrency {
		go func() {
			var err error
			for i := int(next.Add(1)); i <= lines && err == nil; i = int(next.Add(1)) {
				err = job(i)
			}
			errs <- err
		}()
	}
	for range batchConcurrency {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// A groupLog is the floor's shared log: appends wait for one fdatasync
// that covers every append made before it started.
type groupLog struct {
	f        *os.File
	mu       sync.Mutex
	buf      []byte
	waiters  []chan error
	flushing bool
}

// append adds data to the log and returns once it is durable.
func (l *groupLog) append(data []byte) error {
	l.mu.Lock()
	l.buf = append(l.buf, data...)
	done := make(chan error, 1)
	l.waiters = append(l.waiters, done)
	if !l.flushing {
		l.flushing = true
		go l.flush()
	}
	l.mu.Unlock()
	return <-done
}

func (l *groupLog) flush() {
	for {
		l.mu.Lock()
		if len(l.waiters) == 0 {
			l.flushing = false
			l.mu.Unlock()
			return
		}
		buf, waiters := l.buf, l.waiters
		l.buf, l.waiters = nil, nil
		l.mu.Unlock()
		_, err := l.f.Write(buf)
		if err == nil {
			err = unix.Fdatasync(int(l.f.Fd()))
		}
		for _, w := range waiters {
			w <- err
		}
	}
}

// checkPhase fails the benchmark when a phase did not do what it must.
func checkPhase(b *testing.B, phase string, lines int, res childResult, sent int64) {
	b.Helper()
	if res.Err != "" {
		b.Fatalf("%s: %s", phase, res.Err)
	}
	var want int64
	if phase == "run" {
		want = int64(lines)
	}
	if sent != want {
		b.Fatalf("%s: %d requests, want %d", phase, sent, want)
	}
	if phase == "dry-run" && res.Calls != lines || phase == "run" && res.Summary.Done != lines || phase == "rerun" && res.Summary.DoneBefore != lines {
		b.Fatalf("%s: %+v, calls %d", phase, res.Summary, res.Calls)
	}
}

// runChild runs one phase in a child process and returns what it
// reported, the wall time and the child's peak RSS in bytes.
func runChild(b *testing.B, mode, jobs, out, url string) (childResult, time.Duration, int64) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "BENCH_BATCH_CHILD="+mode, "BENCH_BATCH_JOBS="+jobs, "BENCH_BATCH_OUT="+out, "BENCH_BATCH_URL="+url)
	cmd.Stderr = os.Stderr
	start := time.Now()
	stdout, err := cmd.Output()
	took := time.Since(start)
	if err != nil {
		b.Fatalf("%s: %v", mode, err)
	}
	var res childResult
	if err := json.Unmarshal(stdout, &res); err != nil {
		b.Fatalf("%s: %v: %q", mode, err, stdout)
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = int64(ru.Maxrss) * 1024 // kilobytes on Linux
	}
	return res, took, rss
}

// dbSize is the size of the ledger's database files in out.
func dbSize(b *testing.B, out string) int64 {
	b.Helper()
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		st, err := os.Stat(filepath.Join(out, sqliteledger.File+suffix))
		if err == nil {
			n += st.Size()
		} else if !errors.Is(err, fs.ErrNotExist) {
			b.Fatal(err)
		}
	}
	return n
}
