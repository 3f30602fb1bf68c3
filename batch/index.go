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

	"github.com/creativegen/creative-go/batch/page"
)

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
			for j, err := range jobsOf(store.List(ctx, ledgerPrefix), nil, &keys, &cut) {
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
