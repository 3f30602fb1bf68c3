package pgledger

import (
	"context"
	"slices"
	"sync"
)

// A group sends the requests that wait at the same moment as one
// statement: while every slot has a batch in flight, requests queue, and
// the next caller to find a slot free sends all that queued (up to max).
// Over a network of 20 ms a round trip, a run's 64 goroutines then share
// a handful of round trips instead of taking one each.
//
// A caller whose context ends stops waiting: a request still queued is
// taken out of the queue, and one in a batch already sent is left to it
// (its statement was made from its values when it was taken, so nothing
// of the request is read after), to land or not.
type group[T any] struct {
	max   int
	slots chan struct{}
	// prepare makes the statement of a batch from its requests' values,
	// and returns what sends it.
	prepare func(batch []T) func(ctx context.Context) ([]bool, error)

	mu      sync.Mutex
	pending []*waiter[T]
}

// A waiter is one request in a group's queue.
type waiter[T any] struct {
	v    T
	sent bool // in a batch (under the group's mu)
	ok   bool // taken by the batch's statement
	done chan struct{}
}

func newGroup[T any](slots, max int, prepare func([]T) func(context.Context) ([]bool, error)) *group[T] {
	return &group[T]{max: max, slots: make(chan struct{}, slots), prepare: prepare}
}

// do queues v and returns whether the statement of its batch took it.
// false is no answer: the caller goes the one-at-a-time way, which reads
// back what a batch whose answer was lost may have written.
func (g *group[T]) do(ctx context.Context, v T) bool {
	w := &waiter[T]{v: v, done: make(chan struct{})}
	g.mu.Lock()
	g.pending = append(g.pending, w)
	g.mu.Unlock()
	for {
		select {
		case <-w.done:
			return w.ok
		case <-ctx.Done():
			g.mu.Lock()
			if i := slices.Index(g.pending, w); i >= 0 {
				g.pending = slices.Delete(g.pending, i, i+1)
			}
			g.mu.Unlock()
			return false
		case g.slots <- struct{}{}:
			g.flush(ctx)
			<-g.slots
		}
		g.mu.Lock()
		sent := w.sent
		g.mu.Unlock()
		if sent {
			select {
			case <-w.done: // in a batch that another caller sends
				return w.ok
			case <-ctx.Done():
				return false
			}
		}
	}
}

// flush sends what is queued, up to max.
func (g *group[T]) flush(ctx context.Context) {
	g.mu.Lock()
	n := min(len(g.pending), g.max)
	batch := g.pending[:n:n]
	g.pending = g.pending[n:]
	var send func(context.Context) ([]bool, error)
	if n > 0 {
		vs := make([]T, n)
		for i, w := range batch {
			vs[i] = w.v
			w.sent = true
		}
		send = g.prepare(vs)
	}
	g.mu.Unlock()
	if n == 0 {
		return
	}
	ok, err := send(ctx)
	for i, w := range batch {
		w.ok = err == nil && ok[i]
		close(w.done)
	}
}
