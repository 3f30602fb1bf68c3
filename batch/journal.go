package batch

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
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
	"time"
)

// The journal of a Dir makes its small writes durable without a sync of
// each file and each folder. A Create, and the Close of a writer of at
// most journalSmall bytes, put the file in place without syncing it, then
// append the key and the bytes to the Dir's own log; a log append is made
// durable by one fdatasync that every writer waiting at that moment shares
// (a group commit). The call returns once its entry is durable. So a run
// with sixteen workers pays about one sync for a round of sixteen records,
// where syncing each file and its folder costs three.
//
// The files themselves reach the disk when the kernel writes them back,
// and the log holds their bytes until then. The log is cut back to its
// header after a syncfs(2) of the folder's file system, which makes every
// file written before it durable: when it grows past journalCheckpoint,
// and when the Dir closes (then it is removed). A log whose Dir is gone
// without closing (its lock can be taken) is seen to by the next NewDir:
// when the machine has not restarted since the log was written, the files
// are in the kernel's cache, and a syncfs makes them durable; when it has,
// each entry is written again where the file lost it, in the order the
// logs were written. A torn entry at a log's end (a crash during the
// append) is one whose call never returned, and is passed over.
//
// The journal is used where the boot of the machine can be told apart
// (Linux); elsewhere every write is synced on its own.

// journalDir is the folder of logs under a Dir's root. Its name starts
// with a dot, so no key names it.
const journalDir = ".journal"

// journalMagic starts every log, followed by the boot id and a newline.
const journalMagic = "creative-batch-journal 1 "

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
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendEntry appends one entry to b: its length, its CRC-32C, then the
// kind, the key's length, the key and the bytes.
func appendEntry(b []byte, kind byte, key string, data []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(1+2+len(key)+len(data)))
	at := len(b)
	b = append(b, 0, 0, 0, 0, kind)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(key)))
	b = append(b, key...)
	b = append(b, data...)
	binary.LittleEndian.PutUint32(b[at:], crc32.Checksum(b[at+4:], castagnoli))
	return b
}

// readEntries yields the entries of a log after its header, stopping
// silently at the first that is short or whose CRC does not match: a
// torn end. It holds one entry in memory at a time.
func readEntries(r *bufio.Reader, yield func(kind byte, key string, data []byte) error) error {
	var head [8]byte
	var body []byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return nil
		}
		n := binary.LittleEndian.Uint32(head[:4])
		if n < 3 || n > journalMaxEntry+3+1<<16 {
			return nil
		}
		body = slices.Grow(body[:0], int(n))[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			return nil
		}
		if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(head[4:]) {
			return nil
		}
		kl := int(binary.LittleEndian.Uint16(body[1:3]))
		if 3+kl > len(body) {
			return nil
		}
		if err := yield(body[0], string(body[3:3+kl]), body[3+kl:]); err != nil {
			return err
		}
	}
}

// A journal is the log of one open Dir.
type journal struct {
	root   *os.Root
	folder *os.File // the root folder, for syncfs
	f      *os.File // the log, locked while the Dir is open
	name   string   // the log's path under root
	header int64    // the header's length

	mu       sync.Mutex
	buf      []byte       // entries not yet written
	waiters  []chan error // their callers
	flushing bool         // a flusher goroutine runs
	flushers sync.WaitGroup
	size     int64 // the log's length
	err      error // a failed write or sync: every later commit fails
}

// errJournalClosed is the error of a commit after Close.
var errJournalClosed = errors.New("batch: the folder's journal is closed")

// openJournal sees to the logs that Dirs gone without closing left, then
// starts this Dir's own. It returns nil, nil where the machine's boot
// cannot be told (no journal: every write is synced on its own).
func openJournal(root *os.Root) (*journal, error) {
	boot := bootID()
	if boot == "" {
		return nil, nil
	}
	if err := root.MkdirAll(journalDir, 0o755); err != nil {
		return nil, err
	}
	// One opener at a time sees to the logs of the dead, and starts its own
	// log locked, so no opener takes a live log for a dead one.
	gate, err := root.OpenFile(journalDir+"/lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer gate.Close()
	if err := waitLock(gate); err != nil {
		return nil, err
	}
	folder, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	if err := recoverLogs(root, folder, boot); err != nil {
		folder.Close()
		return nil, fmt.Errorf("the journal of a run that did not close: %w", err)
	}
	j, err := startLog(root, folder, boot)
	if err != nil {
		folder.Close()
		return nil, err
	}
	return j, nil
}

// startLog makes this Dir's log, locked, with its header, durably.
func startLog(root *os.Root, folder *os.File, boot string) (*journal, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := journalDir + "/" + hex.EncodeToString(b[:]) + ".log"
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	header := journalMagic + boot + "\n"
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
		err = syncDirOf(root, journalDir)
	}
	if err != nil {
		f.Close()
		_ = root.Remove(name)
		return nil, err
	}
	return &journal{root: root, folder: folder, f: f, name: name, header: int64(len(header)), size: int64(len(header))}, nil
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

// A deadLog is a log whose Dir is gone, locked by the opener that sees to
// it.
type deadLog struct {
	name string
	f    *os.File
	mod  time.Time
}

// recoverLogs makes durable what the logs of Dirs gone without closing
// hold, then removes them. Logs locked by a live Dir are left alone.
func recoverLogs(root *os.Root, folder *os.File, boot string) error {
	entries, err := fs.ReadDir(root.FS(), journalDir)
	if err != nil {
		return err
	}
	var dead []deadLog
	defer func() {
		for _, d := range dead {
			d.f.Close()
		}
	}()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		name := journalDir + "/" + e.Name()
		f, err := root.OpenFile(name, os.O_RDONLY, 0)
		if err != nil {
			continue // removed by its Dir as it closed
		}
		if ok, _ := tryLock(f); !ok {
			f.Close() // a live Dir's
			continue
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		dead = append(dead, deadLog{name: name, f: f, mod: info.ModTime()})
	}
	if len(dead) == 0 {
		return nil
	}
	// Later logs win where two wrote one key.
	slices.SortFunc(dead, func(a, b deadLog) int { return a.mod.Compare(b.mod) })
	for _, d := range dead {
		if err := replayLog(root, d.f, boot); err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
	}
	if err := syncFS(folder); err != nil {
		return err
	}
	for _, d := range dead {
		// A log removed since it was listed was closed by its Dir, whose
		// lock was released just after.
		if err := root.Remove(d.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return syncDirOf(root, journalDir)
}

// replayLog writes again the entries of a log written before the machine
// last started; a log of this boot needs only the syncfs that follows.
func replayLog(root *os.Root, f *os.File, boot string) error {
	r := bufio.NewReader(f)
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, journalMagic) {
		return nil // its header was never made durable: no entry was
	}
	if strings.TrimSuffix(strings.TrimPrefix(line, journalMagic), "\n") == boot {
		return nil
	}
	return readEntries(r, func(kind byte, key string, data []byte) error {
		if checkKey(key) != nil {
			return nil // not written by a Dir
		}
		switch kind {
		case entryPut:
			return restore(root, key, data)
		case entryDelete:
			if err := root.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
}

// restore makes key hold data, unless it does already.
func restore(root *os.Root, key string, data []byte) error {
	if have, err := root.ReadFile(key); err == nil && bytes.Equal(have, data) {
		return nil
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
	j.buf = appendEntry(j.buf, kind, key, data)
	if wait {
		done = make(chan error, 1)
		j.waiters = append(j.waiters, done)
	}
	if !wait {
		j.mu.Unlock()
		return nil
	}
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
				err = fmt.Errorf("batch: the folder's journal: %w", err)
				j.mu.Lock()
				j.err = err
				j.mu.Unlock()
			}
		}
		for _, w := range waiters {
			w <- err
		}
		spare = buf
	}
}

// write appends buf to the log durably, and cuts the log back once it
// is past journalCheckpoint.
func (j *journal) write(buf []byte) error {
	n, err := j.f.Write(buf)
	j.size += int64(n)
	if err != nil {
		return err
	}
	if err := datasync(j.f); err != nil {
		return err
	}
	if j.size < journalCheckpoint {
		return nil
	}
	// Every entry's file was written before its entry: once the file
	// system is synced, the log holds nothing the disk lacks.
	if err := syncFS(j.folder); err != nil {
		return err
	}
	if err := j.f.Truncate(j.header); err != nil {
		return err
	}
	j.size = j.header
	return datasync(j.f)
}

// close syncs the file system, so that every entry is durable in its
// file, and removes the log. A log that cannot be removed is left for the
// next NewDir.
func (j *journal) close() {
	j.mu.Lock()
	if j.err == nil {
		j.err = errJournalClosed
	} else {
		j.err = fmt.Errorf("%w (%w)", errJournalClosed, j.err)
	}
	j.mu.Unlock()
	j.flushers.Wait()
	if syncFS(j.folder) == nil {
		_ = j.root.Remove(j.name)
	}
	j.f.Close()
	j.folder.Close()
}
