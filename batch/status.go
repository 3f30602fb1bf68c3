package batch

import (
	"context"
	"fmt"
)

// A Status counts the jobs of a ledger by the state of their last
// attempt, for one worker or a whole fleet sharing the ledger.
type Status struct {
	// Jobs is how many jobs the ledger holds.
	Jobs int
	// States counts the jobs by state.
	States map[State]int
	// Lost counts the answered jobs whose answer can no longer be fetched,
	// under Answered too.
	Lost int
	// InFlight counts the claimed jobs whose run the engine holds live: in
	// flight on a live worker, not maybe paid (under Claimed too).
	InFlight int
	// Budget is what the runs took of their budget.
	Budget BudgetStatus
}

// ReadStatus counts the jobs of the ledger by state (Ledger.Status: one
// grouped query). Each job whose outcome is unknown (unknown, or claimed
// and not ended by a run that is gone: see Options.ResendUnknown) is given
// to unknown, when not nil, as its last attempt, in the order of the jobs'
// keys.
func ReadStatus(ctx context.Context, l Ledger, unknown func(Record)) (Status, error) {
	st, err := l.Status(ctx)
	if err != nil || unknown == nil {
		return st, err
	}
	for e, err := range l.Jobs(ctx, true) {
		if err != nil {
			return st, fmt.Errorf("batch: %w", err)
		}
		unknown(e.Record)
	}
	return st, nil
}
