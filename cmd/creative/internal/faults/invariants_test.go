package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/creativegen/creative-go/batch"
)

// check checks the invariants against the calls the service answered.
func (s *schedule) check(nJobs int) {
	ctx := context.Background()
	l, err := s.engine.open(ctx, s.ledger)
	if err != nil {
		s.t.Fatal(err)
	}
	defer l.Close()
	recs := attempts(s.t, l)
	out, err := batch.OpenFolder(s.out)
	if err != nil {
		s.t.Fatal(err)
	}
	defer out.Close()
	prompt := func(r batch.Record) string { p, _ := r.Fields["prompt"].(string); return p }

	s.front.mu.Lock()
	calls := slices.Clone(s.front.calls)
	s.front.mu.Unlock()
	paid := map[string][]call{}
	for _, c := range calls {
		if c.status == http.StatusOK {
			paid[c.prompt] = append(paid[c.prompt], c)
		}
	}
	s.ty.mu.Lock()
	s.ty.jobs += nJobs
	s.ty.mu.Unlock()
	for job, cs := range paid {
		s.ty.mu.Lock()
		s.ty.paid += len(cs)
		s.ty.mu.Unlock()
		// No job paid twice, unless resent with ResendUnknown once every
		// worker that paid before was really gone.
		if len(cs) > 1 {
			s.ty.mu.Lock()
			s.ty.twice++
			s.ty.mu.Unlock()
		}
		for i, c := range cs[1:] {
			p := s.proc(c.worker)
			if p == nil || !p.cfg.Resend {
				s.fail("%s paid again by %s, which does not resend: %s", job, c.worker, history(job, recs, calls))
				continue
			}
			for _, before := range cs[:i+1] {
				if !s.gone(before.worker, c.at) {
					s.fail("%s paid again by %s at %v while %s, which paid it first, still went: %s", job, c.worker, c.at.Format("15:04:05.000"), before.worker, history(job, recs, calls))
				}
				// Where liveness is exact (one machine), a process that
				// lives, stopped or not, lease lapsed or not, is never
				// taken for gone.
				if b := s.proc(before.worker); b != nil && s.engine.exact && !s.ended(b, c.at) {
					s.fail("%s paid again by %s at %v while %s, which paid it first, lived on this machine: %s", job, c.worker, c.at.Format("15:04:05.000"), before.worker, history(job, recs, calls))
				}
			}
		}
		// Every paid answer is in the ledger, or handed back by its worker,
		// or its worker was killed and the ledger holds its claim.
		for _, c := range cs {
			p := s.proc(c.worker)
			inLedger, claimed := false, false
			for _, r := range recs {
				if prompt(r) == job && r.Worker == c.worker {
					claimed = true
					inLedger = inLedger || r.State == batch.Answered || r.State == batch.Done
				}
			}
			handed := false
			if p != nil && p.rep != nil {
				for _, r := range p.rep.Unrecorded {
					handed = handed || prompt(r) == job
				}
			}
			if !inLedger && !handed && !(p != nil && !p.killed.IsZero() && claimed) && !(p != nil && p.overtime) {
				s.fail("%s: the answer %s was paid for is neither in the ledger nor handed back", job, c.worker)
			}
		}
	}
	// Nothing recorded done without its files.
	for _, r := range recs {
		if r.State != batch.Done {
			continue
		}
		for _, f := range r.Files {
			if ok, err := out.Exists(ctx, f); err != nil || !ok {
				s.fail("%s recorded done by %s without its file %s (%v)", prompt(r), r.Worker, f, err)
			}
		}
		if len(r.Files) == 0 {
			s.fail("%s recorded done by %s with no file", prompt(r), r.Worker)
		}
	}
	// The rerun and the resend run end the work: every job done, or
	// answered with an answer that could not be kept (handed back).
	st, err := batch.ReadStatus(ctx, l, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if st.Jobs != nJobs || st.States[batch.Done]+st.Lost != nJobs {
		s.fail("after the rerun and the resend run: %d jobs, %v, %d lost", st.Jobs, st.States, st.Lost)
	}
	s.checkBudget(ctx, l, calls)
}

// attempts reads every attempt of every job from the ledger's tables, as
// records.
func attempts(t *testing.T, l engineLedger) []batch.Record {
	rows, err := l.DB().Query(`SELECT a.job, a.n, a.state, a.lost, a.worker, a.requests, coalesce(a.error, ''), coalesce(a.files, '[]'),
		coalesce(a.ended, a.claimed), j.fields FROM attempts a JOIN jobs j ON j.job = a.job ORDER BY a.job, a.n`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var recs []batch.Record
	for rows.Next() {
		var r batch.Record
		var state, files, fields string
		var ms int64
		if err := rows.Scan(&r.Job, &r.Attempt, &state, &r.Lost, &r.Worker, &r.Requests, &r.Error, &files, &ms, &fields); err != nil {
			t.Fatal(err)
		}
		r.State, r.Time = batch.State(state), time.UnixMilli(ms)
		if json.Unmarshal([]byte(files), &r.Files) != nil || json.Unmarshal([]byte(fields), &r.Fields) != nil {
			t.Fatalf("attempt %d of %s: files %s, fields %s", r.Attempt, r.Job, files, fields)
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// history says what the service's front saw of job and what the ledger
// holds of it, record by record.
func history(job string, recs []batch.Record, calls []call) string {
	var b strings.Builder
	b.WriteString("calls:")
	for _, c := range calls {
		if c.prompt == job {
			fmt.Fprintf(&b, " %s %d at %s;", c.worker, c.status, c.at.Format("15:04:05.000"))
		}
	}
	b.WriteString(" records:")
	for _, r := range recs {
		if p, _ := r.Fields["prompt"].(string); p == job {
			fmt.Fprintf(&b, " attempt %d %s by %s at %s (%d requests) %s;", r.Attempt, r.State, r.Worker, r.Time.Format("15:04:05.000"), r.Requests, r.Error)
		}
	}
	return b.String()
}
