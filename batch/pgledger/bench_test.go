//go:build unix

package pgledger

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/pgledger/pgproxy"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

// BenchmarkFleetLedger runs what a run asks of the ledger for
// PGLEDGER_BENCH_JOBS jobs (default 1,000) at a concurrency of 64, with an
// instant service, through a proxy that adds 20 ms to every round trip:
// each job claimed, then its answer recorded done; then a rerun's reads
// of every job's last attempt (Last, 500 a call) and a Status. It reports
// the round trips a job and the wall time of each phase.
func BenchmarkFleetLedger(b *testing.B) {
	jobs := 1000
	if s := os.Getenv("PGLEDGER_BENCH_JOBS"); s != "" {
		jobs, _ = strconv.Atoi(s)
	}
	const concurrency, delay = 64, 20 * time.Millisecond
	srv := pgtest.Shared(b)
	for range b.N {
		url := srv.Database(b)
		p, err := pgproxy.New(srv.Addr())
		if err != nil {
			b.Fatal(err)
		}
		purl, _ := p.URL(url)
		p.SetDelay(delay)
		l, err := Open(b.Context(), purl)
		if err != nil {
			b.Fatal(err)
		}
		tok := newToken()
		s, err := l.Begin(b.Context(), batch.RunInfo{Token: tok, Worker: "bench", Lease: 90 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		keys := make([]string, jobs)
		for i := range keys {
			keys[i] = fmt.Sprintf("%032x", i)
		}
		phase := func(name string, fn func()) {
			before := p.Stats().RoundTrips
			start := time.Now()
			fn()
			took := time.Since(start)
			rt := p.Stats().RoundTrips - before
			b.ReportMetric(took.Seconds(), name+"-s")
			b.ReportMetric(float64(rt)/float64(jobs), name+"-rt/job")
			b.Logf("%d jobs, %s: %v, %d round trips (%.2f a job)", jobs, name, took.Round(time.Millisecond), rt, float64(rt)/float64(jobs))
		}
		phase("run", func() {
			var next atomic.Int64
			var wg sync.WaitGroup
			for range concurrency {
				wg.Go(func() {
					for {
						i := int(next.Add(1)) - 1
						if i >= jobs {
							return
						}
						c := &batch.Claim{Entry: batch.Entry{Record: batch.Record{Job: keys[i], Line: i + 1, Op: "image/text-to-image",
							Attempt: 1, Fields: map[string]any{"prompt": "a fox"}, Worker: "bench", Run: tok}, Kind: batch.KindCall, Stem: keys[i][:8]}}
						res, err := l.Claim(b.Context(), c)
						if err != nil || !res.Claimed {
							b.Errorf("claim %d: %v %+v", i, err, res)
							return
						}
						e := &batch.Entry{Record: batch.Record{Job: keys[i], Attempt: 1, Run: tok, State: batch.Done, Requests: 1,
							Files: []string{keys[i][:8] + ".png"}}, Kind: batch.KindCall}
						if err := l.Record(b.Context(), e); err != nil {
							b.Errorf("record %d: %v", i, err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
		phase("rerun", func() {
			for i := 0; i < jobs; i += batch.MaxLast {
				got, err := l.Last(b.Context(), keys[i:min(i+batch.MaxLast, jobs)])
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range got {
					if e.State != batch.Done {
						b.Fatalf("job %s: %s", e.Job, e.State)
					}
				}
			}
		})
		phase("status", func() {
			st, err := l.Status(b.Context())
			if err != nil || st.States[batch.Done] != jobs {
				b.Fatalf("status: %v %+v", err, st)
			}
		})
		_ = s.End(b.Context())
		_ = l.Close()
		_ = p.Close()
	}
}
