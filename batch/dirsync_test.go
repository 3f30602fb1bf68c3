package batch

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSyncDirSharesOneSyncAmongWaitersAndStartsItAfterThem(t *testing.T) {
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var started atomic.Int32
	release := make(chan struct{})
	firstRunning := make(chan struct{})
	d.dirSyncs.sync = func(string) error {
		if started.Add(1) == 1 {
			close(firstRunning)
			<-release // the first sync is under way while the others ask
		}
		return nil
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.syncDir("out") })
	<-firstRunning
	const waiters = 10
	var returned atomic.Int32
	for range waiters {
		wg.Go(func() {
			if err := d.syncDir("out"); err != nil {
				t.Error(err)
			}
			returned.Add(1)
		})
	}
	// The waiters asked during the first sync: none may return on it.
	deadline := time.Now().Add(5 * time.Second)
	for !d.waiting("out") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if n := returned.Load(); n != 0 {
		t.Fatalf("%d callers returned on a sync that started before they asked", n)
	}
	close(release)
	wg.Wait()
	if n := started.Load(); n != 2 {
		t.Errorf("%d syncs, want 2: the one under way and one shared by the %d that asked during it", n, waiters)
	}
	if n := d.pending(); n != 0 {
		t.Errorf("%d folders still tracked after every sync ended", n)
	}
}

// waiting reports whether a sync of dir waits for the running one.
func (d *Dir) waiting(dir string) bool {
	d.dirSyncs.mu.Lock()
	defer d.dirSyncs.mu.Unlock()
	fs := d.folders[dir]
	return fs != nil && fs.next != nil
}

// pending is how many folders have a sync running or waiting.
func (d *Dir) pending() int {
	d.dirSyncs.mu.Lock()
	defer d.dirSyncs.mu.Unlock()
	return len(d.folders)
}
