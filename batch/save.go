package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	creative "github.com/creativegen/creative-go"
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

// save stores a call's answer and records the job: URLs are recorded
// (answered) before anything is downloaded; images and speech are written
// to their files, then the job is done.
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
		err = ru.audio(ctx, rec, v)
	default:
		err = fmt.Errorf("batch: no way to store a %T", res)
	}
	rec.State = Done
	if err != nil {
		// Paid for, and the answer could not be kept.
		rec.State, rec.Lost, rec.Error = Answered, true, "the answer could not be stored: "+err.Error()
	}
	var se *storeError
	if errors.As(err, &se) {
		ru.failLedger(err, nil)
	}
	ru.finish(ctx, rec, start)
}

// answered records the links of an answer, durably, then downloads them.
func (ru *run) answered(ctx context.Context, rec *record, us []creative.URL, start time.Time) {
	for _, u := range us {
		rec.URLs = append(rec.URLs, string(u))
	}
	rec.State = Answered
	rec.Time = time.Now().UTC()
	if err := putStage(context.WithoutCancel(ctx), ru.store, rec, stageAnswered); err != nil {
		ru.unrecorded(rec, err)
		ru.count(func(s *Summary) { s.Claimed++ })
		ru.ended.Add(1)
		ru.event(JobEnded, rec)
		return
	}
	ru.download(ctx, rec, start)
}

// images writes decoded images to their files.
func (ru *run) images(ctx context.Context, rec *record, ims []creative.Image) error {
	for i, im := range ims {
		key := fileName(rec.Stem, i, len(ims), im.Ext())
		if err := ru.write(ctx, key, rec, func(w io.Writer) error { _, err := im.WriteTo(w); return err }); err != nil {
			return err
		}
		rec.Files = append(rec.Files, key)
	}
	return nil
}

// audio streams speech to its file.
func (ru *run) audio(ctx context.Context, rec *record, a *creative.Audio) error {
	defer a.Close()
	key := fileName(rec.Stem, 0, 1, a.Ext())
	if err := ru.write(ctx, key, rec, func(w io.Writer) error { _, err := io.Copy(w, a); return err }); err != nil {
		return err
	}
	rec.Files = append(rec.Files, key)
	return nil
}

// meta is what an output carries as object metadata where the store keeps
// it.
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

// write fills the object key. A failure of the store is a *storeError;
// a failure of fill leaves nothing and is returned as it is.
func (ru *run) write(ctx context.Context, key string, rec *record, fill func(io.Writer) error) error {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	w, err := ru.store.NewWriter(wctx, key, meta(rec))
	if err != nil {
		return &storeError{err}
	}
	sw := &errWriter{w: w}
	if err := fill(sw); err != nil {
		cancel()
		_ = w.Close()
		if sw.err != nil {
			return &storeError{sw.err}
		}
		return err
	}
	if err := w.Close(); err != nil {
		return &storeError{err}
	}
	return nil
}

// An errWriter remembers its writer's error, to tell a store's failure from
// a source's.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// download fetches an answered job's links to their files, then records
// it done. A link that is gone (403, 404, 410) marks the answer lost.
func (ru *run) download(ctx context.Context, rec *record, start time.Time) {
	rec.Files = nil
	for i, u := range rec.URLs {
		key, err := ru.fetch(ctx, rec, i, u)
		if err != nil {
			rec.Error = "the call was answered but its files were not all downloaded (a rerun downloads them without paying again): " + strings.TrimPrefix(err.Error(), "creative: ")
			var ae *creative.APIError
			if errors.As(err, &ae) && (ae.StatusCode == http.StatusNotFound || ae.StatusCode == http.StatusGone || ae.StatusCode == http.StatusForbidden) {
				rec.Lost = true
				rec.Error = "the answer's link no longer works (--repay-expired pays for the job again): " + strings.TrimPrefix(err.Error(), "creative: ")
			}
			var se *storeError
			if errors.As(err, &se) {
				ru.failLedger(err, nil)
			}
			rec.State = Answered
			ru.finish(ctx, rec, start)
			return
		}
		rec.Files = append(rec.Files, key)
	}
	rec.State, rec.Error, rec.Lost = Done, "", false
	ru.finish(ctx, rec, start)
}

// fetch downloads link i of rec to its file, named by its first bytes.
func (ru *run) fetch(ctx context.Context, rec *record, i int, link string) (string, error) {
	lw := &lazyWriter{name: func(head []byte) string { return fileName(rec.Stem, i, len(rec.URLs), sniff.FileExt(head, link)) }}
	lw.open = func(key string) (io.WriteCloser, error) {
		return ru.store.NewWriter(lw.ctx, key, meta(rec))
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	lw.ctx = wctx
	var requests int
	count := creative.WithMiddleware(func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
		requests++
		return next(req)
	})
	_, err := ru.c.Download(ctx, creative.URL(link), lw, append([]creative.Option{count}, ru.o.CallOptions...)...)
	rec.Requests += requests
	if err != nil {
		cancel()
		lw.abort()
		if lw.err != nil {
			return "", &storeError{lw.err}
		}
		return "", err
	}
	if err := lw.close(); err != nil {
		return "", &storeError{err}
	}
	return lw.key, nil
}

// A lazyWriter opens its object once it knows the first bytes, which name
// the file's type.
type lazyWriter struct {
	ctx  context.Context
	name func(head []byte) string
	open func(key string) (io.WriteCloser, error)
	head []byte
	key  string
	w    io.WriteCloser
	err  error // the store's
}

const headLen = 16

func (l *lazyWriter) Write(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.w == nil {
		l.head = append(l.head, p...)
		if len(l.head) < headLen {
			return len(p), nil
		}
		if err := l.start(); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	n, err := l.w.Write(p)
	if err != nil {
		l.err = err
	}
	return n, err
}

// start opens the object and writes the bytes held back.
func (l *lazyWriter) start() error {
	l.key = l.name(l.head)
	w, err := l.open(l.key)
	if err != nil {
		l.err = err
		return err
	}
	l.w = w
	if _, err := w.Write(l.head); err != nil {
		l.err = err
		return err
	}
	l.head = nil
	return nil
}

// abort leaves nothing: the object, if opened, is closed with its context
// cancelled.
func (l *lazyWriter) abort() {
	if l.w != nil {
		_ = l.w.Close()
	}
}

// close ends the object: made visible, or left out when the context was
// cancelled.
func (l *lazyWriter) close() error {
	if l.w == nil && l.err == nil {
		if err := l.start(); err != nil {
			return err
		}
	}
	if l.w == nil {
		return l.err
	}
	err := l.w.Close()
	if err != nil && l.ctx.Err() == nil && l.err == nil {
		l.err = err
	}
	return err
}
