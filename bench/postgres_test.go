//go:build linux

package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creativegen/creative-go/batch/pgledger/pgproxy"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

// BenchmarkPostgresLedger runs creative batch (the built command) on a
// jobs file of BENCH_PG_LINES image jobs (default 1,000; the results give
// 100,000) at --concurrency 64 with --ledger a PostgreSQL database reached
// through a proxy that adds 20 ms to every round trip (BENCH_PG_DELAY_MS
// sets another), against an instant service; then a rerun of the finished
// jobs (counted at the service: none sent; BENCH_PG_RERUNS of them, default
// 1) and creative batch status. It reports the wall time of each phase
// and the ledger's round trips a job, counted at the proxy.
func BenchmarkPostgresLedger(b *testing.B) {
	lines := envInt("BENCH_PG_LINES", 1000)
	const concurrency = 64
	delay := time.Duration(envInt("BENCH_PG_DELAY_MS", 20)) * time.Millisecond
	dir := b.TempDir()
	bin := buildCreative(b, dir)
	jobs := filepath.Join(dir, "jobs.jsonl")
	writeImageJobs(b, jobs, lines)
	var calls atomic.Int64
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, pngAnswer)
	}))
	defer service.Close()
	srv := pgtest.Start(b)
	proxy, err := pgproxy.New(srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Close()
	proxy.SetDelay(delay)

	for i := range b.N {
		ledger, err := proxy.URL(srv.Database(b))
		if err != nil {
			b.Fatal(err)
		}
		env := append(os.Environ(), "CREATIVE_BASE_URL="+service.URL, "CREATIVE_ACCESS_KEY="+key, "CREATIVE_LEDGER="+ledger)
		out := filepath.Join(dir, "out"+strconv.Itoa(i))
		cli := func(phase string, args ...string) {
			before, rt := calls.Load(), proxy.Stats().RoundTrips
			cmd := exec.Command(bin, args...)
			cmd.Env = env
			start := time.Now()
			got, err := cmd.CombinedOutput()
			took := time.Since(start)
			if err != nil {
				b.Fatalf("%s: %v\n%s", phase, err, got)
			}
			sent := calls.Load() - before
			if want := map[string]int64{"run": int64(lines)}[phase]; sent != want {
				b.Fatalf("%s: %d requests, want %d", phase, sent, want)
			}
			trips := proxy.Stats().RoundTrips - rt
			b.ReportMetric(took.Seconds(), phase+"-s")
			b.ReportMetric(float64(trips)/float64(lines), phase+"-rt/job")
			b.Logf("%d jobs, %s: %v, %d ledger round trips (%.3f a job), %d requests", lines, phase, took.Round(time.Millisecond),
				trips, float64(trips)/float64(lines), sent)
		}
		cli("run", "batch", jobs, "--out", out, "--concurrency", strconv.Itoa(concurrency))
		for range envInt("BENCH_PG_RERUNS", 1) {
			cli("rerun", "batch", jobs, "--out", out, "--concurrency", strconv.Itoa(concurrency))
		}
		cli("status", "batch", "status", "--out", out)
		os.RemoveAll(out)
	}
}
