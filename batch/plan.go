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
			out.Summary.tally(t.last)
		case act == actElsewhere:
			out.Summary.Elsewhere++
		}
	}
	return out, nil
}

// lookupBatch is how many jobs lookup asks the ledger of at once, and
// lookupAhead how many such questions it keeps asked ahead of the jobs it
// hands on: over a network, a rerun of 100,000 jobs would otherwise wait
// for 200 round trips one after the other.
const (
	lookupBatch = MaxLast
	lookupAhead = 16
)

// A lookupChunk is lookupBatch jobs whose last attempts are being read.
type lookupChunk struct {
	tasks []*task
	err   error
	done  chan struct{}
}

// lookup reads the jobs again, checked, each with its last attempt in the
// ledger, asking the ledger of lookupBatch jobs at once, lookupAhead
// questions at a time.
func (r *Runner) lookup(ctx context.Context, c *Checked) func(yield func(*task, error) bool) {
	return func(yield func(*task, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var pending []*lookupChunk
		var chunk []*task
		// flush asks the ledger of the chunk gathered, then hands on the
		// oldest chunks, once their answers came, until keep are left.
		flush := func(keep int) bool {
			if len(chunk) > 0 {
				lc := &lookupChunk{tasks: chunk, done: make(chan struct{})}
				go func() { lc.err = r.fill(ctx, lc.tasks); close(lc.done) }()
				pending, chunk = append(pending, lc), nil
			}
			for len(pending) > keep {
				lc := pending[0]
				pending = pending[1:]
				<-lc.done
				if lc.err != nil {
					yield(nil, lc.err)
					return false
				}
				for _, t := range lc.tasks {
					if !yield(t, nil) {
						return false
					}
				}
			}
			return true
		}
		for t, err := range r.tasks(c) {
			if err != nil {
				yield(nil, err)
				return
			}
			if chunk = append(chunk, t); len(chunk) == lookupBatch && !flush(lookupAhead-1) {
				return
			}
		}
		flush(0)
	}
}

// fill reads the last attempts of tasks from the ledger.
func (r *Runner) fill(ctx context.Context, tasks []*task) error {
	if r.ledger == nil {
		return nil
	}
	keys := make([]string, len(tasks))
	for i, t := range tasks {
		keys[i] = t.key
	}
	found, err := r.ledger.Last(ctx, keys)
	if err != nil {
		return err
	}
	byKey := make(map[string]*Last, len(found))
	for i := range found {
		byKey[found[i].Job] = &found[i]
	}
	for _, t := range tasks {
		if l := byKey[t.key]; l != nil {
			t.last, t.live = &l.Entry, l.Live
		}
	}
	return nil
}
