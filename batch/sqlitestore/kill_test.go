//go:build unix

package sqlitestore

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
)

// A child process of the kill tests runs a batch into a folder, as
// creative batch does, or opens a folder whose ledger is of version 1,
// until the test kills it.
func TestMain(m *testing.M) {
	if dir := os.Getenv("SQLITESTORE_CHILD_UPGRADE"); dir != "" {
		upgrading = func() {
			fmt.Println("upgrading")
			select {} // until killed, the transaction open
		}
		_, err := Open(dir)
		fmt.Fprintln(os.Stderr, "opened:", err)
		os.Exit(1)
	}
	if jobs := os.Getenv("SQLITESTORE_CHILD_JOBS"); jobs != "" {
		os.Exit(child(jobs, os.Getenv("SQLITESTORE_CHILD_OUT"), os.Getenv("SQLITESTORE_CHILD_URL")))
	}
	os.Exit(m.Run())
}

func child(jobs, out, url string) int {
	c, err := creative.New(creative.WithBaseURL(url), creative.WithAccessKey("kill-test-key"))
	if err == nil {
		var s *Store
		if s, err = Open(out); err == nil {
			var r *batch.Runner
			if r, err = batch.New(c, s, batch.Options{Concurrency: 8, Base: filepath.Dir(jobs)}); err == nil {
				_, err = checkAndRun(r, batch.File(jobs))
			}
			s.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Twenty runs in child processes, each killed (SIGKILL) as its requests
// arrive, with claims and ends being committed at that moment; then a run
// to the end. No job is paid twice, the database is whole, and a job whose
// request arrived is done or left claimed, never sent again.
func TestRunsKilledDuringCommitsPayForNoJobTwice(t *testing.T) {
	const jobs, rounds = 240, 20
	var mu sync.Mutex
	sent := map[string]int{}
	arrived := make(chan struct{}, jobs*2)
	prompt := regexp.MustCompile(`"prompt":"([^"]*)"`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if m := prompt.FindSubmatch(body); m != nil {
			mu.Lock()
			sent[string(m[1])]++
			mu.Unlock()
		}
		arrived <- struct{}{}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"success":true,"data":[{"base64":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}]}`)
	}))
	defer srv.Close()
	path := lines(t, jobs, "image/text-to-image")
	out := t.TempDir()

	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "SQLITESTORE_CHILD_JOBS="+path, "SQLITESTORE_CHILD_OUT="+out, "SQLITESTORE_CHILD_URL="+srv.URL)
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// Killed as its (3 + round % 5)th request of the round arrives.
		killAt := 3 + round%5
		for n := 0; n < killAt; n++ {
			select {
			case <-arrived:
			case err := <-done:
				t.Fatalf("round %d: the child ended before it was killed: %v", round, err)
			case <-time.After(30 * time.Second):
				t.Fatalf("round %d: no request arrived", round)
			}
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		<-done
	}
	drain(arrived)

	s := openT(t, out)
	var check string
	require.NoError(t, s.db.QueryRow(`PRAGMA integrity_check`).Scan(&check))
	assert.Equal(t, "ok", check)
	before := copyCounts(&mu, sent)
	c, err := creative.New(creative.WithBaseURL(srv.URL), creative.WithAccessKey("kill-test-key"))
	require.NoError(t, err)
	sum, err := runIn(t, c, s, path, batch.Options{Concurrency: 8})
	require.NoError(t, err)
	after := copyCounts(&mu, sent)
	for p, n := range after {
		assert.Equal(t, 1, n, "%s was paid %d times", p, n)
		if before[p] > 0 {
			assert.Equal(t, before[p], n, "%s arrived before the last run, and was sent again", p)
		}
	}
	assert.Equal(t, jobs, sum.Done+sum.DoneBefore+sum.Claimed, "%+v", sum)
	assert.Equal(t, len(after)-len(before), sum.Done, "the last run sent each job it did once: %+v", sum)
	t.Logf("%d jobs: %d sent in %d killed runs, %d left claimed (maybe paid), %d done by the last run", jobs, len(before), rounds, sum.Claimed, sum.Done)
}

func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func copyCounts(mu *sync.Mutex, m map[string]int) map[string]int {
	mu.Lock()
	defer mu.Unlock()
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// A process killed while it brings a ledger of version 1 to version 2
// leaves version 1 as it was, which the next open brings to version 2.
func TestAnUpgradeKilledHalfWayLeavesVersion1(t *testing.T) {
	dir, _, _, want := v1Ledger(t, true)
	db := rawDB(t, filepath.Join(dir, DBFile))
	before := views(t, db)
	require.NoError(t, db.Close())

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SQLITESTORE_CHILD_UPGRADE="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the child ended before its upgrade: %s", stderr.String())
	require.Equal(t, "upgrading\n", line)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	db = rawDB(t, filepath.Join(dir, DBFile))
	assert.EqualValues(t, 1, pragma(t, db, "user_version"))
	assert.Equal(t, before, views(t, db), "version 1 as it was")
	var check string
	require.NoError(t, db.QueryRow(`PRAGMA integrity_check`).Scan(&check))
	assert.Equal(t, "ok", check)
	require.NoError(t, db.Close())

	s := openT(t, dir)
	assert.EqualValues(t, 2, pragma(t, s.db, "user_version"))
	for key, data := range want {
		got, err := s.Get(t.Context(), key)
		require.NoError(t, err, key)
		assert.Equal(t, data, string(got), key)
	}
	assert.Equal(t, before, views(t, s.db))
}
