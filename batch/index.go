package batch

import (
	"context"
	"errors"
	"io"

	"github.com/creativegen/creative-go/batch/page"
)

// IndexFile is the name of the contact sheet WriteIndex writes.
const IndexFile = "index.html"

// WriteIndex writes index.html to out, beside the outputs: the contact
// sheet of package page, showing every job of the ledger by its last
// attempt, read as the page is written. The page is written as one
// object: a reader sees the old page or the new one. A Versioned ledger's
// page is stamped with the version read before its rows. A page that
// bears the ledger's current version, whole and unchanged, is left as it
// is: no job has changed since its rows were read.
func WriteIndex(ctx context.Context, l Ledger, out Store) error {
	var stamp string
	if v, ok := l.(Versioned); ok {
		stamp, _ = v.Version(ctx) // none: the page is written unstamped
		if indexStamped(ctx, out, stamp) {
			return nil
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := out.NewWriter(wctx, IndexFile, map[string]string{"content-type": "text/html; charset=utf-8"})
	if err != nil {
		return err
	}
	var walkErr error
	entries := func(yield func(page.Entry) bool) {
		for e, err := range l.Jobs(ctx, false) {
			if walkErr = err; err != nil || !yield(entryOf(e)) {
				return
			}
		}
	}
	if err = page.WriteStamped(w, "batch", stamp, entries); err == nil {
		err = walkErr
	}
	if err != nil {
		cancel() // the writer leaves nothing
		_ = w.Close()
		return err
	}
	return w.Close()
}

// indexStamped reports whether out's index.html bears stamp, whole and
// unchanged since it was written (see page.Stamped: one of another stamp
// is told by its first few hundred bytes); a store that cannot read an
// object says no.
func indexStamped(ctx context.Context, out Store, stamp string) bool {
	r, ok := out.(interface {
		NewReader(ctx context.Context, key string) (io.ReadCloser, error)
	})
	if !ok || stamp == "" {
		return false
	}
	rc, err := r.NewReader(ctx, IndexFile)
	if err != nil {
		return false
	}
	defer rc.Close()
	return page.Stamped(rc, stamp)
}

// WriteIndex is the package's WriteIndex over the Runner's Ledger and
// Store.
func (r *Runner) WriteIndex(ctx context.Context) error {
	if r.ledger == nil || r.store == nil {
		return errors.New("batch: a Runner without a Ledger and a Store has no index to write")
	}
	return WriteIndex(ctx, r.ledger, r.store)
}

// entryOf is a record as the page shows it.
func entryOf(r *record) page.Entry {
	return page.Entry{Job: r.Job, ID: r.ID, Line: r.Line, Op: r.Op, State: string(r.State), Fields: r.Fields,
		Files: r.Files, URLs: r.URLs, Text: r.Text, Error: r.Error, RequestID: r.RequestID, Lost: r.Lost, Time: r.Time}
}
