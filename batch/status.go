package batch

import (
	"context"
	"iter"
	"strings"
	"sync"
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
// an earlier version). A RemoteStore whose ledger is more than a few pages
// is listed in its 16 parts at once. Each job whose outcome is unknown
// (unknown, or claimed and not ended by a worker that is gone: see
// Options.ResendUnknown) is given to unknown, when not nil, as its last
// attempt, in the order of the jobs' keys, from one goroutine; a claim in
// flight on a live worker is counted in InFlight instead.
func ReadStatus(ctx context.Context, store Store, unknown func(Record)) (Status, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	beats := &beatCache{runs: map[string]bool{}}
	st := Status{States: map[State]int{}}
	var err error
	review := func(r Record) {
		if err == nil && unknown != nil {
			unknown(r)
		}
	}
	end := func(p *statusPart) {
		if err == nil && p.err != nil {
			err = p.err
			cancel() // the other parts stop, and close their reviews
		}
		st.join(&p.st)
	}
	var parts []*statusPart // the other 15, listed at once
	wide := func() {
		for i := range len(hexDigits) - 1 {
			parts = append(parts, newStatusPart())
			go parts[i].read(ctx, store, listEach(ctx, store, partPrefixes(i+1)), nil, unknown != nil, beats)
		}
	}
	// One listing of the whole ledger, which lists its first part first;
	// over a RemoteStore whose first part says the ledger is large, the
	// other parts are listed at once, beside the rest of the first.
	first, goWide := newStatusPart(), make(chan struct{})
	go first.read(ctx, store, store.List(ctx, ledgerPrefix), first.stop(store, goWide), unknown != nil, beats)
	for reviews := first.review; reviews != nil; {
		select {
		case r, ok := <-reviews:
			if !ok {
				reviews = nil
				continue
			}
			review(r)
		case <-goWide:
			wide()
			goWide = nil
		}
	}
	end(first)
	if first.cut && parts == nil {
		wide()
	}
	for _, p := range parts {
		for r := range p.review {
			review(r)
		}
		end(p)
	}
	return st, err
}

// stop is the stop of the first listing of a ReadStatus (nil but for a
// RemoteStore): it decides once, as soon as the ledger's first part holds
// statusPartsFrom/16 keys or at the first key past it, whether the other
// parts are listed at once, and if so closes wide and ends the listing at
// the first key past the first part.
func (p *statusPart) stop(store Store, wide chan struct{}) func(string) bool {
	if r, ok := store.(RemoteStore); !ok || !r.Remote() {
		return nil
	}
	first := ledgerPrefix + hexDigits[:1]
	decided, parts := false, false
	return func(key string) bool {
		inFirst := strings.HasPrefix(key, first)
		if !decided && (!inFirst || p.keys*len(hexDigits) >= statusPartsFrom) {
			decided, parts = true, p.keys*len(hexDigits) >= statusPartsFrom
			if parts {
				close(wide)
			}
		}
		return parts && !inFirst
	}
}

// statusPartsFrom is the number of the ledger's keys, as its first part
// says (16 times its own), from which ReadStatus lists a RemoteStore's
// other parts at once: below it, 15 listings cost more requests than one.
var statusPartsFrom = 4000

// A statusPart counts the jobs of one part of the ledger, and hands the
// jobs to review on, in the order of their keys, through review, which it
// closes when it is done: a part holds no more than the channel's worth.
type statusPart struct {
	st     Status
	keys   int  // the ledger's keys listed
	cut    bool // the listing stopped where stop said
	review chan Record
	err    error
}

func newStatusPart() *statusPart {
	return &statusPart{st: Status{States: map[State]int{}}, review: make(chan Record, 64)}
}

// read counts the jobs of listing, up to the key stop says to stop at
// when stop is not nil, and sends those to review on when review is set.
func (p *statusPart) read(ctx context.Context, store Store, listing iter.Seq2[string, error], stop func(string) bool, review bool, beats *beatCache) {
	defer close(p.review)
	for j, err := range jobsOf(listing, stop, &p.keys, &p.cut) {
		var rec *record
		var live bool
		if err == nil {
			rec, live, err = p.last(ctx, store, j, review, beats)
		}
		if err != nil {
			p.err = err
			return
		}
		p.st.add(rec)
		if live {
			p.st.InFlight++
			continue
		}
		if !review || !(rec.State == Unknown || rec.State == Claimed && rec.Kind != kindDownload) {
			continue
		}
		select {
		case p.review <- rec.Record:
		case <-ctx.Done():
			p.err = ctx.Err()
			return
		}
	}
}

// last is the last attempt of the job j, from its keys or, when they do
// not say enough (or its record is to review), its record; live says
// whether it is a claim of a run that is still going.
func (p *statusPart) last(ctx context.Context, store Store, j *jobKeys, review bool, beats *beatCache) (rec *record, live bool, err error) {
	rec = j.fromKeys()
	if rec == nil || rec.State == Unknown && review {
		if rec, _, err = j.read(ctx, store); err != nil {
			return nil, false, err
		}
	}
	if rec.State == Claimed {
		live, err = beats.beating(ctx, store, rec.Run)
	}
	return rec, live, err
}

// A beatCache reads each run's heartbeat once, for the parts of a status
// at once.
type beatCache struct {
	mu   sync.Mutex
	runs map[string]bool
}

func (c *beatCache) beating(ctx context.Context, store Store, run string) (bool, error) {
	c.mu.Lock()
	live, ok := c.runs[run]
	c.mu.Unlock()
	if ok {
		return live, nil
	}
	live, err := beating(ctx, store, run)
	c.mu.Lock()
	if err == nil && len(c.runs) < 4096 {
		c.runs[run] = live
	}
	c.mu.Unlock()
	return live, err
}

// join adds the counts of o.
func (st *Status) join(o *Status) {
	st.Jobs += o.Jobs
	for s, n := range o.States {
		st.States[s] += n
	}
	st.Lost += o.Lost
	st.InFlight += o.InFlight
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
// the order of their keys, from one listing of prefix, or an error that
// ends them; keys counts the keys listed. When stop is not nil, the
// listing ends at the first key it says to stop at, and cut says so.
func jobsOf(listing iter.Seq2[string, error], stop func(string) bool, keys *int, cut *bool) iter.Seq2[*jobKeys, error] {
	return func(yield func(*jobKeys, error) bool) {
		j := &jobKeys{}
		for key, err := range listing {
			if err != nil {
				yield(nil, err)
				return
			}
			if stop != nil && stop(key) {
				*cut = true
				break
			}
			*keys++
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
