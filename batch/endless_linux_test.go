package batch_test

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
)

// endlessEnv makes the test binary run the endlessAnswer answers themselves, in a
// process of their own whose peak RSS the parent reads.
const endlessEnv = "CREATIVE_TEST_ENDLESS_CHILD"

// Eight answers that never end, at concurrency 8, with the defaults: the
// process stays under 1 GiB (it took 4.46 GB when each answer grew on its
// own), and no job is called done.
func TestEightEndlessAnswersStayUnderAGiB(t *testing.T) {
	if os.Getenv(endlessEnv) == "1" {
		endlessRun(t)
		return
	}
	if raceDetector {
		t.Skip("the race detector multiplies the memory of the program it watches")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEightEndlessAnswersStayUnderAGiB$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), endlessEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "endlessAnswer: 0 done of 8", "the child ran the answers: %s", out)
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	t.Logf("peak RSS of eight endlessAnswer answers at concurrency 8: %d MiB", peak>>20)
	assert.Less(t, peak, int64(1<<30), "peak RSS")
}

func endlessRun(t *testing.T) {
	f := newFixture(t)
	f.srv.Handle("image/text-to-image", endlessAnswer)
	f.write(t, imageJobs(8)...)
	sum, err := f.run(t, batch.Options{Concurrency: 8})
	require.NoError(t, err)
	t.Logf("endlessAnswer: %d done of %d: %+v", sum.Done, sum.Jobs, sum)
}

// endlessAnswer answers an image call with an envelope whose base64 never ends,
// without a Content-Length, until the caller goes away.
func endlessAnswer(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if _, err := io.WriteString(w, `{"success":true,"data":[{"base64":"`); err != nil {
		return
	}
	chunk := strings.Repeat("QUFB", 16<<10)
	for r.Context().Err() == nil {
		if _, err := io.WriteString(w, chunk); err != nil {
			return
		}
	}
}
