package creative

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// This file holds the bounds of the process rather than of one answer: the
// budget of answer bytes held in memory at once by every call of every
// Client, and the most links an answer may list.

// DefaultAnswerBudget is the process's budget of answer bytes in flight:
// the bodies of answers read whole (every operation but text-to-speech
// and downloads, which stream) that every call of every Client holds at
// once. It fits one answer of DefaultMaxResponseBytes with room for
// others, and bounds the heap of a process reading answers at any
// concurrency to about twice it once the garbage collector's headroom is
// counted: eight or thirty-two answers that never end, read at once, peak
// near 800 MiB of RSS, which a container of 2 GiB survives with room to
// spare. SetAnswerBudget changes it.
const DefaultAnswerBudget = 384 << 20

// DefaultMaxLinks is how many links an answer that lists them (split-audio
// and its stems) may hold. The specification shows two stems and states no
// maximum; the separators in use make two, four, five or six, so sixteen
// leaves room for a service that splits further while a list of thousands,
// each a download, is refused. WithMaxLinks changes it.
const DefaultMaxLinks = 16

// WithMaxLinks sets how many links an answer that lists them may hold; an
// answer with more fails with ErrUnexpectedResponse (the service did the
// work). The default is DefaultMaxLinks.
func WithMaxLinks(n int) Option {
	return func(s *settings) error {
		if n <= 0 {
			return fmt.Errorf("creative: WithMaxLinks: want a positive count, got %d", n)
		}
		s.maxLinks = n
		return nil
	}
}

// links is the call's bound on the links of an answer.
func (s *settings) links() int {
	if s.maxLinks > 0 {
		return s.maxLinks
	}
	return DefaultMaxLinks
}

// SetAnswerBudget sets the process's budget of answer bytes in flight (see
// DefaultAnswerBudget); n <= 0 restores the default. A call reserves the
// bytes of its answer before it reads them: one whose Content-Length is
// more than the budget fails unread, and one without a Content-Length
// reserves as its bytes come. A call waits while others hold the budget
// (within its context); one that holds bytes and needs more while every
// other holder waits too fails instead, so that no set of answers waits
// for ever. Calls in flight keep the budget they reserved from.
func SetAnswerBudget(n int64) {
	if n <= 0 {
		n = DefaultAnswerBudget
	}
	answerBudget.Store(newBudget(n))
}

var answerBudget atomic.Pointer[budget]

func init() { answerBudget.Store(newBudget(DefaultAnswerBudget)) }

// A budget is a count of bytes that calls take and give back.
type budget struct {
	mu      sync.Mutex
	size    int64
	used    int64
	holders int // calls holding bytes
	stuck   int // of them, those waiting for more
	// waiting are told when bytes are given back. Each waiter makes its
	// own channel, and only while it waits: a channel made by one
	// testing/synctest bubble must not be touched by another.
	waiting []chan struct{}
}

func newBudget(n int64) *budget { return &budget{size: n} }

// errBudgetSpent fails a call that holds answer bytes and needs more while
// every other call that holds some waits for more too.
var errBudgetSpent = errors.New("the process's budget of answer bytes in flight is spent by answers that all wait for more (raise it with SetAnswerBudget)")

// A reservation is one call's part of the budget.
type reservation struct {
	b    *budget
	held int64
}

func reserve() *reservation { return &reservation{b: answerBudget.Load()} }

// take adds n bytes to the reservation, waiting until they are free or
// ctx ends.
func (r *reservation) take(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	b := r.b
	holding := r.held > 0
	b.mu.Lock()
	for b.used+n > b.size {
		if n > b.size || holding && b.stuck+1 >= b.holders {
			b.mu.Unlock()
			return errBudgetSpent
		}
		freed := make(chan struct{}, 1)
		b.waiting = append(b.waiting, freed)
		if holding {
			b.stuck++
		}
		b.mu.Unlock()
		var err error
		select {
		case <-freed:
		case <-ctx.Done():
			err = ctx.Err()
		}
		b.mu.Lock()
		if holding {
			b.stuck--
		}
		if i := slices.Index(b.waiting, freed); i >= 0 {
			b.waiting = slices.Delete(b.waiting, i, i+1)
		}
		if err != nil {
			b.mu.Unlock()
			return err
		}
	}
	b.used += n
	if !holding {
		b.holders++
	}
	b.mu.Unlock()
	r.held += n
	return nil
}

// give returns n of the reservation's bytes.
func (r *reservation) give(n int64) {
	if n <= 0 {
		return
	}
	b := r.b
	b.mu.Lock()
	b.used -= n
	r.held -= n
	if r.held == 0 {
		b.holders--
	}
	for _, w := range b.waiting {
		w <- struct{}{} // each has room for one, and is told once
	}
	b.waiting = b.waiting[:0]
	b.mu.Unlock()
}

// release returns the whole reservation.
func (r *reservation) release() { r.give(r.held) }
