package batch

import (
	"context"
	"iter"

	"github.com/creativegen/creative-go/batch/page"
)

// A Status counts the jobs of a ledger by the state of their last
// attempt, for one worker or a whole fleet sharing the Store.
type Status struct {
	// Jobs is how many jobs the ledger holds.
	Jobs int
	// States counts the jobs by state.
	States map[State]int
	// Lost counts the answered jobs whose answer can no longer be fetched,
	// under Answered too.
	Lost int
	// InFlight counts the claimed jobs whose run's heartbeat is fresh: in
	// flight on a live worker, not maybe paid (under Claimed too).
	InFlight int
}

// ReadStatus reads the ledger in store by listing it, a thousand keys a
// request on a bucket (the key of each attempt's end says how it ended),
// and counts the jobs by state; it reads a job's record only when its keys
// do not say enough (a claim with no end, an unknown outcome, a ledger of
// an earlier version). Each job whose outcome is unknown (unknown, or
// claimed and not ended by a worker that is gone: see
// Options.ResendUnknown) is given to unknown, when not nil, as its last
// attempt; a claim in flight on a live worker is counted in InFlight
// instead.
func ReadStatus(ctx context.Context, store Store, unknown func(Record)) (Status, error) {
	st := Status{States: map[State]int{}}
	runs := map[string]bool{} // heartbeats read, by run
	for j, err := range jobsOf(ctx, store) {
		if err != nil {
			return st, err
		}
		rec := j.fromKeys()
		if rec == nil || rec.State == Unknown && unknown != nil {
			if rec, _, err = j.read(ctx, store); err != nil {
				return st, err
			}
		}
		live := false
		if rec.State == Claimed {
			if live, err = beatingOnce(ctx, store, rec.Run, runs); err != nil {
				return st, err
			}
		}
		st.add(rec)
		if live {
			st.InFlight++
		} else if unknown != nil && (rec.State == Unknown || rec.State == Claimed && rec.Kind != kindDownload) {
			unknown(rec.Record)
		}
	}
	return st, nil
}

// beatingOnce is beating, reading each run's heartbeat once.
func beatingOnce(ctx context.Context, store Store, run string, runs map[string]bool) (bool, error) {
	if live, ok := runs[run]; ok {
		return live, nil
	}
	live, err := beating(ctx, store, run)
	if err == nil && len(runs) < 4096 {
		runs[run] = live
	}
	return live, err
}

// add counts a job by its last attempt.
func (st *Status) add(rec *record) {
	st.Jobs++
	st.States[rec.State]++
	if rec.State == Answered && rec.Lost {
		st.Lost++
	}
}

// jobsOf yields the keys of every job of the ledger, one job at a time, in
// the order of their keys, from one listing, or an error that ends them.
func jobsOf(ctx context.Context, store Store) iter.Seq2[*jobKeys, error] {
	return func(yield func(*jobKeys, error) bool) {
		j := &jobKeys{}
		for key, err := range store.List(ctx, ledgerPrefix) {
			if err != nil {
				yield(nil, err)
				return
			}
			ki, ok := parseKey(key)
			if !ok {
				continue
			}
			if ki.job != j.job {
				if j.job != "" && !yield(j, nil) {
					return
				}
				j = &jobKeys{job: ki.job}
			}
			j.add(key, ki)
		}
		if j.job != "" {
			yield(j, nil)
		}
	}
}

// lastAttempts yields the last attempt of every job of the ledger, one job
// at a time, in the order of their keys, or an error that ends them: a
// listing, and a read of each job's last record.
func lastAttempts(ctx context.Context, store Store) iter.Seq2[*record, error] {
	return func(yield func(*record, error) bool) {
		for j, err := range jobsOf(ctx, store) {
			var rec *record
			if err == nil {
				rec, _, err = j.read(ctx, store)
			}
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// IndexFile is the name of the contact sheet WriteIndex writes.
const IndexFile = "index.html"

// WriteIndex writes index.html to store, beside the outputs: the contact
// sheet of package page, showing every job of the ledger by its last
// attempt. The ledger is read one job at a time, and the page is written
// as one object: a reader sees the old page or the new one.
func WriteIndex(ctx context.Context, store Store) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := store.NewWriter(wctx, IndexFile, map[string]string{"content-type": "text/html; charset=utf-8"})
	if err != nil {
		return err
	}
	var walkErr error
	entries := func(yield func(page.Entry) bool) {
		for rec, err := range lastAttempts(ctx, store) {
			if walkErr = err; err != nil || !yield(entryOf(rec)) {
				return
			}
		}
	}
	if err = page.Write(w, "batch", entries); err == nil {
		err = walkErr
	}
	if err != nil {
		cancel() // the writer leaves nothing
		_ = w.Close()
		return err
	}
	return w.Close()
}

// entryOf is a record as the page shows it.
func entryOf(r *record) page.Entry {
	return page.Entry{Job: r.Job, ID: r.ID, Line: r.Line, Op: r.Op, State: string(r.State), Fields: r.Fields,
		Files: r.Files, URLs: r.URLs, Text: r.Text, Error: r.Error, RequestID: r.RequestID, Lost: r.Lost, Time: r.Time}
}
