//go:build unix

package pgledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/pgledger/pgproxy"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

func hexToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// atkProxied opens a ledger of a fresh database through a fault proxy.
func atkProxied(t *testing.T) (*Ledger, *pgproxy.Proxy) {
	t.Helper()
	srv := pgtest.Shared(t)
	url := srv.Database(t)
	p, err := pgproxy.New(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	purl, err := p.URL(url)
	require.NoError(t, err)
	l, err := Open(t.Context(), purl)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l, p
}

func newClaim(run string, i int) *batch.Claim {
	job := fmt.Sprintf("%032x", i+1)
	return &batch.Claim{Entry: batch.Entry{Record: batch.Record{Job: job, Line: i + 1, Op: "image/text-to-image",
		Attempt: 1, State: batch.Claimed, Run: run, Worker: "atk"}, Kind: batch.KindCall, Stem: "j" + job}}
}

// A claim whose context is cancelled returns, even while every batch in
// flight is another caller's and the network holds them.
func TestAttackACancelledClaimQueuedBehindStalledBatchesReturns(t *testing.T) {
	l, p := atkProxied(t)
	run := hexToken()
	s, err := l.Begin(t.Context(), batch.RunInfo{Token: run, Worker: "atk", Lease: time.Minute})
	require.NoError(t, err)
	defer func() { _ = s.End(context.Background()) }()

	p.Stall()
	// Every slot holds a batch of a caller whose context lives on.
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	held := make(chan struct{}, slots)
	for i := range slots {
		go func() {
			_, _ = l.Claim(bg, newClaim(run, i))
			held <- struct{}{}
		}()
	}
	// Until every slot is taken (the batches are stuck in the proxy).
	require.Eventually(t, func() bool { return len(l.claims.slots) == slots }, 10*time.Second, 5*time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := l.Claim(ctx, newClaim(run, 100))
		done <- err
	}()
	require.Eventually(t, func() bool {
		l.claims.mu.Lock()
		defer l.claims.mu.Unlock()
		return len(l.claims.pending) == 1
	}, 10*time.Second, 5*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.Error(t, err, "a cancelled claim that was never sent is not claimed")
	case <-time.After(5 * time.Second):
		p.Resume()
		stopBG()
		<-done
		t.Fatal("a claim whose context was cancelled waited for other callers' batches held by the network")
	}
	p.Resume()
	stopBG()
	for range slots {
		<-held
	}
}

// A claim whose context is cancelled returns even when it was sent in the
// batch of another caller whose context lives on, held by the network;
// tried again once the network is back, it is found to be the run's own
// or is made.
func TestAttackACancelledClaimInAnothersStalledBatchReturns(t *testing.T) {
	l, p := atkProxied(t)
	run := hexToken()
	s, err := l.Begin(t.Context(), batch.RunInfo{Token: run, Worker: "atk", Lease: time.Minute})
	require.NoError(t, err)
	defer func() { _ = s.End(context.Background()) }()

	p.Stall()
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	// Every slot holds a batch; the first is one's whose context ends.
	first, endFirst := context.WithCancel(bg)
	held := make(chan struct{}, slots+1)
	for i := range slots {
		ctx := bg
		if i == 0 {
			ctx = first
		}
		go func() {
			_, _ = l.Claim(ctx, newClaim(run, i))
			held <- struct{}{}
		}()
		require.Eventually(t, func() bool { return len(l.claims.slots) == i+1 }, 10*time.Second, time.Millisecond)
	}
	pending := func(n int) func() bool {
		return func() bool {
			l.claims.mu.Lock()
			defer l.claims.mu.Unlock()
			return len(l.claims.pending) == n
		}
	}
	// B, whose context lives on, queues first, then A: B takes the slot
	// that frees and sends both.
	go func() {
		_, _ = l.Claim(bg, newClaim(run, 200))
		held <- struct{}{}
	}()
	require.Eventually(t, pending(1), 10*time.Second, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	a := newClaim(run, 201)
	done := make(chan error, 1)
	go func() {
		_, err := l.Claim(ctx, a)
		done <- err
	}()
	require.Eventually(t, pending(2), 10*time.Second, time.Millisecond)
	endFirst()
	require.Eventually(t, pending(0), 10*time.Second, time.Millisecond)
	cancel()
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		p.Resume()
		stopBG()
		<-done
		t.Fatal("a claim whose context was cancelled waited for another caller's batch held by the network")
	}
	p.Resume()
	stopBG()
	for range slots + 1 {
		<-held
	}
	// Landed or not, the claim tried again is the run's.
	res, err2 := l.Claim(context.Background(), a)
	require.NoError(t, err2)
	require.True(t, res.Claimed, "the cancelled claim (%v) tried again", err)
}
