package cli

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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/cmd/creative/internal/batchcmd"
	"github.com/creativegen/creative-go/cmd/creative/internal/bucket"
	"github.com/creativegen/creative-go/cmd/creative/internal/s3test"
	"github.com/creativegen/creative-go/creativetest"
)

// sends records which worker process sent each job: every process reaches
// the fake through a front of its own that notes the prompt of each call
// (its body read to the end) before handing it on.
type sends struct {
	mu   sync.Mutex
	by   map[string][]string // prompt -> the processes that sent it
	fake *url.URL
}

func newSends(t *testing.T, fake string) *sends {
	u, err := url.Parse(fake)
	require.NoError(t, err)
	return &sends{by: map[string][]string{}, fake: u}
}

// front starts the base URL of one worker process, named name.
func (s *sends) front(t *testing.T, name string) string {
	proxy := httputil.NewSingleHostReverseProxy(s.fake)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // a killed worker's calls end mid-way
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		var call struct{ Prompt string }
		if r.Method == http.MethodPost && json.Unmarshal(body, &call) == nil && call.Prompt != "" {
			s.mu.Lock()
			s.by[call.Prompt] = append(s.by[call.Prompt], name)
			s.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// take returns the sends so far and forgets them.
func (s *sends) take() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	by := s.by
	s.by = map[string][]string{}
	return by
}

var statusLine = regexp.MustCompile(`(?m)^(done|answered|failed|refused|unknown|claimed)\s+(\d+)$`)

// fleetStatus runs creative batch status on out and returns the count of
// each state.
func fleetStatus(t *testing.T, bin string, env []string, out string) map[string]int {
	t.Helper()
	cmd := exec.Command(bin, "batch", "status", "--out", out)
	cmd.Env = env
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	counts := map[string]int{}
	for _, m := range statusLine.FindAllStringSubmatch(string(b), -1) {
		counts[m[1]], _ = strconv.Atoi(m[2])
	}
	return counts
}

// TestFleetOfThreeWorkersKilledAndRestarted: three worker processes share
// one jobs file of 300 jobs and one --out, both in a real S3 bucket (each
// creative hands itself over to the creative-cloud built beside it); each
// is killed (SIGKILL) once at a random moment and started again. Every job
// is sent at most once, by one process; every job ends done except those
// in flight at a kill, which the ledger reports unknown; a rerun sends none
// of them, and --resend-unknown sends exactly those.
func TestFleetOfThreeWorkersKilledAndRestarted(t *testing.T) {
	const jobs, workers, concurrency = 300, 3, 3
	srv := s3test.Start(t)
	bin := buildCLI(t)
	fake := creativetest.NewServer(creativetest.WithLatency(100 * time.Millisecond))
	defer fake.Close()
	calls := newSends(t, fake.URL)

	jobsURL, out := putSpeechJobs(t, srv, "fleet", jobs)

	// The workers share a bucket for their outputs, and a ledger on this
	// machine.
	baseEnv := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CREATIVE_ACCESS_KEY=" + fake.AccessKey,
		"CREATIVE_LEDGER=" + t.TempDir()}, srv.Env()...)
	start := func(name string, args ...string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bin, append([]string{"batch", jobsURL, "--out", out, "--concurrency", strconv.Itoa(concurrency)}, args...)...)
		cmd.Env = append(baseEnv, "CREATIVE_BASE_URL="+calls.front(t, name))
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Start(); err != nil {
			t.Errorf("%s: %v", name, err) // and Wait reports it was not started
			return cmd, &stderr
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd, &stderr
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)

	began := time.Now()
	var wg sync.WaitGroup
	reports := make([]string, workers)
	for w := range workers {
		killAt := 300*time.Millisecond + time.Duration(rng.Int64N(int64(1500*time.Millisecond)))
		wg.Go(func() {
			first, _ := start(fmt.Sprintf("worker %d", w+1))
			time.Sleep(killAt) // the random moment of the kill
			if err := first.Process.Signal(syscall.SIGKILL); err != nil {
				t.Errorf("worker %d ended before its kill at %v: make the run longer", w+1, killAt)
			}
			_ = first.Wait()
			second, stderr := start(fmt.Sprintf("worker %d again", w+1))
			err := second.Wait()
			if code := second.ProcessState.ExitCode(); err != nil && code != 1 {
				t.Errorf("worker %d again: %v\n%s", w+1, err, stderr)
			}
			// Its log is named by the id of the process that ran the
			// batch: creative-cloud took creative's place, not a child's.
			if own := fmt.Sprintf("-%d.jsonl", second.Process.Pid); !strings.Contains(stderr.String(), own) {
				t.Errorf("worker %d again: no results/...%s, the process started: %s", w+1, own, stderr)
			}
			reports[w] = fmt.Sprintf("worker %d: killed after %v; started again: %s", w+1, killAt.Round(time.Millisecond), summaryLine(stderr.String()))
		})
	}
	wg.Wait()
	elapsed := time.Since(began)

	sent := calls.take()
	perProcess := map[string]int{}
	for prompt, by := range sent {
		if len(by) > 1 {
			t.Errorf("%s was sent %d times, by %q", prompt, len(by), by)
		}
		for _, p := range by {
			perProcess[p]++
		}
	}
	st := fleetStatus(t, bin, baseEnv, out)
	unknown := st["unknown"] + st["claimed"]
	t.Logf("%d jobs, %d calls, %.1fs; %v; ledger %v", jobs, len(sent), elapsed.Seconds(), perProcess, st)
	for _, r := range reports {
		t.Log(r)
	}
	require.Equal(t, jobs, st["done"]+unknown, "every job ends done or unknown: %v", st)
	require.LessOrEqual(t, unknown, workers*concurrency, "only the jobs in flight at the %d kills may be unknown", workers)
	require.LessOrEqual(t, len(sent)-st["done"], unknown, "every call not done belongs to an unknown job")

	// A rerun sends none of the unknown jobs; the flag sends exactly them.
	rerun, stderr := start("rerun")
	_ = rerun.Wait()
	require.Empty(t, calls.take(), "a rerun without the flag sent calls: %s", stderr)
	resend, stderr := start("resend", "--resend-unknown")
	require.NoError(t, resend.Wait(), "%s", stderr)
	require.Len(t, calls.take(), unknown, "--resend-unknown sends each unknown job once")
	require.Equal(t, map[string]int{"done": jobs}, fleetStatus(t, bin, baseEnv, out))
	require.Equal(t, jobs, outputs(t, out), "a speech file of every job in the bucket")
}

// summaryLine is the summary a run prints on stderr.
func summaryLine(stderr string) string {
	for line := range strings.Lines(stderr) {
		if strings.Contains(line, "; results in ") {
			return strings.TrimSpace(line)
		}
	}
	return stderr
}

// outputs counts the output files under out (the objects that are neither
// the ledger, a run's log, the contact sheet nor the name of the ledger),
// each stored with its
// job's id and operation as metadata and its media type.
func outputs(t *testing.T, out string) int {
	t.Helper()
	s, err := bucket.Open(t.Context(), out)
	require.NoError(t, err)
	defer s.Close()
	ids, n := map[string]bool{}, 0
	for key, err := range s.List(t.Context(), "") {
		require.NoError(t, err)
		if strings.HasPrefix(key, "ledger/") || strings.HasPrefix(key, "results/") || key == batch.IndexFile || key == batchcmd.OwnerKey {
			continue
		}
		meta, err := s.Metadata(t.Context(), key)
		require.NoError(t, err)
		require.Equal(t, "audio/text-to-speech", meta["op"], "%s: metadata %v", key, meta)
		require.Equal(t, "audio/mpeg", meta["content-type"], "%s: metadata %v", key, meta)
		require.True(t, strings.HasPrefix(key, meta["id"]), "%s: metadata %v names another job", key, meta)
		require.NotEmpty(t, meta["job"], "%s: metadata %v", key, meta)
		ids[meta["id"]] = true
		n++
	}
	require.Equal(t, len(ids), n, "one file per job")
	return n
}

// putSpeechJobs writes n speech jobs, ids job-000 on, as folder/jobs.jsonl
// in the bucket of srv, and returns that file's URL and the URL of an
// --out folder beside it.
func putSpeechJobs(t *testing.T, srv *s3test.Server, folder string, n int) (jobsURL, out string) {
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, `{"op":"audio/text-to-speech","id":"job-%03d","prompt":"job-%03d","voiceId":"female 1"}`+"\n", i, i)
	}
	store, err := bucket.Open(t.Context(), srv.URL(folder))
	require.NoError(t, err)
	w, err := store.NewWriter(t.Context(), "jobs.jsonl", nil)
	require.NoError(t, err)
	_, err = io.WriteString(w, lines.String())
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, store.Close())
	return srv.URL(folder + "/jobs.jsonl"), srv.URL(folder + "/out")
}
