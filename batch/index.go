package batch

import (
	"context"
	"errors"

	"github.com/creativegen/creative-go/batch/page"
)

// IndexFile is the name of the contact sheet WriteIndex writes.
const IndexFile = "index.html"

// errStopped ends a walk of the ledger that its reader left.
var errStopped = errors.New("batch: stopped")

// WriteIndex writes index.html to store, beside the outputs: the contact
// sheet of package page, showing every job of the ledger by its last
// attempt. The ledger is read one job at a time, and the page is written
// as one object: a reader sees the old page or the new one.
func WriteIndex(ctx context.Context, store Store) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := store.NewWriter(wctx, IndexFile, map[string]string{"content-type": "text/html; charset=utf-8"})
	if err != nil {
		return err
	}
	var walkErr error
	entries := func(yield func(page.Entry) bool) {
		walkErr = eachJob(ctx, store, func(r *record) error {
			if !yield(entryOf(r)) {
				return errStopped
			}
			return nil
		})
	}
	err = page.Write(w, "batch", entries)
	if err == nil && !errors.Is(walkErr, errStopped) {
		err = walkErr
	}
	if err != nil {
		cancel() // the writer leaves nothing
		_ = w.Close()
		return err
	}
	return w.Close()
}

// entryOf is a record as the page shows it.
func entryOf(r *record) page.Entry {
	return page.Entry{Job: r.Job, ID: r.ID, Line: r.Line, Op: r.Op, State: string(r.State), Fields: r.Fields,
		Files: r.Files, URLs: r.URLs, Text: r.Text, Error: r.Error, RequestID: r.RequestID, Lost: r.Lost, Time: r.Time}
}
