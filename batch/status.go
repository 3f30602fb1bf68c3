package batch

import (
	"context"
)

// A Status counts the jobs of a ledger by the state of their last
// attempt, for one worker or a whole fleet sharing the Store.
type Status struct {
	// Jobs is how many jobs the ledger holds.
	Jobs int
	// States counts the jobs by state. An answered job whose answer can no
	// longer be fetched is counted under Answered and in Lost too.
	States map[State]int
	// Lost counts the answered jobs whose answer can no longer be fetched.
	Lost int
	// InFlight counts the claimed jobs whose run's heartbeat is fresh: in
	// flight on a live worker, not maybe paid. They are counted under
	// Claimed too.
	InFlight int
}

// ReadStatus reads the ledger in store, one job at a time, and counts the
// jobs by state. Each job whose outcome is unknown (unknown, or claimed and
// not ended by a worker that is gone: see Options.ResendUnknown) is given
// to unknown, when not nil, as its last attempt; a claim in flight on a
// live worker is counted in InFlight instead.
func ReadStatus(ctx context.Context, store Store, unknown func(Record)) (Status, error) {
	st := Status{States: map[State]int{}}
	err := eachJob(ctx, store, func(rec *record) error {
		st.add(rec)
		if rec.State == Claimed {
			live, err := beating(ctx, store, rec.Run)
			if err != nil {
				return err
			}
			if live {
				st.InFlight++
				return nil
			}
		}
		if unknown != nil && (rec.State == Unknown || rec.State == Claimed && rec.Kind != kindDownload) {
			unknown(rec.Record)
		}
		return nil
	})
	return st, err
}

// add counts a job by its last attempt.
func (st *Status) add(rec *record) {
	st.Jobs++
	st.States[rec.State]++
	if rec.State == Answered && rec.Lost {
		st.Lost++
	}
}

// eachJob gives fn the last attempt of every job of the ledger, one job at
// a time, in the order of their keys.
func eachJob(ctx context.Context, store Store, fn func(*record) error) error {
	lastJob := ""
	visit := func() error {
		rec, _, err := latest(ctx, store, lastJob)
		if err != nil || rec == nil {
			return err
		}
		return fn(rec)
	}
	for key, err := range store.List(ctx, ledgerPrefix) {
		if err != nil {
			return err
		}
		job, ok := jobOf(key)
		if !ok || job == lastJob {
			continue
		}
		if lastJob != "" {
			if err := visit(); err != nil {
				return err
			}
		}
		lastJob = job
	}
	if lastJob == "" {
		return nil
	}
	return visit()
}
