//go:build unix

package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
)

// A batch whose only job waits a minute before its retry (the service said
// 429, Retry-After: 60) has nothing in flight: SIGTERM ends it at once, not
// after its --grace, the job refused (a rerun sends it), never maybe paid.
func TestABatchWaitingBeforeARetryEndsAtOnceOnSIGTERM(t *testing.T) {
	bin := buildCLI(t)
	var calls atomic.Int32
	arrived := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls.Add(1)
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
		arrived <- struct{}{}
	}))
	defer srv.Close()
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(`{"op":"audio/text-to-music","prompt":"tune","id":"tune"}`+"\n"), 0o644))
	out := filepath.Join(dir, "out")
	cmd, stderr := startCLI(t, bin, map[string]string{"CREATIVE_BASE_URL": srv.URL, "CREATIVE_ACCESS_KEY": cliKey},
		"--grace", "10s", "batch", jobs, "--out", out)
	waitFor(t, arrived, "the call to arrive")
	code, took := sigterm(t, cmd)
	t.Logf("batch waiting before a retry: SIGTERM to exit %v, status %d", took, code)
	assert.Equal(t, exitInterrupt, code, stderr.String())
	assert.Less(t, took, 5*time.Second, "not the 10 s grace: %s", stderr.String())
	assert.Equal(t, int32(1), calls.Load(), "the retry was not sent")
	states := map[string]batch.State{}
	for _, r := range readResults(t, out) {
		states[r.ID] = r.State
	}
	assert.Equal(t, map[string]batch.State{"tune": batch.Refused}, states)
}
