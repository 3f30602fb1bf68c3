//go:build unix

package pgledger

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/batch/pgledger/pgproxy"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
	"github.com/creativegen/creative-go/creativetest"
)

// Two workers run many small jobs on one PostgreSQL ledger under a tiny
// cap, through a proxy that cuts their connections around commits, one of
// them cancelled at a random moment; then each runs again without faults.
// At the server: no job paid twice (nothing is resent without
// ResendUnknown), no more calls than the cap and than the ledger took;
// every job reported done is done in the ledger, with its files.
func TestAttackWorkersUnderATinyCapWithCutsPayEachJobOnce(t *testing.T) {
	rnd := seeded(t, 2)

	const jobs, maxCalls = 80, 25
	srv := pgtest.Shared(t)
	url := srv.Database(t)
	p, err := pgproxy.New(srv.Addr())
	require.NoError(t, err)
	defer func() { _ = p.Close() }()
	purl, err := p.URL(url)
	require.NoError(t, err)

	fake := creativetest.Start(t)
	c := fake.Client(creative.WithRetryWait(time.Millisecond, 2*time.Millisecond))
	dir := t.TempDir()
	var lines []string
	for i := range jobs {
		lines = append(lines, fmt.Sprintf(`{"op":"image/text-to-image","prompt":"job %d"}`, i))
	}
	jobsFile := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobsFile, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	store := ledgertest.NewFiles()

	var emu sync.Mutex
	reported := map[string]batch.State{} // the last end reported of each job
	open := func() *Ledger {
		l, err := Open(t.Context(), purl)
		require.NoError(t, err)
		l.DB().SetMaxOpenConns(1)
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	ledgers := []*Ledger{open(), open()}
	run := func(ctx context.Context, l *Ledger, worker string) (batch.Summary, error) {
		r, err := batch.New(c, l, store, batch.Options{Concurrency: 8, Base: dir, Worker: worker, Lease: 6 * time.Second,
			Budget: batch.Budget{MaxCalls: maxCalls}, OnEvent: func(e batch.Event) {
				if e.Type == batch.JobEnded {
					emu.Lock()
					reported[e.Record.Job] = e.Record.State
					emu.Unlock()
				}
			}})
		require.NoError(t, err)
		checked, err := r.Check(context.Background(), batch.File(jobsFile))
		require.NoError(t, err)
		return r.Run(ctx, checked)
	}

	stop := cutAtRandom(p, rnd, 10, 60, false, 4)
	var wg sync.WaitGroup
	for i, l := range ledgers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if i == 0 {
				time.AfterFunc(time.Duration(rnd(400))*time.Millisecond, cancel)
			}
			start := time.Now()
			sum, err := run(ctx, l, fmt.Sprintf("w%d", i))
			require.Less(t, time.Since(start), time.Minute, "worker %d hung", i)
			t.Logf("worker %d: %+v, %v", i, sum, err)
		})
	}
	wg.Wait()
	stop()
	p.CutCommit(0, 0)
	for i, l := range ledgers {
		sum, err := run(context.Background(), l, fmt.Sprintf("w%d again", i))
		t.Logf("worker %d again: %+v, %v", i, sum, err)
	}

	// At the server: each job at most once, within the cap.
	perJob := map[string]int{}
	total := 0
	for _, req := range fake.Requests() {
		if req.Operation != "image/text-to-image" {
			continue
		}
		var body struct {
			Prompt string `json:"prompt"`
		}
		require.NoError(t, json.Unmarshal(req.JSON, &body))
		perJob[body.Prompt]++
		total++
	}
	for prompt, n := range perJob {
		require.Equal(t, 1, n, "%q paid %d times", prompt, n)
	}
	require.LessOrEqual(t, total, maxCalls)
	st, err := ledgers[0].Status(context.Background())
	require.NoError(t, err)
	require.LessOrEqual(t, int64(total), st.Budget.Calls, "the ledger took a share of every call sent")
	require.LessOrEqual(t, st.Budget.Calls, int64(maxCalls))

	// Every job reported done is done in the ledger, with its files.
	done := ledgertest.RequireDoneRecorded(t, ledgers[0], store, reported)
	t.Logf("calls %d, ledger's shares %d, done %d, states %v, proxy %+v", total, st.Budget.Calls, done, st.States, p.Stats())
}
