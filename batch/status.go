package batch

import (
	"context"
	"path"
	"strings"
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
}

// ReadStatus reads the ledger in store, one job at a time, and counts the
// jobs by state. Each job whose outcome is unknown (unknown, or claimed and
// not ended: in flight, or its worker died) is given to unknown, when not
// nil, as its last attempt.
func ReadStatus(ctx context.Context, store Store, unknown func(Record)) (Status, error) {
	st := Status{States: map[State]int{}}
	var lastKey, lastJob string
	flush := func() error {
		if lastKey == "" {
			return nil
		}
		rec, _, err := latest(ctx, store, path.Base(path.Dir(lastKey)))
		if err != nil || rec == nil {
			return err
		}
		st.Jobs++
		st.States[rec.State]++
		if rec.State == Answered && rec.Lost {
			st.Lost++
		}
		if unknown != nil && (rec.State == Unknown || rec.State == Claimed && rec.Kind != kindDownload) {
			unknown(*rec)
		}
		return nil
	}
	for key, err := range store.List(ctx, ledgerPrefix) {
		if err != nil {
			return st, err
		}
		job := path.Dir(key)
		if job != lastJob && lastJob != "" {
			if err := flush(); err != nil {
				return st, err
			}
		}
		if strings.HasSuffix(key, ".json") {
			lastKey, lastJob = key, job
		}
	}
	return st, flush()
}
