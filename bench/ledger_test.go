//go:build linux

package bench

import (
	"database/sql"
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

	"github.com/creativegen/creative-go/batch/sqliteledger"
)

// BenchmarkLocalLedger runs creative batch (the built command) on a jobs
// file of BENCH_LEDGER_LINES image jobs (default 1,000; the results give
// 100,000) with --out a local folder, then asks the ledger what people
// and the command ask of it: jobs by state in the sqlite3 shell's query
// (SELECT state, count(*) FROM jobs GROUP BY state, on a connection of
// its own), a rerun of the finished jobs (counted at the server: none
// sent) and creative batch status. It reports the wall time of each and
// the size of ledger.db. The service is an instant server.
func BenchmarkLocalLedger(b *testing.B) {
	lines := envInt("BENCH_LEDGER_LINES", 1000)
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
	env := append(os.Environ(), "CREATIVE_BASE_URL="+service.URL, "CREATIVE_ACCESS_KEY="+key)

	for i := range b.N {
		out := filepath.Join(dir, "out"+strconv.Itoa(i))
		cli := func(phase string, args ...string) {
			before := calls.Load()
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
			b.ReportMetric(took.Seconds(), phase+"-s")
			b.Logf("%d jobs, %s: %v, %d requests", lines, phase, took.Round(time.Millisecond), sent)
		}
		cli("run", "batch", jobs, "--out", out, "--concurrency", strconv.Itoa(batchConcurrency))
		size := dbSize(b, out)
		b.ReportMetric(float64(size)/float64(lines), "db-B/job")
		b.Logf("%d jobs: ledger.db and its WAL hold %.1f MiB, %.0f bytes a job", lines, float64(size)/(1<<20), float64(size)/float64(lines))
		byState(b, out, lines)
		cli("rerun", "batch", jobs, "--out", out, "--concurrency", strconv.Itoa(batchConcurrency))
		cli("status", "batch", "status", "--out", out)
		os.RemoveAll(out)
	}
}

// byState times the shell's jobs-by-state query on the ledger in out,
// three times on one connection (the first reads the pages from the file
// system's cache, the others from SQLite's), and checks its answer.
func byState(b *testing.B, out string, lines int) {
	b.Helper()
	db, err := sql.Open("sqlite", filepath.Join(out, sqliteledger.File)) // the driver sqliteledger registers
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for round := range 3 {
		start := time.Now()
		rows, err := db.Query(`SELECT state, count(*) FROM jobs GROUP BY state`)
		if err != nil {
			b.Fatal(err)
		}
		got := map[string]int{}
		for rows.Next() {
			var state string
			var n int
			if err := rows.Scan(&state, &n); err != nil {
				b.Fatal(err)
			}
			got[state] = n
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		rows.Close()
		took := time.Since(start)
		if len(got) != 1 || got["done"] != lines {
			b.Fatalf("jobs by state: %v, want %d done", got, lines)
		}
		if round == 0 {
			b.ReportMetric(took.Seconds(), "by-state-s")
		}
		b.Logf("%d jobs, jobs by state (%d): %v", lines, round+1, took.Round(time.Microsecond))
	}
	// A ledger that keeps each job's last record in a table of its own
	// (schema version 2) answers the counts from that table's index alone.
	var tables int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'latest'`).Scan(&tables); err != nil || tables == 0 {
		return
	}
	start := time.Now()
	var jobs int
	if err := db.QueryRow(`SELECT sum(n) FROM (SELECT state, count(*) AS n FROM latest GROUP BY state)`).Scan(&jobs); err != nil || jobs != lines {
		b.Fatalf("latest by state: %d jobs, %v", jobs, err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "latest-by-state-s")
	b.Logf("%d jobs, SELECT state, count(*) FROM latest GROUP BY state: %v", lines, time.Since(start).Round(time.Microsecond))
}
