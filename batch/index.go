package batch

import (
	"context"
	"errors"

	"github.com/creativegen/creative-go/batch/page"
)

// IndexFile is the name of the contact sheet WriteIndex writes.
const IndexFile = "index.html"

// WriteIndex writes index.html to out, beside the outputs: the contact
// sheet of package page, showing every job of the ledger by its last
// attempt, read a page of rows at a time as the page is written. The page
// is written as one object: a reader sees the old page or the new one.
func WriteIndex(ctx context.Context, l Ledger, out Store) error {
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
	if err = page.Write(w, "batch", entries); err == nil {
		err = walkErr
	}
	if err != nil {
		cancel() // the writer leaves nothing
		_ = w.Close()
		return err
	}
	return w.Close()
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
