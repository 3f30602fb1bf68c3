package batch

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"iter"
	"strings"
	"sync"

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
	drain := func(p *statusPart) {
		for r := range p.review {
			if err == nil && unknown != nil {
				unknown(r)
			}
		}
		if err == nil && p.err != nil {
			err = p.err
			cancel() // the other parts stop, and close their reviews
		}
		st.join(&p.st)
	}
	// One listing of the whole ledger, which lists its first part first; a
	// RemoteStore whose first part says the ledger is more than a few pages
	// (each a round trip) has the other 15 listed at once instead.
	first := ledgerPrefix + hexDigits[:1]
	p := newStatusPart()
	var stop func(string) bool
	if r, ok := store.(RemoteStore); ok && r.Remote() {
		decided := false // at the first key past the first part, once
		stop = func(key string) bool {
			if decided || strings.HasPrefix(key, first) {
				return false
			}
			decided = true
			return p.keys*len(hexDigits) >= statusPartsFrom
		}
	}
	go p.read(ctx, store, ledgerPrefix, stop, unknown != nil, beats)
	if drain(p); err != nil || !p.cut {
		return st, err
	}
	parts := make([]*statusPart, len(hexDigits)-1)
	for i := range parts {
		parts[i] = newStatusPart()
		go parts[i].read(ctx, store, ledgerPrefix+hexDigits[i+1:i+2], nil, unknown != nil, beats)
	}
	for _, p := range parts {
		drain(p)
	}
	return st, err
}

// statusPartsFrom is the number of the ledger's keys, as its first part
// says, from which ReadStatus lists a RemoteStore's other parts at once:
// below it, 15 listings cost more requests than one.
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

// read counts the jobs under prefix, up to the key stop says to stop at
// when stop is not nil, and sends those to review on when review is set.
func (p *statusPart) read(ctx context.Context, store Store, prefix string, stop func(string) bool, review bool, beats *beatCache) {
	defer close(p.review)
	for j, err := range jobsOf(ctx, store, prefix, stop, &p.keys, &p.cut) {
		if err != nil {
			p.err = err
			return
		}
		rec := j.fromKeys()
		if rec == nil || rec.State == Unknown && review {
			if rec, _, err = j.read(ctx, store); err != nil {
				p.err = err
				return
			}
		}
		live := false
		if rec.State == Claimed {
			if live, err = beats.beating(ctx, store, rec.Run); err != nil {
				p.err = err
				return
			}
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
func jobsOf(ctx context.Context, store Store, prefix string, stop func(string) bool, keys *int, cut *bool) iter.Seq2[*jobKeys, error] {
	return func(yield func(*jobKeys, error) bool) {
		j := &jobKeys{}
		for key, err := range store.List(ctx, prefix) {
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

// readWindow is how many records lastAttempts reads at once: a bucket
// answers each after a round trip, and the page is written in order.
const readWindow = 32

// lastAttempts yields the last attempt of every job of the ledger, one job
// at a time, in the order of their keys, or an error that ends them: a
// listing, and a read of each job's last record, readWindow of them at
// once.
func lastAttempts(ctx context.Context, store Store) iter.Seq2[*record, error] {
	type result struct {
		rec *record
		err error
	}
	return func(yield func(*record, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		pending := make(chan chan result, readWindow)
		go func() {
			defer close(pending)
			var keys int
			var cut bool
			for j, err := range jobsOf(ctx, store, ledgerPrefix, nil, &keys, &cut) {
				ch := make(chan result, 1)
				if err != nil {
					ch <- result{nil, err}
				} else {
					go func() {
						rec, _, err := j.read(ctx, store)
						ch <- result{rec, err}
					}()
				}
				select {
				case pending <- ch:
				case <-ctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
		for ch := range pending {
			r := <-ch
			if r.err != nil || !yield(r.rec, nil) {
				if r.err != nil {
					yield(nil, r.err)
				}
				cancel()
				for range pending { // let the reader end
				}
				return
			}
		}
	}
}

// IndexFile is the name of the contact sheet WriteIndex writes.
const IndexFile = "index.html"

// pageKey keeps what the ledger held when index.html was last written.
const pageKey = ledgerPrefix + "page.json"

// WriteIndex writes index.html to store, beside the outputs: the contact
// sheet of package page, showing every job of the ledger by its last
// attempt. The page is written as one object: a reader sees the old page
// or the new one. A page written when the ledger held the records it holds
// now is current, and is left as it is: a listing of the ledger says so
// (see ledger/page.json), without reading a record. Otherwise the ledger's
// records are read, readWindow at once, as the page is written.
func WriteIndex(ctx context.Context, store Store) error {
	mark, err := ledgerMark(ctx, store)
	if err != nil {
		return err
	}
	if old, err := store.Get(ctx, pageKey); err == nil && string(old) == mark {
		if ok, err := store.Exists(ctx, IndexFile); err != nil || ok {
			return err
		}
	}
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
	if err := w.Close(); err != nil {
		return err
	}
	// The page holds at least what the ledger held at the listing.
	return store.Put(ctx, pageKey, []byte(mark))
}

// WriteIndex is the package's WriteIndex over the Runner's Store. A
// Runner on a RemoteStore that keeps index.html current while it runs
// (Options.IndexEvery) reads the records it made from memory, up to 64 MiB
// of them, rather than from the Store.
func (r *Runner) WriteIndex(ctx context.Context) error {
	if r.store == nil {
		return errors.New("batch: a Runner without a Store has no index to write")
	}
	return WriteIndex(ctx, r.store)
}

// ledgerMark sums up the records of the ledger from one listing of it:
// records are never replaced, so the same keys are the same ledger. A
// view that listed the ledger and created no record since says it without
// listing it again: records others made since are theirs to put on the
// page, which every run writes at its end.
func ledgerMark(ctx context.Context, store Store) (string, error) {
	if v, ok := store.(*view); ok {
		if mark, fresh := v.freshMark(); fresh {
			return mark, nil
		}
	}
	m := &ledgerMarker{}
	for key, err := range store.List(ctx, ledgerPrefix) {
		if err != nil {
			return "", err
		}
		if _, ok := parseKey(key); ok {
			m.add(key)
		}
	}
	return m.String(), nil
}

// A ledgerMarker sums up the keys of records, in the order listed, by
// the 16 parts of the ledger (see take), so that the parts can be listed
// at once.
type ledgerMarker struct {
	parts [len(hexDigits)]*marker
}

// add adds a record's key, ledger/<3 hex digits>/...
func (m *ledgerMarker) add(key string) {
	i := strings.IndexByte(hexDigits, key[len(ledgerPrefix)])
	if m.parts[i] == nil {
		m.parts[i] = newMarker()
	}
	m.parts[i].add(key)
}

// join takes the parts o summed up.
func (m *ledgerMarker) join(o *ledgerMarker) {
	for i, p := range o.parts {
		if p != nil {
			m.parts[i] = p
		}
	}
}

func (m *ledgerMarker) String() string {
	h, n := sha256.New(), 0
	for _, p := range m.parts {
		if p == nil {
			p = newMarker()
		}
		n += p.n
		h.Write(p.h.Sum(nil))
	}
	return fmt.Sprintf(`{"records":%d,"sha256":"%x"}`, n, h.Sum(nil))
}

// A marker sums up the keys of one part of the ledger.
type marker struct {
	h hash.Hash
	n int
}

func newMarker() *marker { return &marker{h: sha256.New()} }

func (m *marker) add(key string) {
	m.n++
	_, _ = io.WriteString(m.h, key+"\n")
}

// entryOf is a record as the page shows it.
func entryOf(r *record) page.Entry {
	return page.Entry{Job: r.Job, ID: r.ID, Line: r.Line, Op: r.Op, State: string(r.State), Fields: r.Fields,
		Files: r.Files, URLs: r.URLs, Text: r.Text, Error: r.Error, RequestID: r.RequestID, Lost: r.Lost, Time: r.Time}
}
