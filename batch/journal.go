package batch

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
)

// The journal of a Dir makes its small writes durable without a sync of
// each file and each folder. A Create, and the Close of a writer of at
// most journalSmall bytes, put the file in place without syncing it, then
// append the key and the bytes to the Dir's own log; a log append is made
// durable by one fdatasync that every writer waiting at that moment shares
// (a group commit). The call returns once its entry is durable. So a run
// with sixteen workers pays about one sync for a round of sixteen records,
// where syncing each file and its folder costs three. A write synced on
// its own (a large one) appends a mark that what the log held of its key
// before is old.
//
// The files themselves reach the disk when the kernel writes them back,
// and the log holds their bytes until then. The log is cut back to its
// header after a syncfs(2) of the folder's file system, which makes every
// file written before it durable: when it grows past journalCheckpoint,
// and when the Dir closes (then it is removed). A log whose Dir is gone
// without closing (its lock can be taken) is dead. After such a syncfs, a
// Dir removes the dead logs of this boot, whose writes were all made
// before it, and the next NewDir sees to any left: when the machine has
// not restarted since they were written, their files are in the kernel's
// cache, and a syncfs makes them durable; when it has, the entries of all
// the dead logs are merged by the time each was made (a clock of that
// boot), and each key is brought back to its last entry where the crash
// lost it. A torn entry at a log's end (a crash during the append) is one
// whose call never returned, and the log is read no further.
//
// The journal is used on Linux 5.8 and later (syncfs reports the errors of
// writeback) and on the file systems whose syncfs is known to sync: ext4,
// xfs, btrfs and tmpfs. Elsewhere every write is synced on its own.

// journalDir is the folder of logs under a Dir's root. Its name starts
// with a dot, so no key names it.
const journalDir = ".journal"

// journalMagic starts every log, followed by the boot id and a newline.
const journalMagic = "creative-batch-journal 2 "

const (
	// journalSmall is the largest output a writer journals; larger ones
	// are synced on their own, since their own writes dwarf a sync.
	journalSmall = 64 << 10
	// journalMaxEntry is the largest object Create journals, and the
	// largest entry a log is read for.
	journalMaxEntry = 16 << 20
)

// journalCheckpoint is the size past which a log is cut back.
var journalCheckpoint int64 = 64 << 20

// Kinds of entry.
const (
	entryPut    byte = 'p' // the key holds these bytes
	entryDelete byte = 'd' // the key is gone
	entrySynced byte = 's' // the key was written and synced on its own
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entryHead is the length of an entry's body before its key: the kind,
// the time it was made, the key's length.
const entryHead = 1 + 8 + 2

// An entry is one write in a log.
type entry struct {
	kind  byte
	stamp int64 // when it was made, by a clock of the boot (monotonicNow)
	key   string
	data  []byte
}

// appendEntry appends one entry to b: its body's length and CRC-32C, then
// the body: kind, time, key length, key, bytes.
func appendEntry(b []byte, e entry) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(entryHead+len(e.key)+len(e.data)))
	at := len(b)
	b = append(b, 0, 0, 0, 0, e.kind)
	b = binary.LittleEndian.AppendUint64(b, uint64(e.stamp))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(e.key)))
	b = append(b, e.key...)
	b = append(b, e.data...)
	binary.LittleEndian.PutUint32(b[at:], crc32.Checksum(b[at+4:], castagnoli))
	return b
}

// readEntries yields the entries of a log after its header, stopping
// silently at the first that is short or whose CRC does not match: a
// torn end. It holds one entry in memory at a time.
func readEntries(r io.Reader, yield func(entry) error) error {
	var head [8]byte
	var body []byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return nil
		}
		n := binary.LittleEndian.Uint32(head[:4])
		if n < entryHead || n > journalMaxEntry+entryHead+1<<16 {
			return nil
		}
		body = slices.Grow(body[:0], int(n))[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			return nil
		}
		if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(head[4:]) {
			return nil
		}
		kl := int(binary.LittleEndian.Uint16(body[9:entryHead]))
		if entryHead+kl > len(body) {
			return nil
		}
		e := entry{kind: body[0], stamp: int64(binary.LittleEndian.Uint64(body[1:9])),
			key: string(body[entryHead : entryHead+kl]), data: body[entryHead+kl:]}
		if err := yield(e); err != nil {
			return err
		}
	}
}

// A journal is the log of one open Dir.
type journal struct {
	root   *os.Root
	folder *os.File // the root folder, for syncfs
	boot   string   // this boot's id
	f      *os.File // the log, locked while the Dir is open
	name   string   // the log's path under root
	header int64    // the header's length

	mu       sync.Mutex
	buf      []byte       // entries not yet written
	waiters  []chan error // their callers
	flushing bool         // a flusher goroutine runs
	flushers sync.WaitGroup
	size     int64 // the log's length
	cutAt    int64 // the size past which it is cut back: journalCheckpoint
	err      error // a failed write or sync: every later commit fails
}

// errJournalClosed is the error of a commit after Close.
var errJournalClosed = errors.New("batch: the folder's journal is closed")

// openJournal sees to the logs that Dirs gone without closing left, then
// starts this Dir's own. It returns nil, nil where the journal cannot be
// trusted (see above): every write is then synced on its own.
func openJournal(root *os.Root) (*journal, error) {
	boot := bootID()
	if boot == "" {
		return nil, nil
	}
	folder, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	j := &journal{root: root, folder: folder, boot: boot, cutAt: journalCheckpoint}
	if !journalFits(folder) {
		folder.Close()
		return nil, nil
	}
	if err := j.open(); err != nil {
		folder.Close()
		return nil, err
	}
	return j, nil
}

// open sees to the dead logs and starts this Dir's log, holding the gate.
func (j *journal) open() error {
	if err := j.root.MkdirAll(journalDir, 0o755); err != nil {
		return err
	}
	if err := syncDirOf(j.root, "."); err != nil {
		return err
	}
	gate, err := j.gate(true)
	if err != nil {
		return err
	}
	defer gate.Close()
	dead, err := deadLogs(j.root)
	defer closeAll(dead)
	if err != nil {
		return fmt.Errorf("the journal of a run that did not close: %w", err)
	}
	if err := j.recover(dead); err != nil {
		return fmt.Errorf("the journal of a run that did not close: %w", err)
	}
	return j.startLog()
}

// gate takes the lock that one Dir at a time holds to see to the logs of
// the dead and to start its own, so that none takes a live log for a dead
// one. Without wait it returns nil, nil when another holds it.
func (j *journal) gate(wait bool) (*os.File, error) {
	f, err := j.root.OpenFile(journalDir+"/lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if wait {
		err = waitLock(f)
	} else {
		var ok bool
		if ok, err = tryLock(f); err == nil && !ok {
			f.Close()
			return nil, nil
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// startLog makes this Dir's log, locked, with its header, durably.
func (j *journal) startLog() error {
	name := journalDir + "/" + randomName() + ".log"
	f, err := j.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	header := journalMagic + j.boot + "\n"
	ok, err := tryLock(f)
	if err == nil && !ok {
		err = errors.New("a new log is locked by another process")
	}
	if err == nil {
		_, err = f.WriteString(header)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = syncDirOf(j.root, journalDir)
	}
	if err != nil {
		f.Close()
		_ = j.root.Remove(name)
		return err
	}
	j.f, j.name, j.header, j.size = f, name, int64(len(header)), int64(len(header))
	return nil
}

// syncDirOf syncs the folder dir under root.
func syncDirOf(root *os.Root, dir string) error {
	f, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// A deadLog is a log whose Dir is gone, locked by the Dir that sees to it.
type deadLog struct {
	name string
	f    *os.File
	boot string // "" when its header was never made durable
}

func closeAll(logs []deadLog) {
	for _, d := range logs {
		d.f.Close()
	}
}

// deadLogs locks and returns the logs under the journal folder that no
// live Dir holds. The caller holds the gate, and closes them.
func deadLogs(root *os.Root) ([]deadLog, error) {
	entries, err := fs.ReadDir(root.FS(), journalDir)
	if err != nil {
		return nil, err
	}
	var dead []deadLog
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		name := journalDir + "/" + e.Name()
		f, err := root.OpenFile(name, os.O_RDONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed by its Dir as it closed
		}
		if err != nil {
			return dead, err
		}
		if ok, _ := tryLock(f); !ok {
			f.Close() // a live Dir's
			continue
		}
		line, _ := bufio.NewReader(f).ReadString('\n')
		boot, _ := strings.CutPrefix(strings.TrimSuffix(line, "\n"), journalMagic)
		if !strings.HasPrefix(line, journalMagic) || !strings.HasSuffix(line, "\n") {
			boot = ""
		}
		dead = append(dead, deadLog{name: name, f: f, boot: boot})
	}
	return dead, nil
}

// recover makes durable what the dead logs hold, then removes them: the
// logs of earlier boots are replayed, those of this boot need only the
// syncfs.
func (j *journal) recover(dead []deadLog) error {
	if len(dead) == 0 {
		return nil
	}
	var earlier []deadLog
	for _, d := range dead {
		if d.boot != "" && d.boot != j.boot {
			earlier = append(earlier, d)
		}
	}
	if err := replayLogs(j.root, earlier); err != nil {
		return err
	}
	return j.syncAndRemove(dead)
}

// syncAndRemove syncs the file system, then removes the dead logs, whose
// writes were all made before.
func (j *journal) syncAndRemove(dead []deadLog) error {
	if err := syncFS(j.folder); err != nil {
		return err
	}
	for _, d := range dead {
		// A log removed since it was listed was closed by its Dir, whose
		// lock was released just after.
		if err := j.root.Remove(d.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return syncDirOf(j.root, journalDir)
}

// An entryRef names the last entry of a key among the dead logs: its
// time, its log and its place in that log.
type entryRef struct {
	stamp  int64
	log, n int
}

// replayLogs brings each key of the logs of an earlier boot back to its
// last entry among them, by the time each entry was made: a pass to find
// the last entry of each key (held in memory: one small record a key of
// the dead logs, which checkpoints keep small), and a pass to write them.
func replayLogs(root *os.Root, logs []deadLog) error {
	if len(logs) == 0 {
		return nil
	}
	last := map[string]entryRef{}
	err := eachEntry(logs, func(i, n int, e entry) error {
		if r, ok := last[e.key]; !ok || e.stamp >= r.stamp {
			last[e.key] = entryRef{e.stamp, i, n}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return eachEntry(logs, func(i, n int, e entry) error {
		if r := last[e.key]; r.log != i || r.n != n || checkKey(e.key) != nil {
			return nil // an older entry, or not a Dir's key
		}
		switch e.kind {
		case entryPut:
			return restore(root, e.key, e.data)
		case entryDelete:
			if err := root.Remove(e.key); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil // entrySynced: the file is durable as it is
	})
}

// eachEntry yields the entries of the logs, each with its log's index and
// its place in it.
func eachEntry(logs []deadLog, yield func(i, n int, e entry) error) error {
	for i, d := range logs {
		if _, err := d.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		r := bufio.NewReader(d.f)
		if _, err := r.ReadString('\n'); err != nil {
			continue
		}
		n := 0
		err := readEntries(r, func(e entry) error {
			n++
			return yield(i, n, e)
		})
		if err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
	}
	return nil
}

// restore makes key hold data, unless it does already.
func restore(root *os.Root, key string, data []byte) error {
	// A file of another size is written again unread.
	if st, err := root.Stat(key); err == nil && st.Mode().IsRegular() && st.Size() == int64(len(data)) {
		if have, err := root.ReadFile(key); err == nil && bytes.Equal(have, data) {
			return nil
		}
	}
	if err := root.MkdirAll(path.Dir(key), 0o755); err != nil {
		return err
	}
	tmp := journalDir + "/restoring"
	if err := root.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return root.Rename(tmp, key)
}

// commit appends one entry to the log and returns once it is durable.
func (j *journal) commit(kind byte, key string, data []byte) error {
	return j.enqueue(kind, key, data, true)
}

// enqueue appends one entry to the log; when wait is set it returns once
// the entry is durable, else at once. An entry not waited for is written
// with the next one that is, and is durable once any entry enqueued after
// it is: the log keeps their order.
func (j *journal) enqueue(kind byte, key string, data []byte, wait bool) error {
	if len(key) >= 1<<16 {
		return fmt.Errorf("batch: key of %d bytes is too long", len(key))
	}
	var done chan error
	j.mu.Lock()
	if j.err != nil {
		err := j.err
		j.mu.Unlock()
		return err
	}
	// The time is read after the file was placed, and under the lock, so
	// that the log's order and its times agree.
	j.buf = appendEntry(j.buf, entry{kind: kind, stamp: monotonicNow(), key: key, data: data})
	if !wait {
		j.mu.Unlock()
		return nil
	}
	done = make(chan error, 1)
	j.waiters = append(j.waiters, done)
	if !j.flushing {
		j.flushing = true
		j.flushers.Go(j.flush)
	}
	j.mu.Unlock()
	return <-done
}

// flush writes and syncs the entries waiting, round after round, until
// none waits: the entries that arrive during a sync share the next one.
func (j *journal) flush() {
	var spare []byte
	for {
		j.mu.Lock()
		if len(j.waiters) == 0 {
			j.flushing = false
			j.mu.Unlock()
			return
		}
		buf, waiters, err := j.buf, j.waiters, j.err
		j.buf, j.waiters = spare[:0], nil
		j.mu.Unlock()
		if err == nil {
			err = j.write(buf)
			if err != nil {
				err = j.fail(fmt.Errorf("batch: the folder's journal: %w", err))
			}
		}
		for _, w := range waiters {
			w <- err
		}
		spare = buf
		if err == nil && j.size >= j.cutAt {
			j.checkpoint()
		}
	}
}

// fail stops the journal with err, unless it stopped already, and returns
// the error that stopped it.
func (j *journal) fail(err error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = err
	}
	return j.err
}

// write appends buf to the log durably.
func (j *journal) write(buf []byte) error {
	n, err := j.f.Write(buf)
	j.size += int64(n)
	if err != nil {
		return err
	}
	return datasync(j.f)
}

// checkpoint cuts the log back once every entry in it is durable in its
// file, and removes the dead logs of this boot on the way. It is tried
// again at the next write when it cannot be done now: its entries were
// durable already.
func (j *journal) checkpoint() {
	gate, _ := j.gate(false)
	var dead []deadLog
	if gate != nil {
		defer gate.Close()
		all, _ := deadLogs(j.root)
		defer closeAll(all)
		dead = j.ofThisBoot(all)
	}
	// Every entry's file was placed before its entry was written: once the
	// file system is synced, the log holds nothing the disk lacks.
	if err := j.syncAndRemove(dead); err != nil {
		return
	}
	if err := j.f.Truncate(j.header); err != nil {
		return
	}
	j.size = j.header
	if err := datasync(j.f); err != nil {
		j.fail(fmt.Errorf("batch: the folder's journal: %w", err))
	}
}

// ofThisBoot returns the dead logs written in this boot (or holding
// nothing): a syncfs makes what they hold durable.
func (j *journal) ofThisBoot(dead []deadLog) []deadLog {
	var out []deadLog
	for _, d := range dead {
		if d.boot == j.boot || d.boot == "" {
			out = append(out, d)
		}
	}
	return out
}

// close syncs the file system, so that every entry is durable in its
// file, and removes the log, with the dead logs of this boot. A log that
// cannot be removed is left for the next NewDir.
func (j *journal) close() {
	j.mu.Lock()
	if j.err == nil {
		j.err = errJournalClosed
	} else {
		j.err = fmt.Errorf("%w (%w)", errJournalClosed, j.err)
	}
	j.mu.Unlock()
	j.flushers.Wait()
	if gate, err := j.gate(true); err == nil {
		all, _ := deadLogs(j.root)
		own := deadLog{name: j.name, f: j.f, boot: j.boot}
		_ = j.syncAndRemove(append(j.ofThisBoot(all), own))
		closeAll(all)
		gate.Close()
	}
	j.f.Close()
	j.folder.Close()
}
