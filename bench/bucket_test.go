//go:build linux

package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkBatchBucket runs creative batch (the built command, handing
// itself over to creative-cloud for the bucket) on a jobs file of
// BENCH_BUCKET_LINES image jobs (default 1,000; the README gives 10,000),
// with --out in a real S3-compatible server (versitygw over a local
// folder) behind a proxy that adds BENCH_BUCKET_MS milliseconds (default
// 20) to every request, as a cloud bucket a region away would, and counts
// them, the ledger in SQLite in a local folder (--ledger); then the same
// with --out a local folder. For
// each of run, rerun (every job done) and batch status it reports the wall
// time and the bucket's requests a job (the run's output writes counted
// apart). BENCH_BUCKET_FAST_RUN=1 makes the proxy add nothing during the
// first run, so that a large ledger is built quickly and only the rerun
// and status pay the latency. The service is an instant server here.
func BenchmarkBatchBucket(b *testing.B) {
	lines := envInt("BENCH_BUCKET_LINES", 1000)
	latency := time.Duration(envInt("BENCH_BUCKET_MS", 20)) * time.Millisecond
	versitygw, err := exec.LookPath("versitygw")
	if err != nil {
		b.Skip("versitygw not found on PATH (bash .ci/run installs it)")
	}
	dir := b.TempDir()
	bin := buildCreative(b, dir)
	jobs := filepath.Join(dir, "jobs.jsonl")
	writeImageJobs(b, jobs, lines)
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, pngAnswer)
	}))
	defer service.Close()
	s3 := startVersitygw(b, versitygw, filepath.Join(dir, "s3"))
	proxy := newSlowProxy(b, s3, latency)
	env := append(os.Environ(), "CREATIVE_BASE_URL="+service.URL, "CREATIVE_ACCESS_KEY="+key,
		"AWS_ACCESS_KEY_ID=bench-access", "AWS_SECRET_ACCESS_KEY=bench-secret-0123456789", "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE="+filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "none"))
	fast := os.Getenv("BENCH_BUCKET_FAST_RUN") == "1"

	for i := range b.N {
		for _, ledger := range []struct{ name, out string }{
			{"bucket", fmt.Sprintf("s3://creative/run%d?endpoint=%s&use_path_style=true&region=us-east-1", i, proxy.url)},
			{"local", filepath.Join(dir, "out"+strconv.Itoa(i))},
		} {
			// The bucket holds the outputs; the ledger is local (SQLite).
			ledgerDir := filepath.Join(dir, "ledger-"+ledger.name+strconv.Itoa(i))
			for _, phase := range []struct {
				name string
				args []string
			}{
				{"run", []string{"batch", jobs, "--out", ledger.out, "--ledger", ledgerDir, "--concurrency", strconv.Itoa(batchConcurrency)}},
				{"rerun", []string{"batch", jobs, "--out", ledger.out, "--ledger", ledgerDir, "--concurrency", strconv.Itoa(batchConcurrency)}},
				{"status", []string{"batch", "status", "--out", ledger.out, "--ledger", ledgerDir}},
			} {
				proxy.slow.Store(!(fast && phase.name == "run"))
				proxy.take()
				cmd := exec.Command(bin, phase.args...)
				cmd.Env = env
				start := time.Now()
				out, err := cmd.CombinedOutput()
				took := time.Since(start)
				if err != nil {
					b.Fatalf("%s %s: %v\n%s", ledger.name, phase.name, err, out)
				}
				counts := proxy.take()
				total := 0
				for k, n := range counts {
					if k != "OUTPUT" {
						total += n
					}
				}
				name := ledger.name + "-" + phase.name
				b.ReportMetric(took.Seconds(), name+"-s")
				if ledger.name == "bucket" {
					b.ReportMetric(float64(total)/float64(lines), name+"-req/job")
					b.Logf("%d jobs, %s: %v, %.3f bucket requests a job %v (latency %v)", lines, name, took.Round(time.Millisecond),
						float64(total)/float64(lines), counts, map[bool]time.Duration{true: latency}[proxy.slow.Load()])
				} else {
					b.Logf("%d jobs, %s: %v", lines, name, took.Round(time.Millisecond))
				}
			}
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// buildCreative builds creative and creative-cloud into dir.
func buildCreative(b *testing.B, dir string) string {
	b.Helper()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), ".", "./creative-cloud")
	cmd.Dir = "../cmd/creative"
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "creative")
}

func writeImageJobs(b *testing.B, path string, lines int) {
	b.Helper()
	f, err := os.Create(path)
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
}

// startVersitygw starts versitygw over root, with one bucket, "creative",
// on 127.0.0.1, stopped when the benchmark ends; it returns its URL.
func startVersitygw(b *testing.B, bin, root string) string {
	b.Helper()
	if err := os.MkdirAll(filepath.Join(root, "creative"), 0o755); err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--access", "bench-access", "--secret", "bench-secret-0123456789", "--port", addr, "posix", root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return "http://" + addr
		}
	}
	b.Fatalf("versitygw did not listen on %s", addr)
	return ""
}

// A slowProxy is the bucket a region away: it reads each request's body,
// counts the request by kind (LIST, GET, HEAD, PUT, OUTPUT for the puts of
// outputs, DELETE, POST), waits, then hands it on.
type slowProxy struct {
	url     string
	latency time.Duration
	slow    atomic.Bool
	mu      sync.Mutex
	counts  map[string]int
}

func newSlowProxy(b *testing.B, target string, latency time.Duration) *slowProxy {
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	p := &slowProxy{latency: latency, counts: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 256}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		p.count(r)
		if p.slow.Load() {
			time.Sleep(p.latency)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *slowProxy) count(r *http.Request) {
	kind := r.Method
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3) // bucket, run, key
	key := ""
	if len(parts) == 3 {
		key = parts[2]
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Has("list-type"):
		kind = "LIST"
	case r.Method == http.MethodPut && strings.HasSuffix(key, ".png"):
		kind = "OUTPUT"
	}
	p.mu.Lock()
	p.counts[kind]++
	p.mu.Unlock()
}

func (p *slowProxy) take() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts
	p.counts = map[string]int{}
	return c
}
