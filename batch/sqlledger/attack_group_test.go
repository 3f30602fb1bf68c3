package sqlledger

import (
	"context"
	"errors"
	"testing"
	"time"
)

// heldGroup is a group of batched statements (many's kind) whose sends
// hold until release is closed, each noting the values it sent.
func heldGroup(slots int) (g *group[*int], started chan []int, release chan struct{}) {
	started, release = make(chan []int, 64), make(chan struct{})
	g = &group[*int]{max: 128, slots: make(chan struct{}, slots), send: func(ctx context.Context, vs []*int) []error {
		got := make([]int, len(vs))
		for i, v := range vs {
			got[i] = *v
		}
		started <- got
		select {
		case <-release:
		case <-ctx.Done():
		}
		return make([]error, len(vs))
	}}
	return g, started, release
}

// A request whose context ends while it is queued behind batches that
// hold every slot returns at once, and is not sent after.
func TestAttackGroupACancelledRequestQueuedBehindHeldBatchesReturns(t *testing.T) {
	g, started, release := heldGroup(2)
	defer close(release)
	for i := range 2 {
		v := i
		go g.do(context.Background(), &v)
		<-started
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	v := 7
	go func() { done <- g.do(ctx, &v) }()
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.pending) == 1 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled request queued: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a request whose context ended waited for a slot held by other callers' batches")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) != 0 {
		t.Fatalf("the cancelled request stays queued, to be sent after its caller left: %d", len(g.pending))
	}
}

// A request whose context ends once it is in a batch that another caller
// sends, and that holds, returns at once.
func TestAttackGroupACancelledRequestInAnothersHeldBatchReturns(t *testing.T) {
	g, started, release := heldGroup(1)
	defer close(release)
	first := 0
	firstCtx, endFirst := context.WithCancel(context.Background())
	go g.do(firstCtx, &first)
	<-started
	// B, whose context lives on, queues first, then A: B takes the slot
	// once it is free, and sends both.
	b, a := 1, 2
	go g.do(context.Background(), &b)
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.pending) == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.do(ctx, &a) }()
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.pending) == 2 })
	endFirst()
	if got := <-started; len(got) != 2 {
		t.Fatalf("the second batch sent %v", got)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a request that left its batch is told taken")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a request whose context ended waited for another caller's batch that holds")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 10000 {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("never came")
}
