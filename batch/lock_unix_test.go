//go:build unix

package batch_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
)

// TestHoldRunLock is no test: run by the test below as a process of its
// own, it holds the lock of a run until its stdin closes.
func TestHoldRunLock(t *testing.T) {
	dir, token := os.Getenv("BATCH_LOCK_DIR"), os.Getenv("BATCH_LOCK_TOKEN")
	if dir == "" {
		t.Skip("run by TestALiveProcessIsNeverTakenForGoneHoweverLongItIsSuspended")
	}
	unlock := batch.LockRun(dir, token)
	defer unlock()
	os.Stdout.WriteString("locked\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// A worker whose process lives is never taken for gone by another process
// of its machine, however old its heartbeat: here its process is stopped
// (SIGSTOP, as a closed laptop lid or a long pause) and its heartbeat is an
// hour old. Once killed, its claim is taken over at once.
func TestALiveProcessIsNeverTakenForGoneHoweverLongItIsSuspended(t *testing.T) {
	const op = "image/text-to-image"
	f := newFixture(t)
	f.write(t, imageJobs(1)...)
	run := f.leaveClaimed(t)
	f.srv.Reset()

	holder := exec.Command(os.Args[0], "-test.run=^TestHoldRunLock$")
	holder.Env = append(os.Environ(), "BATCH_LOCK_DIR="+batch.LockFolder(f.store), "BATCH_LOCK_TOKEN="+run)
	stdin, err := holder.StdinPipe()
	require.NoError(t, err)
	stdout, err := holder.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, holder.Start())
	defer func() { stdin.Close(); _ = holder.Process.Kill(); _ = holder.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)
	require.NoError(t, holder.Process.Signal(syscall.SIGSTOP))
	f.putHeartbeat(t, run, time.Now().Add(-time.Hour), "system", batch.ThisSystem(), "pid", holder.Process.Pid)

	plan, sum, err := f.planAndRun(t, batch.Options{ResendUnknown: true})
	require.NoError(t, err)
	assert.Zero(t, f.srv.Count(op), "nothing sent while its worker lives")
	assert.Zero(t, plan.Calls[op])
	assert.Equal(t, 1, sum.Elsewhere, "%+v", sum)
	st, err := batch.ReadStatus(t.Context(), f.store, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, st.InFlight)

	require.NoError(t, holder.Process.Kill())
	_ = holder.Wait()
	sum, err = f.run(t, batch.Options{ResendUnknown: true})
	require.NoError(t, err)
	assert.Equal(t, 1, f.srv.Count(op), "taken over at once once its process is gone")
	assert.Equal(t, 1, sum.Done, "%+v", sum)
}
