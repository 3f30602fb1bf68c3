package cli

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/cmd/creative/internal/s3test"
	"github.com/creativegen/creative-go/creativetest"
)

var budgetLine = regexp.MustCompile(`(?m)^budget: (\d+) of (\d+) calls taken, (\d+) left$`)

// TestFleetBudgetIsNeverExceeded: three worker processes share one ledger
// in a real S3 bucket and one budget of 40 calls for 150 jobs; each is
// killed (SIGKILL) once at a random moment and started again. The calls
// that reach the service, counted there, never exceed the budget; kills
// can only leave a share taken and unused; every worker says the budget
// is spent; batch status shows it all taken; and a new run on the spent
// budget sends nothing.
func TestFleetBudgetIsNeverExceeded(t *testing.T) {
	const jobs, budget, workers, concurrency = 150, 40, 3, 3
	srv := s3test.Start(t)
	bin := buildCLI(t)
	fake := creativetest.NewServer(creativetest.WithLatency(100 * time.Millisecond))
	defer fake.Close()
	calls := newSends(t, fake.URL)

	jobsURL, out := putSpeechJobs(t, srv, "budget", jobs)

	// The workers share a bucket for their outputs, and a ledger on this
	// machine.
	baseEnv := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CREATIVE_ACCESS_KEY=" + fake.AccessKey,
		"CREATIVE_LEDGER=" + t.TempDir()}, srv.Env()...)
	start := func(name string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bin, "batch", jobsURL, "--out", out, "--concurrency", strconv.Itoa(concurrency), "--max-calls", strconv.Itoa(budget))
		cmd.Env = append(baseEnv, "CREATIVE_BASE_URL="+calls.front(t, name))
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd, &stderr
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)

	var wg sync.WaitGroup
	said := make([]string, workers)
	for w := range workers {
		killAt := 150*time.Millisecond + time.Duration(rng.Int64N(int64(600*time.Millisecond)))
		wg.Go(func() {
			first, _ := start(fmt.Sprintf("worker %d", w+1))
			time.Sleep(killAt)
			killed := first.Process.Signal(syscall.SIGKILL) == nil
			_ = first.Wait()
			second, stderr := start(fmt.Sprintf("worker %d again", w+1))
			_ = second.Wait()
			said[w] = fmt.Sprintf("worker %d (killed at %v: %v): %s", w+1, killAt.Round(time.Millisecond), killed, stderr)
			if !strings.Contains(stderr.String(), "is spent (it counts every run on this ledger: raise --max-") {
				t.Errorf("worker %d again did not say the budget is spent: %s", w+1, stderr)
			}
		})
	}
	wg.Wait()

	sent := 0
	for prompt, by := range calls.take() {
		if len(by) > 1 {
			t.Errorf("%s was sent %d times, by %q", prompt, len(by), by)
		}
		sent += len(by)
	}
	for _, s := range said {
		t.Log(s)
	}
	cmd := exec.Command(bin, "batch", "status", "--out", out)
	cmd.Env = baseEnv
	st, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", st)
	t.Logf("%d calls reached the service of a budget of %d; status:\n%s", sent, budget, st)
	require.LessOrEqual(t, sent, budget, "the budget was exceeded")
	require.GreaterOrEqual(t, sent, budget-workers*concurrency, "more shares were lost than the kills could leave unused")
	m := budgetLine.FindStringSubmatch(string(st))
	require.NotNil(t, m, "batch status shows the budget: %s", st)
	assert.Equal(t, []string{strconv.Itoa(budget), strconv.Itoa(budget), "0"}, m[1:])

	// A new run on the spent budget sends nothing.
	again, stderr := start("after")
	err = again.Wait()
	assert.Equal(t, 1, again.ProcessState.ExitCode(), "%v: %s", err, stderr)
	assert.Contains(t, stderr.String(), "is spent (it counts every run on this ledger: raise --max-")
	assert.Empty(t, calls.take(), "a run on a spent budget sent calls")
}

// --max-spend with prices by flag and from a file: what the service counts,
// priced, stays within the cap, and batch status shows what is left.
func TestBatchMaxSpendPricesFromFlagsAndAFile(t *testing.T) {
	srv, env := fakeEnv(t)
	dir := t.TempDir()
	var lines strings.Builder
	for i := range 6 {
		fmt.Fprintf(&lines, `{"op":"image/text-to-image","prompt":"image %d"}`+"\n", i)
		fmt.Fprintf(&lines, `{"op":"audio/text-to-speech","prompt":"speech %d","voiceId":"female 1"}`+"\n", i)
	}
	jobs := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(lines.String()), 0o644))
	out := filepath.Join(dir, "out")

	code, _, stderr := runCLI(t, env, "batch", jobs, "--out", out, "--concurrency", "1", "--max-spend", "0.2",
		"--price", "image/text-to-image=0.04", "--price", "audio/text-to-speech=0.01")
	assert.Equal(t, 1, code, stderr)
	assert.Regexp(t, `the cap of 0\.2 to spend is spent \([0-9.]+ taken; it counts every run on this ledger: raise --max-spend or use a new ledger\)`, stderr)
	images, speech := srv.Count("image/text-to-image"), srv.Count("audio/text-to-speech")
	spent := float64(images)*0.04 + float64(speech)*0.01
	assert.LessOrEqual(t, spent, 0.2+1e-9, "%d images, %d speeches", images, speech)
	assert.Greater(t, spent, 0.2-0.04-1e-9, "%d images, %d speeches", images, speech)

	code, stdout, stderr := runCLI(t, env, "batch", "status", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, fmt.Sprintf("budget: %s of 0.2 spent, %s left", amount(spent), amount(0.2-spent)))

	// The same cap from a file of prices, raised: the rest is sent.
	prices := filepath.Join(dir, "prices.txt")
	require.NoError(t, os.WriteFile(prices, []byte("# per call\nimage/text-to-image = 0.04\naudio/text-to-speech=0.01 # speech\n"), 0o644))
	code, _, stderr = runCLI(t, env, "batch", jobs, "--out", out, "--max-spend", "1", "--prices", prices)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 6, srv.Count("image/text-to-image"))
	assert.Equal(t, 6, srv.Count("audio/text-to-speech"))

	for _, bad := range [][]string{
		{"--max-spend", "1"},
		{"--price", "image/text-to-image=0.04"},
		{"--max-spend", "1", "--price", "image/text-to-image"},
		{"--max-spend", "1", "--price", "image/no-such-op=1"},
		{"--max-calls", "-1"},
	} {
		code, _, stderr := runCLI(t, env, append([]string{"batch", jobs, "--out", filepath.Join(dir, "bad")}, bad...)...)
		assert.Equal(t, 2, code, "%v: %s", bad, stderr)
	}
	assert.NoDirExists(t, filepath.Join(dir, "bad"))

	// One operation priced twice, on the command line and in a file or
	// twice in a file, is refused before anything is sent, naming both.
	twice := filepath.Join(dir, "twice.txt")
	require.NoError(t, os.WriteFile(twice, []byte("image/text-to-image=0.04\n*=0.02\nimage/text-to-image=0.05\n"), 0o644))
	srv.Reset()
	for bad, want := range map[string][]string{
		"--price image/text-to-image=0.03": {"image/text-to-image is priced twice, by --price image/text-to-image=0.03 and by " + prices + ":2"},
		"":                                 {"image/text-to-image is priced twice, by " + twice + ":1 and by " + twice + ":3"},
	} {
		file := prices
		if bad == "" {
			file = twice
		}
		args := []string{"batch", jobs, "--out", filepath.Join(dir, "twice"), "--max-spend", "1", "--prices", file}
		if bad != "" {
			args = append(args, strings.Fields(bad)...)
		}
		code, _, stderr := runCLI(t, env, args...)
		assert.Equal(t, 2, code, stderr)
		for _, w := range want {
			assert.Contains(t, stderr, w)
		}
	}
	assert.Empty(t, srv.Requests(), "nothing sent")
	// A default price for the operations not named.
	code, _, stderr = runCLI(t, env, "batch", jobs, "--out", filepath.Join(dir, "star"), "--max-spend", "0.05", "--price", "*=0.01")
	assert.Equal(t, 1, code, stderr)
	assert.Equal(t, 5, srv.Count("image/text-to-image")+srv.Count("audio/text-to-speech"), "0.05 at 0.01 a call")
}

// amount is an amount of money as batch status shows it: rounded to a
// millionth, with no trailing zeros.
func amount(v float64) string { return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64) }
