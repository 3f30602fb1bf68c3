package batch

import (
	"testing"
	"testing/synctest"
	"time"
)

// A lease once in doubt is never proven again, even when the goroutine
// that writes the heartbeat runs before the watchdog does (a process
// stopped past its lease and woken): a heartbeat write that began after
// the lease lapsed does not renew it, and one that began before does.
func TestALeaseThatLapsedIsNotRenewedByALaterHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLease(90 * time.Second)
		time.Sleep(50 * time.Second)
		l.renew(l.since()) // began at 50 s: proven until 110 s
		time.Sleep(59 * time.Second)
		if !l.held() {
			t.Fatal("the lease renewed at 50 s was not held at 109 s")
		}
		time.Sleep(2 * time.Second) // 111 s: lapsed
		if l.held() {
			t.Fatal("the lease was held 61 s after its last heartbeat began")
		}
		l.renew(l.since()) // a write that began after it lapsed
		if l.held() {
			t.Fatal("a heartbeat written after the lease lapsed proved it again")
		}
		select {
		case <-l.lost.Done():
		default:
			t.Fatal("the lease is not marked lost")
		}
	})
}
