package batch

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"

	creative "github.com/creativegen/creative-go"
)

// errNotStarted stops the first request of a job once the run is stopping.
var errNotStarted = errors.New("batch: stopping: not sent")

// errLeaseInDoubt stops any request of a job once the run's lease is in
// doubt: another worker may soon send the job again.
var errLeaseInDoubt = errors.New("batch: the run's lease is in doubt: not sent")

// A starter decides, under one lock, whether a job may send its first
// request. A job may wait in the client (for a rate limit, or a pause a 429
// asked for) after a worker took it; once the run is stopping, such a job
// is cancelled without sending anything, while jobs that sent are let
// finish: they may be paid for.
type starter struct {
	mu       sync.Mutex
	stopping context.Context // done once stop is called
	stopAll  context.CancelFunc
	inFlight int // jobs that sent and have not ended
}

// A jobRun is one job between a worker taking it and its end.
type jobRun struct {
	cancel   context.CancelFunc
	keep     func() bool // keeps stop from cancelling the job once it sent
	sent     bool        // its first request went out; guarded by starter.mu
	requests atomic.Int32
}

func newStarter() *starter {
	ctx, cancel := context.WithCancel(context.Background())
	return &starter{stopping: ctx, stopAll: cancel}
}

// begin starts a job under ctx, or reports false once the run is stopping.
func (s *starter) begin(ctx context.Context) (*jobRun, context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping.Err() != nil {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(ctx)
	return &jobRun{cancel: cancel, keep: context.AfterFunc(s.stopping, cancel)}, ctx, true
}

// gate is the middleware of every request of the job r, the one place a
// send passes the lease check: an attempt goes out only while the run's
// lease l is proven (a job whose lease is in doubt is cancelled), and its
// first attempt only while the run is not stopping. It counts the
// attempts.
func (s *starter) gate(r *jobRun, l *lease) creative.Middleware {
	return func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
		s.mu.Lock()
		var refused error
		switch {
		case !l.held():
			refused = errLeaseInDoubt
			r.cancel()
		case !r.sent && s.stopping.Err() != nil:
			refused = errNotStarted
		}
		if refused != nil {
			s.mu.Unlock()
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, refused
		}
		if !r.sent {
			r.sent = true
			r.keep()
			s.inFlight++
		}
		s.mu.Unlock()
		r.requests.Add(1)
		return next(req)
	}
}

// end ends the job r.
func (s *starter) end(r *jobRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.cancel()
	r.keep()
	if r.sent {
		s.inFlight--
	}
}

// stop lets no job send its first request any more, cancels those waiting
// to, and returns how many jobs are in flight.
func (s *starter) stop() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopAll()
	return s.inFlight
}
