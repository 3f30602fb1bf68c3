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
// once. It fits one answer of DefaultMaxResponseBytes. The bytes held at
// once are at most the budget plus one answer's overdraft (see
// SetAnswerBudget), itself at most the budget: an answer without a
// Content-Length holds at most half of it, twice while it is joined. With
// the garbage collector's headroom the heap stays under four times the
// budget, 1 GiB, at any concurrency: eight answers that never end, read at
// once, peak near 650 MiB of RSS, which a container of 2 GiB survives with
// room to spare. SetAnswerBudget changes it.
const DefaultAnswerBudget = 256 << 20

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
// (within its context). An answer already coming is never failed for the
// budget's sake: when it holds bytes and needs more while every other
// holder waits too, it alone may overdraw the budget by what it still
// needs within its own cap (WithMaxResponseBytes, and half the budget for
// an answer without a Content-Length), while every other call waits until
// it lets go. The bytes held at once are thus at most the budget plus what
// one answer may hold, at most the budget again (half of it, twice while
// joined). Calls in flight keep the budget they reserved from.
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
	peak    int64 // the most used has been
	holders int   // calls holding bytes
	stuck   int   // of them, those waiting for more
	// over is the one holder that may overdraw the budget, until it holds
	// nothing: it was the last that did not wait when it needed more.
	over *reservation
	// waiting are told when bytes are given back. Each waiter makes its
	// own channel, and only while it waits: a channel made by one
	// testing/synctest bubble must not be touched by another.
	waiting []chan struct{}
}

func newBudget(n int64) *budget { return &budget{size: n} }

// errBudgetSpent fails a take of more bytes than the whole budget, which
// would wait for ever; readBody refuses such an answer before it takes.
var errBudgetSpent = errors.New("the answer needs more bytes than the process's whole budget of answer bytes in flight (raise it with SetAnswerBudget)")

// A reservation is one call's part of the budget.
type reservation struct {
	b    *budget
	held int64
}

func reserve() *reservation { return &reservation{b: answerBudget.Load()} }

// take adds n bytes to the reservation, waiting until they are free or
// ctx ends. A holder that needs more while every other holder waits takes
// them past the budget, as the budget's one overdraft (see
// SetAnswerBudget): waiting, every holder would wait for ever, and failing
// would drop an answer the service was paid for. Its caller keeps it
// within its cap.
func (r *reservation) take(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.size {
		return errBudgetSpent
	}
	for b.used+n > b.size && b.over != r {
		if r.held > 0 && b.over == nil && b.stuck+1 >= b.holders {
			b.over = r
			break
		}
		if err := b.wait(ctx, r.held > 0); err != nil {
			return err
		}
	}
	if r.held == 0 {
		b.holders++
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	r.held += n
	return nil
}

// wait waits, with b.mu held, until bytes are given back or ctx ends; a
// holder counts as stuck while it waits.
func (b *budget) wait(ctx context.Context, holding bool) error {
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
	return err
}

// give returns n of the reservation's bytes; one that holds nothing more
// ends its overdraft.
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
		if b.over == r {
			b.over = nil
		}
	}
	for _, w := range b.waiting {
		w <- struct{}{} // each has room for one, and is told once
	}
	b.waiting = b.waiting[:0]
	b.mu.Unlock()
}

// release returns the whole reservation.
func (r *reservation) release() { r.give(r.held) }
