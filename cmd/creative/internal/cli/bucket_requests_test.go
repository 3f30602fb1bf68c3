package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/cmd/creative/internal/batchcmd"
	"github.com/creativegen/creative-go/cmd/creative/internal/s3test"
	"github.com/creativegen/creative-go/creativetest"
)

// An s3Counter is a front of the test's S3 server that counts the requests
// that reach it, each once its body was read to the end, by kind: LIST,
// GET, HEAD, PUT (OUTPUT for the objects outside the ledger that a run
// writes as its outputs), DELETE, POST.
type s3Counter struct {
	srv    *s3test.Server
	front  string
	prefix string // of the batch's keys in the bucket's paths
	mu     sync.Mutex
	counts map[string]int
}

func newS3Counter(t *testing.T, srv *s3test.Server, prefix string) *s3Counter {
	u, err := url.Parse(srv.Endpoint)
	require.NoError(t, err)
	c := &s3Counter{srv: srv, prefix: "/creative/" + prefix + "/", counts: map[string]int{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		c.count(r)
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	c.front = front.URL
	return c
}

func (c *s3Counter) count(r *http.Request) {
	kind := r.Method
	key := strings.TrimPrefix(r.URL.Path, c.prefix)
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Has("list-type"):
		kind = "LIST"
	case r.Method == http.MethodPut && !strings.HasPrefix(key, "ledger/") && !strings.HasPrefix(key, "results/") &&
		key != "index.html" && key != batchcmd.OwnerKey && !strings.HasPrefix(key, ".creative-probe/"):
		kind = "OUTPUT"
	}
	c.mu.Lock()
	c.counts[kind]++
	c.mu.Unlock()
}

// take returns the counts so far and their total without outputs, and
// forgets them.
func (c *s3Counter) take() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts, total := c.counts, 0
	c.counts = map[string]int{}
	for k, n := range counts {
		if k != "OUTPUT" {
			total += n
		}
	}
	return counts, total
}

// url names the batch's place through the counting front.
func (c *s3Counter) url() string {
	return fmt.Sprintf("s3://creative/%s?endpoint=%s&use_path_style=true&region=us-east-1", strings.Trim(c.prefix, "/")[len("creative/"):], c.front)
}

// TestABucketHoldsOutputsOnly: a run on a bucket --out writes each output
// once and reads nothing that grows with the jobs but a check that each
// done job's file is still there on a rerun; the ledger is elsewhere
// (--ledger), so batch status asks the bucket nothing but whether an
// earlier version's ledger is in it and which ledger it names: the
// server's own count, through a front that counts each request.
func TestABucketHoldsOutputsOnly(t *testing.T) {
	const runCosts = 20
	const jobs = 300
	srv := s3test.Start(t)
	bin := buildCLI(t)
	fake := creativetest.NewServer()
	defer fake.Close()
	counter := newS3Counter(t, srv, "requests/out")

	dir := t.TempDir()
	var lines strings.Builder
	for i := range jobs {
		if i%2 == 0 {
			fmt.Fprintf(&lines, `{"op":"image/text-to-image","prompt":"image %d"}`+"\n", i)
		} else {
			fmt.Fprintf(&lines, `{"op":"audio/text-to-speech","prompt":"speech %d","voiceId":"female 1"}`+"\n", i)
		}
	}
	jobsFile := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobsFile, []byte(lines.String()), 0o644))
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CREATIVE_ACCESS_KEY=" + fake.AccessKey,
		"CREATIVE_BASE_URL=" + fake.URL, "CREATIVE_LEDGER=" + t.TempDir()}, srv.Env()...)
	run := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}

	out := run("batch", jobsFile, "--out", counter.url(), "--concurrency", "16")
	counts, total := counter.take()
	t.Logf("run: %v: %.2f requests a job besides %d outputs\n%s", counts, float64(total)/jobs, counts["OUTPUT"], out)
	assert.Equal(t, jobs, counts["OUTPUT"], "one write of each output")
	assert.LessOrEqual(t, total-counts["OUTPUT"], runCosts, "requests besides the outputs: %v", counts)

	out = run("batch", jobsFile, "--out", counter.url(), "--concurrency", "16")
	assert.Contains(t, out, fmt.Sprintf("%d done (%d before this run)", jobs, jobs))
	counts, total = counter.take()
	t.Logf("rerun: %v: %.3f requests a job", counts, float64(total)/jobs)
	assert.Zero(t, counts["OUTPUT"], "nothing written again: %v", counts)
	assert.LessOrEqual(t, float64(total)/jobs, 1.05, "a check of each done job's file: %v", counts)

	out = run("batch", "status", "--out", counter.url())
	assert.Contains(t, out, fmt.Sprintf("done      %d", jobs))
	counts, total = counter.take()
	t.Logf("status: %v", counts)
	assert.LessOrEqual(t, total, 2, "%v", counts)

	var st struct {
		Jobs   int            `json:"jobs"`
		States map[string]int `json:"states"`
	}
	require.NoError(t, json.Unmarshal([]byte(run("batch", "status", "--out", counter.url(), "--json")), &st))
	assert.Equal(t, jobs, st.States["done"])
	_, total = counter.take()
	assert.LessOrEqual(t, total, 2)
}
