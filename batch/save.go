package batch

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"regexp"
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

// namer names file i of n of an answer by its first bytes: ext gives the
// extension of one the check accepts; one it refuses is named as
// rejected, by what its bytes show.
func namer(stem string, i, n int, ext func(head []byte) string) func(head []byte, rejected bool) string {
	return func(head []byte, rejected bool) string {
		if rejected {
			return fileName(stem+Rejected, i, n, sniff.FileExt(head))
		}
		return fileName(stem, i, n, ext(head))
	}
}

// Rejected marks the name of an output whose content the answer check
// refused (a format it does not know, or another kind's than the
// operation promises). The answer was paid for, so it is kept whole, as
// <stem>.rejected.<ext> (<stem>.rejected-2.<ext> for the second of
// several files), and the job stays answered, its error naming the file:
// a rerun checks the file again, from the Store, without paying, and a
// check that knows the format by then puts it under its own name.
const Rejected = ".rejected"

// A rejectedError is an answer the check refused, kept under key.
type rejectedError struct {
	op, key string
	err     *answer.Error
}

func (e *rejectedError) Error() string {
	return fmt.Sprintf("the answer is not what %s promises (%s); it was paid for and is kept as %s: a rerun checks it again without paying",
		e.op, strings.TrimPrefix(e.err.Error(), "answer: "), e.key)
}

func (e *rejectedError) Unwrap() error { return e.err }

// settle marks rec done, or answered with the refusals of the files kept
// as rejected, said in one line.
func settle(rec *record, rejected []error) {
	rec.State, rec.Error, rec.Lost = Done, "", false
	if len(rejected) > 0 {
		s := make([]string, len(rejected))
		for i, err := range rejected {
			s[i] = err.Error()
		}
		rec.State, rec.Error = Answered, strings.Join(s, "; ")
	}
}

// kept names the files of an answer beside its stem: its outputs
// (<stem>.png, <stem>-2.png) and the answers kept as rejected.
var (
	outputName   = regexp.MustCompile(`^(-[0-9]+)?\.[A-Za-z0-9]+$`)
	rejectedName = regexp.MustCompile(`^` + regexp.QuoteMeta(Rejected) + `(-[0-9]+)?\.[A-Za-z0-9]+$`)
)

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
		name := namer(rec.Stem, 0, 1, func(head []byte) string { return sniff.DeclaredExt(v.Ext(), head) })
		err = ru.write(ctx, rec, name, func(w io.Writer) (int64, error) {
			defer v.Close()
			return io.Copy(w, v)
		})
	default:
		err = fmt.Errorf("batch: no way to store a %T", res)
	}
	rec.State = Done
	if _, ok := errors.AsType[*rejectedError](err); ok {
		// Kept, under a name that says so: a rerun checks it again.
		rec.State, rec.Error, err = Answered, err.Error(), nil
	} else if err != nil {
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
	if err := ru.record(ctx, rec, recordBound(ctx)); err != nil {
		ru.unrecorded(rec, err)
		ru.end(rec)
		return
	}
	ru.download(ctx, rec, start)
}

// images writes decoded images to their files. An image the check
// refuses is kept as rejected (see Rejected), the others written all the
// same; the refusals are returned together.
func (ru *run) images(ctx context.Context, rec *record, ims []creative.Image) error {
	rejected, err := writeEach(len(ims), func(i int) error {
		name := namer(rec.Stem, i, len(ims), func([]byte) string { return ims[i].Ext() })
		err := ru.write(ctx, rec, name, ims[i].WriteTo)
		if ae, ok := errors.AsType[*answer.Error](err); ok && ae.Cut {
			// Cut, and whole in memory: kept as the service sent it.
			key := name(ims[i].Data, true)
			if err = ru.keep(ctx, rec, key, ims[i].WriteTo); err == nil {
				err = &rejectedError{op: rec.Op, key: key, err: ae}
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	return errors.Join(rejected...)
}

// writeEach writes n files of an answer by calling write for each, and
// returns the refusals of those kept as rejected, until one fails
// otherwise.
func writeEach(n int, write func(i int) error) (rejected []error, err error) {
	for i := range n {
		err := write(i)
		if _, ok := errors.AsType[*rejectedError](err); ok {
			rejected = append(rejected, err)
		} else if err != nil {
			return rejected, err
		}
	}
	return rejected, nil
}

// keep writes the bytes of a refused answer to key, unchecked.
func (ru *run) keep(ctx context.Context, rec *record, key string, fill func(io.Writer) (int64, error)) error {
	w, err := ru.store.NewWriter(context.WithoutCancel(ctx), key, meta(rec))
	if err == nil {
		_, err = fill(w)
		err = cmp.Or(err, w.Close())
	}
	if err != nil {
		return &storeError{err}
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
// leaves nothing and is returned as it is. An answer whose type the check
// refuses is kept all the same, named by name(head, true), and returned
// as a *rejectedError.
func (ru *run) write(ctx context.Context, rec *record, name func(head []byte, rejected bool) string, fill func(io.Writer) (int64, error)) error {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	lw := &lazyWriter{ctx: wctx, store: ru.store, meta: meta(rec), name: name}
	_, err := answer.Keep(rec.Op, lw, fill, func(*answer.Error) { lw.rejected = true }) // nothing was written yet
	refused, isRefused := errors.AsType[*answer.Error](err)
	if err != nil && (!isRefused || refused.Cut) {
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
	if isRefused {
		return &rejectedError{op: rec.Op, key: lw.key, err: refused}
	}
	rec.Files = append(rec.Files, lw.key)
	return nil
}

// download fetches an answered job's links to their files, then records
// it done. A link that is gone (403, 404, 410) marks the answer lost.
func (ru *run) download(ctx context.Context, rec *record, start time.Time) {
	if len(rec.URLs) == 0 {
		ru.checkKept(ctx, rec, start)
		return
	}
	rec.Files = nil
	rejected, err := writeEach(len(rec.URLs), func(i int) error { return ru.fetch(ctx, rec, i, rec.URLs[i]) })
	settle(rec, rejected)
	if err != nil {
		why := strings.TrimPrefix(err.Error(), "creative: ")
		rec.State, rec.Error = Answered, "the call was answered but its files were not all downloaded (a rerun downloads them without paying again): "+why
		if ae, ok := errors.AsType[*creative.APIError](err); ok && (ae.StatusCode == http.StatusNotFound || ae.StatusCode == http.StatusGone || ae.StatusCode == http.StatusForbidden) {
			rec.Lost, rec.Error = true, "the answer's link no longer works (Options.RepayLost pays for the job again): "+why
		} else if servedByAGoneFake(rec.URLs, err) {
			rec.Lost, rec.Error = true, "the answer's links were served by a fake service on this machine, which is gone and its links with it (Options.RepayLost pays for the job again): "+why
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
	return ru.write(ctx, rec, namer(rec.Stem, i, len(rec.URLs), sniff.FileExt), func(w io.Writer) (int64, error) {
		opts := append([]creative.Option{count, creative.WithTimeout(downloadTimeout)}, ru.o.CallOptions...)
		opts = append(opts, creative.WithMaxResponseBytes(ru.o.MaxDownloadBytes))
		return ru.c.Download(ctx, creative.URL(link), w, opts...)
	})
}

// checkKept checks again, from the Store, the files of an answer without
// links (images, speech) that the check refused and kept (see Rejected):
// nothing is sent. A file the check now accepts is written under its own
// name and its rejected copy removed; one it still refuses stays kept.
// The answer's other files are found beside them by their names.
func (ru *run) checkKept(ctx context.Context, rec *record, start time.Time) {
	rec.Files = nil
	var kept []string
	var err error
	for key, lerr := range ru.store.List(ctx, rec.Stem) {
		if lerr != nil {
			err = &storeError{lerr}
			break
		}
		switch rest := strings.TrimPrefix(key, rec.Stem); {
		case outputName.MatchString(rest):
			rec.Files = append(rec.Files, key)
		case rejectedName.MatchString(rest):
			kept = append(kept, key)
		}
	}
	var rejected []error
	if err == nil {
		rejected, err = writeEach(len(kept), func(i int) error {
			key := kept[i]
			data, err := ru.store.Get(ctx, key)
			if err != nil {
				return &storeError{err}
			}
			// <stem>.rejected-2.bin is <stem>-2 and the extension its bytes show.
			stem := rec.Stem + strings.TrimSuffix(strings.TrimPrefix(key, rec.Stem+Rejected), path.Ext(key))
			name := func(head []byte, rej bool) string {
				if rej {
					return key
				}
				return stem + sniff.FileExt(head)
			}
			err = ru.write(ctx, rec, name, bytes.NewReader(data).WriteTo)
			if err == nil {
				_ = ru.store.Delete(context.WithoutCancel(ctx), key) // its bytes are in place under their own name
			}
			return err
		})
	}
	settle(rec, rejected)
	switch {
	case err != nil:
		rec.State, rec.Error = Answered, "the answer's kept files could not be checked again (a rerun tries again): "+err.Error()
	case len(kept) == 0 && len(rec.Files) == 0:
		rec.State, rec.Lost, rec.Error = Answered, true, "the answer's kept files are gone: only paying again gets it"
	}
	ru.finish(ctx, rec, start, err)
}

// A lazyWriter opens its object at its first Write, whose bytes name the
// file's type: answer.Keep hands on a file's head whole in its first
// Write.
type lazyWriter struct {
	ctx      context.Context
	store    Store
	meta     map[string]string
	name     func(head []byte, rejected bool) string
	rejected bool // the check refused the file: it is named as rejected
	key      string
	w        io.WriteCloser
	err      error // the store's
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if l.w == nil && l.err == nil {
		l.key = l.name(p, l.rejected)
		l.w, l.err = l.store.NewWriter(l.ctx, l.key, l.meta)
	}
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.w.Write(p)
	l.err = err
	return n, err
}

// close puts the object in place, or leaves nothing after a failure.
func (l *lazyWriter) close() error {
	if l.w == nil && l.err == nil {
		_, _ = l.Write(nil)
	}
	if l.w == nil {
		return l.err
	}
	l.err = cmp.Or(l.err, l.w.Close())
	return l.err
}
