package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
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
	store, err := batch.NewDir(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer store.Close()
	r, err := batch.New(c, store, batch.Options{Concurrency: batchConcurrency, Base: filepath.Dir(jobs)})
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
		res.Summary, err = r.Run(ctx, batch.File(jobs))
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
		b.Logf("%d lines, floor: %v (the run's durable writes alone, in plain os calls)", lines, floor.Round(time.Millisecond))
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
			}
		}
		os.RemoveAll(out)
	}
}

// durableFloor is the least a run of the benchmark's jobs must ask of the
// disk, done in plain os calls at the run's concurrency: per job, a claim
// created and synced with its folder, the image written to a temporary
// file, synced, renamed into the output folder and the folder synced, and
// the job's end created and synced with its folder. Nothing is removed:
// removals slow later creates on some file systems.
func durableFloor(b *testing.B, dir string, lines int) time.Duration {
	b.Helper()
	for _, sub := range []string{"ledger", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	record := make([]byte, 400) // about a ledger record
	image := make([]byte, 70)   // the answer's PNG
	create := func(path string, data []byte) error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	syncDir := func(path string) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	}
	job := func(i int) error {
		fan := filepath.Join(dir, "ledger", fmt.Sprintf("%03x", i%4096))
		if err := os.MkdirAll(fan, 0o755); err != nil {
			return err
		}
		key := filepath.Join(fan, fmt.Sprintf("%032x", i))
		tmp := filepath.Join(dir, "tmp", strconv.Itoa(i))
		steps := []func() error{
			func() error { return create(key+".0001.json", record) },
			func() error { return syncDir(fan) },
			func() error { return create(tmp, image) },
			func() error { return os.Rename(tmp, filepath.Join(dir, strconv.Itoa(i)+".png")) },
			func() error { return syncDir(dir) },
			func() error { return create(key+".0001.end.json", record) },
			func() error { return syncDir(fan) },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
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
