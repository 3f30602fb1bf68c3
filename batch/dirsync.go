package batch

import "sync"

// dirSyncs shares the syncs of a folder among the writers that wait for
// one. A writer that made an entry in a folder needs a sync of the folder
// that starts after the entry was made; writers that ask while a sync is
// running all wait for the next one, which one of them runs. Sixteen
// workers writing outputs into one folder then sync it about once per
// round instead of sixteen times, and each still returns only when its own
// entry is durable.
type dirSyncs struct {
	mu      sync.Mutex
	folders map[string]*folderSync // folders with a sync running or waiting
	sync    func(dir string) error // syncs one folder; nil: syncDirNow
}

// A folderSync is the state of one folder's syncs.
type folderSync struct {
	running *dirFlight // the sync under way, if any
	next    *dirFlight // the sync that starts when it ends: not started yet
}

// A dirFlight is one sync of a folder, and its outcome once done is
// closed.
type dirFlight struct {
	done chan struct{}
	err  error
}

// syncDir makes the entries of the folder dir (relative to root) durable:
// it returns once a sync of dir that started after the call has ended.
func (d *Dir) syncDir(dir string) error {
	d.dirSyncs.mu.Lock()
	if d.folders == nil {
		d.folders = map[string]*folderSync{}
	}
	fs := d.folders[dir]
	if fs == nil {
		fs = &folderSync{}
		d.folders[dir] = fs
	}
	if f := fs.next; f != nil {
		// Not started yet, so it starts after this caller's entry.
		d.dirSyncs.mu.Unlock()
		<-f.done
		return f.err
	}
	f := &dirFlight{done: make(chan struct{})}
	fs.next = f
	prev := fs.running
	d.dirSyncs.mu.Unlock()
	if prev != nil {
		<-prev.done
	}
	d.dirSyncs.mu.Lock()
	fs.next, fs.running = nil, f
	d.dirSyncs.mu.Unlock()

	run := d.dirSyncs.sync
	if run == nil {
		run = d.syncDirNow
	}
	f.err = run(dir)

	d.dirSyncs.mu.Lock()
	fs.running = nil
	if fs.next == nil {
		delete(d.folders, dir)
	}
	d.dirSyncs.mu.Unlock()
	close(f.done)
	return f.err
}

// syncDirNow syncs the folder dir itself.
func (d *Dir) syncDirNow(dir string) error { return syncDirOf(d.root, dir) }
