package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/creativetest"
)

// Three workers started at once on one fresh folder all run: none refuses
// the ledger another is making, every job is paid once (counted at the
// service), and each job's file is written once, with no file kept aside
// (<name>.earlier-1.*) from the fleet's own writes.
func TestWorkersStartingTogetherOnAFreshFolderAllRun(t *testing.T) {
	const jobs, workers = 60, 3
	bin := buildCLI(t)
	srv := creativetest.NewServer(creativetest.WithLatency(20 * time.Millisecond))
	defer srv.Close()
	path := writeJobs(t, jobs)
	out := filepath.Join(t.TempDir(), "out")
	env := append(os.Environ(), "CREATIVE_BASE_URL="+srv.URL, "CREATIVE_ACCESS_KEY="+srv.AccessKey)
	start := make(chan struct{})
	var wg sync.WaitGroup
	codes, stderrs := make([]int, workers), make([]string, workers)
	for w := range workers {
		wg.Go(func() {
			cmd := exec.Command(bin, "batch", path, "--out", out, "--concurrency", "4")
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			<-start
			_ = cmd.Run()
			codes[w], stderrs[w] = cmd.ProcessState.ExitCode(), stderr.String()
		})
	}
	close(start)
	wg.Wait()
	for w := range workers {
		// 1 is a worker that ended while another still had jobs in flight.
		assert.Contains(t, []int{0, 1}, codes[w], "worker %d: %s", w, stderrs[w])
		assert.NotContains(t, stderrs[w], "earlier runs", "worker %d", w)
	}
	assert.Equal(t, jobs, srv.Count("image/text-to-image"), "every job paid once")
	es, err := os.ReadDir(out)
	require.NoError(t, err)
	images := 0
	for _, e := range es {
		assert.NotContains(t, e.Name(), ".earlier-", "a file kept aside")
		if strings.HasSuffix(e.Name(), ".png") {
			images++
		}
	}
	assert.Equal(t, jobs, images, "one file a job")
	code, stdout, stderr := runCLI(t, nil, "batch", "status", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "done      60")
}
