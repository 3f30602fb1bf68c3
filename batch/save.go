package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/answer"
	"github.com/creativegen/creative-go/internal/sniff"
)

// fileName is the key of file i (from 0) of n of a job's outputs.
func fileName(stem string, i, n int, ext string) string {
	if n > 1 {
		return stem + "-" + strconv.Itoa(i+1) + ext
	}
	return stem + ext
}

// A storeError is a failure to write to the Store (as opposed to a failure
// to fetch what is written): it stops the run.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// save stores a call's answer (see answered for links) and records the job.
func (ru *run) save(ctx context.Context, rec *record, res any, start time.Time) {
	var err error
	switch v := res.(type) {
	case *creative.WriterResult:
		rec.Text = v.Text()
	case creative.Image:
		err = ru.images(ctx, rec, []creative.Image{v})
	case []creative.Image:
		err = ru.images(ctx, rec, v)
	case creative.URL:
		ru.answered(ctx, rec, []creative.URL{v}, start)
		return
	case []creative.URL:
		ru.answered(ctx, rec, v, start)
		return
	case *creative.Audio:
		name := func(head []byte) string { return fileName(rec.Stem, 0, 1, sniff.DeclaredExt(v.Ext(), head)) }
		err = ru.write(ctx, rec, name, func(w io.Writer) (int64, error) {
			defer v.Close()
			return io.Copy(w, v)
		})
	default:
		err = fmt.Errorf("batch: no way to store a %T", res)
	}
	rec.State = Done
	if err != nil {
		// Paid for, and the answer could not be kept.
		rec.State, rec.Lost, rec.Error = Answered, true, "the answer could not be stored: "+err.Error()
	}
	ru.finish(ctx, rec, start, err)
}

// answered records the links of an answer, durably, then downloads them.
func (ru *run) answered(ctx context.Context, rec *record, us []creative.URL, start time.Time) {
	for _, u := range us {
		rec.URLs = append(rec.URLs, string(u))
	}
	rec.State = Answered
	rec.Time = time.Now().UTC()
	if err := ru.record(ctx, rec); err != nil {
		ru.unrecorded(rec, err)
		ru.end(rec)
		return
	}
	ru.download(ctx, rec, start)
}

// images writes decoded images to their files.
func (ru *run) images(ctx context.Context, rec *record, ims []creative.Image) error {
	for i, im := range ims {
		key := fileName(rec.Stem, i, len(ims), im.Ext())
		if err := ru.write(ctx, rec, func([]byte) string { return key }, im.WriteTo); err != nil {
			return err
		}
	}
	return nil
}

// meta is an output's object metadata, where the store keeps it.
func meta(rec *record) map[string]string {
	m := map[string]string{"job": rec.Job, "op": rec.Op}
	if rec.ID != "" {
		m["id"] = rec.ID
	}
	if rec.RequestID != "" {
		m["request-id"] = rec.RequestID
	}
	return m
}

// write fills an output of rec, named by its first bytes, and adds it to
// rec's files. A failure of the store is a *storeError; a failure of fill
// leaves nothing and is returned as it is.
func (ru *run) write(ctx context.Context, rec *record, name func(head []byte) string, fill func(io.Writer) (int64, error)) error {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	lw := &lazyWriter{ctx: wctx, store: ru.store, meta: meta(rec), name: name}
	if _, err := answer.Fill(rec.Op, lw, fill); err != nil {
		cancel()
		if lw.w != nil {
			_ = lw.w.Close() // its context cancelled: it leaves nothing
		}
		if lw.err != nil {
			return &storeError{lw.err}
		}
		return err
	}
	if err := lw.close(); err != nil {
		return &storeError{err}
	}
	rec.Files = append(rec.Files, lw.key)
	return nil
}

// download fetches an answered job's links to their files, then records
// it done. A link that is gone (403, 404, 410) marks the answer lost.
func (ru *run) download(ctx context.Context, rec *record, start time.Time) {
	rec.Files = nil
	var err error
	for i, u := range rec.URLs {
		if err = ru.fetch(ctx, rec, i, u); err != nil {
			break
		}
	}
	rec.State, rec.Error, rec.Lost = Done, "", false
	if err != nil {
		why := strings.TrimPrefix(err.Error(), "creative: ")
		rec.State, rec.Error = Answered, "the call was answered but its files were not all downloaded (a rerun downloads them without paying again): "+why
		if ae, ok := errors.AsType[*creative.APIError](err); ok && (ae.StatusCode == http.StatusNotFound || ae.StatusCode == http.StatusGone || ae.StatusCode == http.StatusForbidden) {
			rec.Lost, rec.Error = true, "the answer's link no longer works (--repay-expired pays for the job again): "+why
		}
	}
	ru.finish(ctx, rec, start, err)
}

// downloadTimeout bounds a download unless Options.CallOptions give
// WithTimeout: a link that stalls would hold a worker for ever.
const downloadTimeout = time.Hour

// fetch downloads link i of rec to its file, named by its first bytes.
func (ru *run) fetch(ctx context.Context, rec *record, i int, link string) error {
	count := creative.WithMiddleware(func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
		rec.Requests++
		return next(req)
	})
	name := func(head []byte) string { return fileName(rec.Stem, i, len(rec.URLs), sniff.FileExt(head)) }
	return ru.write(ctx, rec, name, func(w io.Writer) (int64, error) {
		opts := append([]creative.Option{count, creative.WithTimeout(downloadTimeout)}, ru.o.CallOptions...)
		opts = append(opts, creative.WithMaxResponseBytes(ru.o.MaxDownloadBytes))
		return ru.c.Download(ctx, creative.URL(link), w, opts...)
	})
}

// A lazyWriter opens its object once it holds the first bytes, which may
// name the file's type.
type lazyWriter struct {
	ctx   context.Context
	store Store
	meta  map[string]string
	name  func(head []byte) string
	head  []byte
	key   string
	w     io.WriteCloser
	err   error // the store's
}

const headLen = 16

func (l *lazyWriter) Write(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.w != nil {
		n, err := l.w.Write(p)
		l.err = err
		return n, err
	}
	if l.head = append(l.head, p...); len(l.head) >= headLen {
		l.start()
	}
	if l.err != nil {
		return 0, l.err
	}
	return len(p), nil
}

// start opens the object and writes the bytes held back.
func (l *lazyWriter) start() {
	l.key = l.name(l.head)
	l.w, l.err = l.store.NewWriter(l.ctx, l.key, l.meta)
	if l.err == nil {
		_, l.err = l.w.Write(l.head)
	}
}

// close puts the object in place, or leaves nothing after a failure.
func (l *lazyWriter) close() error {
	if l.w == nil && l.err == nil {
		l.start()
	}
	if l.w == nil {
		return l.err
	}
	if err := l.w.Close(); l.err == nil {
		l.err = err
	}
	return l.err
}

// finish records rec as it ends this run and counts it; err, when the
// Store's, stops the run first.
func (ru *run) finish(ctx context.Context, rec *record, start time.Time, err error) {
	if _, ok := errors.AsType[*storeError](err); ok {
		ru.failLedger(err, nil)
	}
	rec.Seconds = math.Round(time.Since(start).Seconds()*1000) / 1000
	rec.Time = time.Now().UTC()
	if err := ru.record(ctx, rec); err != nil {
		ru.unrecorded(rec, err)
	}
	ru.end(rec)
}

// errTakenOver refuses a record of this run once another worker took its
// job over (the ledger fenced it).
var errTakenOver = ErrFenced

// recordTimeout bounds each record's write: a record is written even once
// the run's context ended (the call ended, and may have been paid), within
// a time of its own.
const recordTimeout = 10 * time.Second

// record writes rec's answer or end in the ledger, even when ctx was
// cancelled, within recordTimeout. The ledger takes it only while the
// attempt is its job's last and this run is not gone (fencing, checked in
// the transaction): when another worker took the job over meanwhile, the
// record is refused (errTakenOver), so the job is not shown done twice and
// a second payment is not hidden behind a done record; the run's
// LedgerError hands the answer back.
func (ru *run) record(ctx context.Context, rec *record) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	return ru.ledger.Record(wctx, rec)
}

// end counts rec as it ends this run, and tells of it.
func (ru *run) end(rec *record) {
	ru.count(func(s *Summary) {
		s.Requests += rec.Requests
		switch {
		case rec.State == Done:
			s.Done++
		case rec.State == Failed:
			s.Failed++
		case rec.State == Refused:
			s.Refused++
		case rec.State == Answered && !rec.Lost:
			s.Waiting++
		default:
			s.countLeft(rec) // lost, claimed or unknown
		}
	})
	ru.ended.Add(1)
	ru.event(JobEnded, rec)
}

// unrecorded stops the run because rec could not be recorded, hands a paid
// answer, or a job sent whose outcome the ledger lacks, to the
// LedgerError, and leaves rec as the ledger has it: answered when its
// links were recorded before, else claimed (maybe paid).
func (ru *run) unrecorded(rec *record, err error) {
	var paid *record
	if rec.State == Answered || rec.State == Done {
		cp := *rec
		paid = &cp
	}
	ru.failLedger(err, paid)
	if paid == nil && (rec.Requests > 0 || errors.Is(err, errTakenOver)) {
		ru.maybePaid(rec)
	}
	state := Claimed
	if len(rec.URLs) > 0 && rec.State != Answered {
		state = Answered // the links were recorded before
	}
	rec.State, rec.Lost = state, false
	rec.Error = "not recorded in the ledger (" + err.Error() + "): see the run's error for the answer"
}
