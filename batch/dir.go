package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// A Dir is the Store of a local folder: every key is a file under the
// folder, opened through an os.Root so that no key, and no symbolic link met
// on the way, reaches outside it.
//
// Create writes a temporary file and links it to the key (which fails if
// the key exists: an exclusive create whose object appears whole); Put
// and NewWriter write a temporary file that is renamed over the key only
// by a successful Close. Temporary files live in the folder's ".tmp"
// subfolder, one subfolder per open Dir, held by a lock: NewDir removes
// those of earlier runs that were killed, and never those of a Dir open in
// another process.
//
// A write is durable when it returns. On Linux 5.8 or later, on ext4,
// xfs, btrfs or tmpfs, a Create and a write of up to 64 KiB are made
// durable by the Dir's journal (the folder's ".journal" subfolder): one
// log per open Dir, whose appends the writers of one moment share a sync
// of, and which the next NewDir after a crash of the machine replays.
// Larger writes, and every write elsewhere, sync the file and its folder.
//
// A Dir is shared by the processes of one machine, which its locks and
// its journal's boot id are made for; workers on several machines share a
// bucket instead.
type Dir struct {
	path string
	root *os.Root
	tmp  string   // this Dir's folder of temporary files, relative to root
	lock *os.File // held while the Dir is open; see lockTemp
	j    *journal // nil: every write syncs its file and its folder
	temps
	once sync.Once
	dirSyncs
}

// tmpDir is the folder of temporary files under a Dir's root. Its name
// starts with a dot, and keys may not, so no key names it.
const tmpDir = ".tmp"

// NewDir opens the folder at path as a Store, creating it if needed. It
// first makes durable what the journals of runs that ended without
// closing hold (restoring files a crash of the machine lost), and removes
// the temporary files such runs left behind.
func NewDir(dirPath string) (*Dir, error) {
	if err := os.MkdirAll(dirPath, 0o755); err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	root, err := os.OpenRoot(dirPath)
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	j, err := openJournal(root)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("batch: %s: %w", dirPath, err)
	}
	d := &Dir{path: dirPath, root: root, j: j}
	if err := d.openTemp(); err != nil {
		if j != nil {
			j.close()
		}
		root.Close()
		return nil, err
	}
	return d, nil
}

// Path returns the folder the Dir was opened on.
func (d *Dir) Path() string { return d.path }

// openTemp makes this Dir's folder of temporary files, locked, and removes
// the unlocked ones: their owners are gone.
func (d *Dir) openTemp() error {
	// Another run closing removes the shared folder when it empties, and
	// another run starting makes it again: a step that finds it gone, or
	// made under its feet, is tried again from the start.
	var err error
	for range 8 {
		err = d.openTempOnce()
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return err
}

// openTempOnce is one try of openTemp.
func (d *Dir) openTempOnce() error {
	if err := d.root.MkdirAll(tmpDir, 0o755); err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	entries, err := fs.ReadDir(d.root.FS(), tmpDir)
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	for _, e := range entries {
		d.removeIfDead(e)
	}
	// The folder is made and locked under a staging name, then renamed:
	// a folder under its final name is always locked while its run lives.
	d.tmp = tmpDir + "/" + randomName()
	staging := d.tmp + stagingSuffix
	err = d.root.Mkdir(staging, 0o755)
	if errors.Is(err, fs.ErrNotExist) {
		// Another run closing removed the empty folder: make it again.
		if err = d.root.MkdirAll(tmpDir, 0o755); err == nil {
			err = d.root.Mkdir(staging, 0o755)
		}
	}
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	f, err := d.root.OpenFile(staging+"/lock", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		if _, lerr := tryLock(f); lerr != nil && !errors.Is(lerr, errors.ErrUnsupported) {
			f.Close()
			err = lerr
		}
	}
	if err == nil {
		if err = d.root.Rename(staging, d.tmp); err != nil {
			f.Close()
		}
	}
	if err != nil {
		_ = d.root.RemoveAll(staging)
		return fmt.Errorf("batch: temporary files: %w", err)
	}
	d.lock = f
	if err := d.openTemps(); err != nil {
		f.Close()
		_ = d.root.RemoveAll(d.tmp)
		return fmt.Errorf("batch: temporary files: %w", err)
	}
	return nil
}

// stagingSuffix marks a folder of temporary files being made.
const stagingSuffix = ".new"

// removeIfDead removes an entry of the temporary files' folder that no
// live run holds: a folder whose lock can be taken, a folder being made
// for more than a minute (its run died), a stray file.
func (d *Dir) removeIfDead(e fs.DirEntry) {
	p := tmpDir + "/" + e.Name()
	if !e.IsDir() {
		_ = d.root.Remove(p)
		return
	}
	if strings.HasSuffix(e.Name(), stagingSuffix) {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Minute {
			_ = d.root.RemoveAll(p)
		}
		return
	}
	f, err := d.root.OpenFile(p+"/lock", os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		_ = d.root.RemoveAll(p) // a folder is renamed to its name only once locked
		return
	}
	if err != nil {
		return
	}
	defer f.Close()
	if ok, _ := tryLock(f); ok {
		_ = d.root.RemoveAll(p)
	}
}

// checkKey refuses a key that is not a clean relative slash path inside
// the root: empty, absolute, with "." or ".." or empty segments, a
// backslash, or a segment starting with a dot (reserved for the store).
func checkKey(key string) error {
	if key == "" || !fs.ValidPath(key) || key == "." || strings.Contains(key, `\`) {
		return fmt.Errorf("batch: key %q is not a clean relative path", key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(seg, ".") {
			return fmt.Errorf("batch: key %q has a segment starting with a dot", key)
		}
	}
	return nil
}

// checkPrefix is checkKey for a List prefix, which may be empty or end
// with a slash.
func checkPrefix(prefix string) error {
	p := strings.TrimSuffix(prefix, "/")
	if p == "" {
		if prefix != "" {
			return fmt.Errorf("batch: prefix %q is not a clean relative path", prefix)
		}
		return nil
	}
	if dirPart, _ := path.Split(p); dirPart != "" {
		if err := checkKey(strings.TrimSuffix(dirPart, "/")); err != nil {
			return err
		}
	}
	if strings.Contains(p, `\`) || strings.Contains(p, "//") || strings.HasPrefix(p, "/") {
		return fmt.Errorf("batch: prefix %q is not a clean relative path", prefix)
	}
	return nil
}

// Create writes key only if it does not exist, durably.
func (d *Dir) Create(_ context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	journaled := d.j != nil && len(data) <= journalMaxEntry
	if err := d.link(key, data, !journaled); err != nil {
		return err
	}
	var err error
	if journaled {
		err = d.j.commit(entryPut, key, data)
	} else {
		err = d.syncOwn(key)
	}
	if err != nil {
		// Nothing may rely on a claim that is not durable: give the key
		// back.
		_ = d.root.Remove(key)
		return fmt.Errorf("batch: %s: %w", key, err)
	}
	return nil
}

// syncOwn makes durable a write synced on its own: its folder is synced,
// then a journal marks that what it held of key before is old, so that no
// replay brings back older bytes.
func (d *Dir) syncOwn(key string) error {
	if err := d.syncDir(path.Dir(key)); err != nil {
		return err
	}
	if d.j != nil {
		return d.j.commit(entrySynced, key, nil)
	}
	return nil
}

// link writes data under a temporary name, synced when sync is set, then
// links it to key, which fails if key exists: a reader sees no key or the
// whole object, never a claim half written.
func (d *Dir) link(key string, data []byte, sync bool) error {
	f, tmp, err := d.createTemp()
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.placeTemp(tmp, key, false)
	}
	d.removeTemp(tmp) // key, if linked, keeps the file
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("batch: %s: %w", key, ErrExist)
	}
	if err != nil {
		return fmt.Errorf("batch: %s: %w", key, err)
	}
	return nil
}

// Put replaces key with data, atomically and durably.
func (d *Dir) Put(ctx context.Context, key string, data []byte) error {
	w, err := d.NewWriter(ctx, key, nil)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.(*dirWriter).abort()
		return err
	}
	return w.Close()
}

// Get reads key.
func (d *Dir) Get(_ context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	b, err := d.root.ReadFile(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("batch: %s: %w", key, ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	return b, nil
}

// Exists reports whether key names a file.
func (d *Dir) Exists(_ context.Context, key string) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	st, err := d.root.Stat(key)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("batch: %w", err)
	}
	return st.Mode().IsRegular(), nil
}

// Delete removes key.
func (d *Dir) Delete(_ context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	err := d.root.Remove(key)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("batch: %w", err)
	}
	if d.j != nil && err == nil {
		// So that a replay after a crash does not bring it back.
		return d.j.commit(entryDelete, key, nil)
	}
	return nil
}

// Close makes every write durable in its file and removes the Dir's
// journal, then releases the lock on its temporary files and removes them.
func (d *Dir) Close() error {
	var err error
	d.once.Do(func() {
		d.closeTemps()
		_ = d.root.RemoveAll(d.tmp)
		_ = d.root.Remove(tmpDir) // when no other run uses it
		d.lock.Close()
		if d.j != nil {
			d.j.close()
		}
		err = d.root.Close()
	})
	return err
}

// listPage is how many names of one folder List reads at once.
const listPage = 256

// List yields the keys under prefix in lexical order, walking the folders
// depth first. Names of one folder are read a page at a time; each folder's
// names are sorted, which holds that folder's names in memory (the ledger's
// layout keeps folders small).
func (d *Dir) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if err := checkPrefix(prefix); err != nil {
			yield("", err)
			return
		}
		// The folder to start in: the prefix's folder part.
		start, _ := path.Split(prefix)
		start = strings.TrimSuffix(start, "/")
		d.walk(ctx, start, prefix, yield)
	}
}

// walk yields the files under dir whose keys start with prefix, in
// lexical order; it returns false when yield asked to stop.
func (d *Dir) walk(ctx context.Context, dir, prefix string, yield func(string, error) bool) bool {
	name := dir
	if name == "" {
		name = "."
	}
	names, err := d.readNames(name)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return yield("", fmt.Errorf("batch: %w", err))
	}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return yield("", err)
		}
		key := n.name
		if dir != "" {
			key = dir + "/" + n.name
		}
		if n.dir {
			// A folder holds keys that start with key + "/".
			if strings.HasPrefix(key+"/", prefix) || strings.HasPrefix(prefix, key+"/") {
				if !d.walk(ctx, key, prefix, yield) {
					return false
				}
			}
			continue
		}
		if strings.HasPrefix(key, prefix) && !yield(key, nil) {
			return false
		}
	}
	return true
}

type dirName struct {
	name string
	dir  bool
}

// readNames reads the names of one folder, a page at a time, sorted as
// keys sort (a folder "a" sorts as "a/", after "a.png" and "a-1.png").
func (d *Dir) readNames(dir string) ([]dirName, error) {
	f, err := d.root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []dirName
	for {
		entries, err := f.ReadDir(listPage)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			out = append(out, dirName{e.Name(), e.IsDir()})
		}
		if err == io.EOF || len(entries) == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b dirName) int { return strings.Compare(a.sortKey(), b.sortKey()) })
	return out, nil
}

func (n dirName) sortKey() string {
	if n.dir {
		return n.name + "/"
	}
	return n.name
}

// NewWriter streams an object to key through a temporary file that Close
// syncs and renames to key. Meta is not kept: a folder has no place for it.
func (d *Dir) NewWriter(ctx context.Context, key string, _ map[string]string) (io.WriteCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	f, tmp, err := d.createTemp()
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	w := &dirWriter{ctx: ctx, d: d, key: key, tmp: tmp, f: f}
	if d.j != nil {
		w.small = []byte{}
	}
	return w, nil
}

// randomName is a new random name: for a temporary file, a folder of
// them, a journal's log.
func randomName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// A dirWriter is a temporary file that becomes key when closed whole.
type dirWriter struct {
	ctx    context.Context
	d      *Dir
	key    string
	tmp    string
	f      *os.File
	err    error // the first failed Write
	closed bool
	// small holds the bytes written while they fit in journalSmall and
	// the Dir keeps a journal; nil otherwise.
	small []byte
}

func (w *dirWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if err := w.ctx.Err(); err != nil {
		w.err = err
		return 0, err
	}
	n, err := w.f.Write(p)
	if err != nil {
		w.err = fmt.Errorf("batch: %w", err)
	}
	if w.small != nil {
		if len(w.small)+n <= journalSmall {
			w.small = append(w.small, p[:n]...)
		} else {
			w.small = nil // synced on its own
		}
	}
	return n, w.err
}

// abort removes the temporary file.
func (w *dirWriter) abort() {
	if !w.closed {
		w.closed = true
		w.f.Close()
		w.d.removeTemp(w.tmp)
	}
}

// Close makes the object visible under its key, durably, unless a Write
// failed or the context ended: then it leaves nothing and returns why.
func (w *dirWriter) Close() error { return w.close(true) }

// closeOrdered is Close, except that an object the journal holds is made
// durable by the next write of the Dir that waits for its own (a Create,
// a Put, a Close), rather than before it returns: the journal keeps the
// order of its entries. A run writes a job's images this way, then its
// end record, and so waits for one sync where it would wait for two. A
// crash of the machine in between loses both, and with them the claim to
// be done.
func (w *dirWriter) closeOrdered() error { return w.close(false) }

// close is Close; wait says whether a journaled object is waited for.
func (w *dirWriter) close(wait bool) error {
	if w.closed {
		return fmt.Errorf("batch: %s: writer already closed", w.key)
	}
	err := w.err
	if err == nil {
		err = w.ctx.Err()
	}
	if err != nil {
		w.abort()
		return err
	}
	w.closed = true
	journaled := w.small != nil
	if !journaled {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.d.placeTemp(w.tmp, w.key, true)
	}
	if err == nil {
		// A write that could not be made durable stays in place, as the
		// kernel has it: the object it replaced is gone either way.
		if journaled {
			err = w.d.j.enqueue(entryPut, w.key, w.small, wait)
		} else {
			err = w.d.syncOwn(w.key)
		}
	}
	if err != nil {
		w.d.removeTemp(w.tmp)
		return fmt.Errorf("batch: %s: %w", w.key, err)
	}
	return nil
}
