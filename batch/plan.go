package batch

import "context"

// A Plan says what a run would do, without sending anything.
type Plan struct {
	// Calls counts, per operation, the calls a run would make.
	Calls map[string]int
	// Downloads is how many jobs a run would only download (paid for
	// before).
	Downloads int
	// Summary counts the jobs a run would leave as they are.
	Summary Summary
}

// Plan reads the ledger for every checked job and says what Run would do;
// it sends nothing and writes nothing. A Runner without a Ledger plans as
// for an empty ledger.
func (r *Runner) Plan(ctx context.Context, c *Checked) (*Plan, error) {
	out := &Plan{Calls: map[string]int{}, Summary: Summary{Jobs: c.mine}}
	for t, err := range r.lookup(ctx, c) {
		if err != nil {
			return nil, err
		}
		switch act := decide(t.last, &r.o, t.live); {
		case act == actCall:
			out.Calls[t.op.Name]++
		case act == actDownload:
			out.Downloads++
		case act == actCheck:
			out.Summary.DoneBefore++
		case act == actLeave:
			out.Summary.countLeft(t.last)
		case act == actElsewhere:
			out.Summary.Elsewhere++
		}
	}
	return out, nil
}

// lookupBatch is how many jobs lookup asks the ledger of at once.
const lookupBatch = 256

// lookup reads the jobs again, checked, each with its last attempt in the
// ledger, asking the ledger of lookupBatch jobs at once.
func (r *Runner) lookup(ctx context.Context, c *Checked) func(yield func(*task, error) bool) {
	return func(yield func(*task, error) bool) {
		var chunk []*task
		flush := func() bool {
			if len(chunk) == 0 {
				return true
			}
			if r.ledger != nil {
				keys := make([]string, len(chunk))
				for i, t := range chunk {
					keys[i] = t.key
				}
				found, err := r.ledger.Last(ctx, keys)
				if err != nil {
					yield(nil, err)
					return false
				}
				byKey := make(map[string]*Last, len(found))
				for i := range found {
					byKey[found[i].Job] = &found[i]
				}
				for _, t := range chunk {
					if l := byKey[t.key]; l != nil {
						t.last, t.live = &l.Entry, l.Live
					}
				}
			}
			for _, t := range chunk {
				if !yield(t, nil) {
					return false
				}
			}
			chunk = chunk[:0]
			return true
		}
		for t, err := range r.tasks(c) {
			if err != nil {
				yield(nil, err)
				return
			}
			if chunk = append(chunk, t); len(chunk) == lookupBatch && !flush() {
				return
			}
		}
		flush()
	}
}
