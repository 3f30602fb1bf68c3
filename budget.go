package creative

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// This file holds the bounds of a Client rather than of one answer: the
// budget of answer bytes held in memory at once by every call of the
// Client, and the most links an answer may list.

// DefaultAnswerBudget is a Client's budget of answer bytes in flight: the
// bodies of answers read whole (every operation but text-to-speech and
// downloads, which stream) that every call of the Client holds at once.
// It fits one answer of DefaultMaxResponseBytes. The bytes held at once
// are at most the budget plus one answer's overdraft (see
// WithAnswerBudget), itself at most the budget: an answer without a
// Content-Length holds at most half of it, twice while it is joined. With
// the garbage collector's headroom the heap stays under four times the
// budget, 1 GiB, at any concurrency: eight answers that never end, read at
// once, peak near 650 MiB of RSS, which a container of 2 GiB survives with
// room to spare. WithAnswerBudget changes it; each Client has its own.
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

// WithAnswerBudget sets the Client's budget of answer bytes in flight
// (see DefaultAnswerBudget): what the answers read whole by all its calls
// at once may hold. A call reserves the bytes of its answer as they come:
// by its Content-Length before reading it (one that declares more than the
// budget fails unread), or chunk by chunk when it has none. An answer
// whose bytes do not fit takes the budget's one overdraft, when no other
// answer holds it, and is read at once, up to its own cap (its
// Content-Length, or half the budget without one); only while another
// answer holds the overdraft does it wait (within its context) for bytes
// to be given back. The bytes held at once are thus at most the budget
// plus one answer's overdraft, itself at most the budget. Client only.
func WithAnswerBudget(n int64) Option {
	return func(s *settings) error {
		if n <= 0 {
			return fmt.Errorf("creative: WithAnswerBudget: want a positive size, got %d", n)
		}
		return clientOnly("WithAnswerBudget", s, func() { s.answerBudget = n })
	}
}

// A budget is a count of bytes that calls take and give back.
type budget struct {
	mu      sync.Mutex
	size    int64
	used    int64
	peak    int64 // the most used has been
	holders int   // calls holding bytes
	stuck   int   // of them, those waiting for more
	// over is the one holder that may overdraw the budget, until it holds
	// nothing: the first that needed more than the budget had free.
	over *reservation
	// waiting are told when bytes are given back. Each waiter makes its
	// own channel, and only while it waits: a channel made by one
	// testing/synctest bubble must not be touched by another.
	waiting []chan struct{}
}

func newBudget(n int64) *budget { return &budget{size: n} }

// errBudgetSpent fails a take of more bytes than the whole budget, which
// would wait for ever; readBody refuses such an answer before it takes.
var errBudgetSpent = errors.New("the answer needs more bytes than the Client's whole budget of answer bytes in flight (raise it with WithAnswerBudget)")

// A reservation is one call's part of the budget.
type reservation struct {
	b    *budget
	held int64
}

// reserve starts a call's part of the Client's budget.
func (c *Client) reserve() reservation {
	if c == nil || c.budget == nil {
		return reservation{b: newBudget(DefaultAnswerBudget)}
	}
	return reservation{b: c.budget}
}

// take adds n bytes to the reservation. Bytes that do not fit in the
// budget are taken past it, as the budget's one overdraft (see
// WithAnswerBudget), when no other reservation holds it: the answer is
// arriving, the service was paid for it, and a wait could outlast the
// call's deadline and drop it. Only while another holds the overdraft does
// take wait until bytes are given back or ctx ends. Its caller keeps the
// overdraft within its cap.
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
		if b.over == nil {
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
