package batch

import (
	"bytes"
	"context"
	"encoding/hex"
	"hash/maphash"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// A view is the RemoteStore a Runner reads its ledger through: at the first job
// of a run (or a plan) it lists the whole Store once, a thousand keys a
// request on a bucket, and answers from that listing where each job stands
// (see stageKey: the keys say it) and whether a done job's files are in
// place, asking nothing more of the Store for a job whose keys say enough.
// A job the listing cannot settle (a claim with no end, an answer to
// download, an earlier version's record) is read from the Store itself.
//
// The listing is of the moment it was taken: a job claimed since by
// another worker is found when its claim, an exclusive create, fails, and
// is left to that worker, so a snapshot never makes a job paid twice. A
// run's first heartbeat and its removal start a new snapshot, so that each
// run and plan reads the ledger as it then is.
//
// Memory: 24 bytes a job of the ledger and 8 an output, up to
// maxViewJobs jobs and maxViewOutputs outputs (about 80 MiB): the price of
// asking a bucket nothing a job; a ledger larger than that is read one job
// at a time, as without a view. A Runner that writes index.html while it
// runs (Options.IndexEvery) keeps the records it creates too, up to
// maxKept bytes (64 MiB, about 100,000 jobs), for the page.
type view struct {
	Store
	mu   sync.Mutex
	snap *snapshot
	runs map[string]bool // heartbeats put through the view
	// kept holds the records this Runner created, up to maxKept bytes, so
	// that index.html, written again while a run goes, reads them without
	// asking the Store: records are never replaced.
	kept     map[string][]byte
	keptSize int
	// mark sums up the ledger as the last snapshot listed it (see
	// ledgerMark), while markFresh says that this Runner created no record
	// since.
	mark      string
	markFresh bool
}

// Bounds of a snapshot, and of the records a view keeps.
const (
	maxViewJobs    = 2 << 20
	maxViewOutputs = 4 << 20
	maxKept        = 64 << 20
)

// viewOf returns s read through a view when s is a RemoteStore, whose
// reads are round trips; a local Store, which answers a job's questions
// in a moment each, is read one job at a time, in memory that does not
// grow with the ledger. The view keeps the records it creates when keep is
// set (the Runner writes index.html while it runs). nil stays nil.
func viewOf(s Store, keep bool) Store {
	if r, ok := s.(RemoteStore); !ok || !r.Remote() {
		return s
	}
	v := &view{Store: s, runs: map[string]bool{}}
	if keep {
		v.kept = map[string][]byte{}
	}
	return v
}

// A RemoteStore is a Store each of whose requests is a round trip (a
// bucket), as its Remote method says: a Runner reads its ledger from
// listings of it (see view), and one that writes index.html while it runs
// (Options.IndexEvery) keeps the records it creates in memory, up to 64
// MiB of them, rather than read them again from it.
type RemoteStore interface {
	Store
	Remote() bool
}

// A snapshot is what one listing of the Store said.
type snapshot struct {
	mark    string   // see ledgerMark
	jobs    []entry  // by job key
	outputs []uint64 // hashes of the keys outside the ledger, sorted
	seed    maphash.Seed
	whole   bool // false: the ledger was too large to hold
}

// An entry is where a job stood in the listing.
type entry struct {
	job   [16]byte
	n     uint32 // its last attempt
	state uint8  // 1 + index in entryStates; 0: its record must be read
	lost  bool
	// filesOK: a done job whose files were all in the listing.
	filesOK bool
}

// entryStates are the states a key of an end may say.
var entryStates = []State{Done, Failed, Refused, Unknown, Answered}

// lookup answers for the job with key from the snapshot, taking one if
// needed: known is false when the job's record must be read from the Store.
func (v *view) lookup(ctx context.Context, key string) (rec *record, n int, known bool, err error) {
	sn, err := v.current(ctx)
	if err != nil || !sn.whole {
		return nil, 0, false, err
	}
	var k [16]byte
	if _, err := hex.Decode(k[:], []byte(key)); err != nil {
		return nil, 0, false, nil
	}
	i, found := slices.BinarySearchFunc(sn.jobs, k, func(e entry, k [16]byte) int { return bytes.Compare(e.job[:], k[:]) })
	if !found {
		return nil, 0, true, nil // never claimed
	}
	e := sn.jobs[i]
	if e.state == 0 || entryStates[e.state-1] == Done && !e.filesOK {
		return nil, 0, false, nil
	}
	// A done job's files were in the listing: they need no checking again.
	return &record{Record: Record{Job: key, Attempt: int(e.n), State: entryStates[e.state-1], Lost: e.lost}, Kind: kindCall}, int(e.n), true, nil
}

// current returns the snapshot, taking it if there is none.
func (v *view) current(ctx context.Context) (*snapshot, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.snap != nil {
		return v.snap, nil
	}
	sn, err := take(ctx, v.Store)
	if err != nil {
		return nil, err
	}
	v.snap, v.mark, v.markFresh = sn, sn.mark, true
	return sn, nil
}

// hexDigits name the 16 parts of the ledger, by the first digit of the
// jobs' keys.
const hexDigits = "0123456789abcdef"

// take lists the whole Store once: its outputs, then the ledger, in one
// listing or, when the outputs say it is large, in its 16 parts at once (a
// listing goes a page at a time, each a round trip).
func take(ctx context.Context, s Store) (*snapshot, error) {
	sn := &snapshot{seed: maphash.MakeSeed(), whole: true}
	for k, err := range listOutputs(ctx, s) {
		if err != nil {
			return nil, err
		}
		if len(sn.outputs) < maxViewOutputs {
			sn.outputs = append(sn.outputs, maphash.String(sn.seed, k))
		}
	}
	slices.Sort(sn.outputs)
	prefixes := [][]string{{ledgerPrefix}}
	if len(sn.outputs) >= partsFrom {
		prefixes = nil
		for i := range hexDigits {
			prefixes = append(prefixes, partPrefixes(i))
		}
	}
	parts := make([]ledgerPart, len(prefixes))
	var jobs atomic.Int64 // over every part, against maxViewJobs
	var wg sync.WaitGroup
	for i := range parts {
		wg.Go(func() { parts[i].read(ctx, s, prefixes[i], sn.seed, &jobs) })
	}
	wg.Wait()
	mark := &ledgerMarker{}
	for _, p := range parts {
		if p.err != nil {
			return nil, p.err
		}
		mark.join(&p.mark)
		sn.whole = sn.whole && !p.over
	}
	sn.mark = mark.String()
	if !sn.whole {
		return sn, nil
	}
	for _, p := range parts {
		for _, f := range p.files {
			if _, ok := slices.BinarySearch(sn.outputs, f.h); !ok {
				p.jobs[f.job].filesOK = false
			}
		}
		sn.jobs = append(sn.jobs, p.jobs...)
	}
	slices.SortFunc(sn.jobs, func(a, b entry) int { return bytes.Compare(a.job[:], b.job[:]) })
	return sn, nil
}

// partPrefixes are the prefixes whose listings list part i of the
// ledger, the records of the jobs whose keys start with hexDigits[i]: the
// part's own, but for part b, whose 16 groups of folders are listed one
// after the other so that the shares of the budget (ledger/budget/, of
// which a large budget has many) are left out.
func partPrefixes(i int) []string {
	part := ledgerPrefix + hexDigits[i:i+1]
	if !strings.HasPrefix(budgetPrefix, part) {
		return []string{part}
	}
	groups := make([]string, 0, len(hexDigits))
	for j := range hexDigits {
		groups = append(groups, part+hexDigits[j:j+1])
	}
	return groups
}

// listEach lists the keys under each of prefixes, one listing after the
// other.
func listEach(ctx context.Context, s Store, prefixes []string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, prefix := range prefixes {
			for k, err := range s.List(ctx, prefix) {
				if !yield(k, err) || err != nil {
					return
				}
			}
		}
	}
}

// partsFrom is the number of outputs from which take lists the ledger in
// its 16 parts at once: a few pages of records each.
var partsFrom = 4000

// listOutputs lists the keys outside the ledger: with ListDir where the
// Store has it, which leaves the ledger's folder out.
func listOutputs(ctx context.Context, s Store) iter.Seq2[string, error] {
	if d, ok := s.(DirLister); ok {
		return d.ListDir(ctx, "")
	}
	return func(yield func(string, error) bool) {
		for k, err := range s.List(ctx, "") {
			if err == nil && strings.HasPrefix(k, ledgerPrefix) {
				continue
			}
			if !yield(k, err) || err != nil {
				return
			}
		}
	}
}

// A ledgerPart is what the listing of one part of the ledger said.
type ledgerPart struct {
	jobs  []entry
	files []doneFile // of done jobs, checked once every output is listed
	mark  ledgerMarker
	over  bool // the ledger holds more than maxViewJobs jobs
	err   error
}

// A doneFile is a file of the done job jobs[job] of a part, by its key's hash.
type doneFile struct {
	job int
	h   uint64
}

func (p *ledgerPart) read(ctx context.Context, s Store, prefixes []string, seed maphash.Seed, jobs *atomic.Int64) {
	j := jobKeys{}
	flush := func() {
		if j.job == "" {
			return
		}
		if jobs.Add(1) > maxViewJobs {
			p.over, p.jobs, p.files = true, nil, nil
			return
		}
		e := entry{n: uint32(j.n)}
		_, _ = hex.Decode(e.job[:], []byte(j.job))
		if rec := j.fromKeys(); rec != nil {
			e.state = uint8(slices.Index(entryStates, rec.State) + 1)
			e.lost, e.filesOK = rec.Lost, rec.State == Done
			for _, f := range rec.Files {
				p.files = append(p.files, doneFile{len(p.jobs), maphash.String(seed, f)})
			}
		}
		p.jobs = append(p.jobs, e)
	}
	for k, err := range listEach(ctx, s, prefixes) {
		if err != nil {
			p.err = err
			return
		}
		ki, ok := parseKey(k)
		if !ok {
			continue
		}
		p.mark.add(k)
		if ki.job != j.job {
			if flush(); p.over {
				return
			}
			j = jobKeys{job: ki.job}
		}
		j.add(k, ki)
	}
	flush()
}

// Exists answers from the snapshot for an output it listed; for any other
// key, it asks the Store.
func (v *view) Exists(ctx context.Context, key string) (bool, error) {
	v.mu.Lock()
	sn := v.snap
	v.mu.Unlock()
	if sn != nil && !strings.HasPrefix(key, ledgerPrefix) {
		if _, ok := slices.BinarySearch(sn.outputs, maphash.String(sn.seed, key)); ok {
			return true, nil
		}
	}
	return v.Store.Exists(ctx, key)
}

// Put writes through; a run's first heartbeat starts a new snapshot.
func (v *view) Put(ctx context.Context, key string, data []byte) error {
	err := v.Store.Put(ctx, key, data)
	if strings.HasPrefix(key, runsPrefix) {
		v.mu.Lock()
		if !v.runs[key] {
			v.runs[key], v.snap = true, nil
		}
		v.mu.Unlock()
	}
	return err
}

// Delete deletes through, and starts a new snapshot: the listing no longer
// says what is there.
func (v *view) Delete(ctx context.Context, key string) error {
	err := v.Store.Delete(ctx, key)
	v.mu.Lock()
	delete(v.runs, key)
	v.snap = nil
	v.mu.Unlock()
	return err
}

// Create creates through, and keeps a record it created.
func (v *view) Create(ctx context.Context, key string, data []byte) error {
	err := v.Store.Create(ctx, key, data)
	if _, isRecord := parseKey(key); err == nil && isRecord {
		v.mu.Lock()
		v.markFresh = false
		if v.kept != nil && v.keptSize+len(key)+len(data) <= maxKept {
			v.kept[key] = slices.Clone(data)
			v.keptSize += len(key) + len(data)
		}
		v.mu.Unlock()
	}
	return err
}

// Get reads a record this Runner created from memory, and anything else
// from the Store.
func (v *view) Get(ctx context.Context, key string) ([]byte, error) {
	v.mu.Lock()
	b, ok := v.kept[key]
	v.mu.Unlock()
	if ok {
		return slices.Clone(b), nil
	}
	return v.Store.Get(ctx, key)
}

// freshMark returns the mark of the last snapshot when this Runner created
// no record since.
func (v *view) freshMark() (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.mark, v.markFresh
}
