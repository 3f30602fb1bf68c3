//go:build linux

package batch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// abandon leaves d as a process killed at this moment leaves it: its
// journal and its temporary files stay, and their locks are released.
func abandon(t *testing.T, d *Dir) {
	t.Helper()
	require.NotNil(t, d.j, "a Dir on Linux keeps a journal")
	d.j.f.Close()
	d.j.folder.Close()
	d.lock.Close()
	d.root.Close()
}

// logs lists the journal's logs under dir.
func logs(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, journalDir, "*.log"))
	require.NoError(t, err)
	return names
}

// abandoned returns a folder whose Dir wrote some and was abandoned.
func abandoned(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	d, err := NewDir(dir)
	require.NoError(t, err)
	writeSome(t, d)
	abandon(t, d)
	return dir
}

// fromAnotherBoot returns the bytes of the log at name as a machine that
// restarted since finds them: written in another boot.
func fromAnotherBoot(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return bytes.Replace(b, []byte(bootID()), []byte(strings.Repeat("0", len(bootID()))), 1)
}

// twoDirs opens one new folder twice, as two processes do.
func twoDirs(t *testing.T) (dir string, a, b *Dir) {
	t.Helper()
	dir = t.TempDir()
	a, err := NewDir(dir)
	require.NoError(t, err)
	b, err = NewDir(dir)
	require.NoError(t, err)
	return dir, a, b
}

// reopened opens the folder dir again, as the next run does, and returns
// what key holds then.
func reopened(t *testing.T, dir, key string) []byte {
	t.Helper()
	d, err := NewDir(dir)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	got, err := d.Get(t.Context(), key)
	require.NoError(t, err)
	return got
}

// writeSome makes what a run makes: claims, an output, a heartbeat put
// and then deleted.
func writeSome(t *testing.T, d *Dir) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, d.Create(ctx, "ledger/abc/claim.json", []byte(`{"state":"claimed"}`)))
	require.NoError(t, d.Create(ctx, "ledger/abc/end.json", []byte(`{"state":"done"}`)))
	// An image closed in order, as a run closes one: the next write
	// waited for makes it durable.
	w, err := d.NewWriter(ctx, "image.png", nil)
	require.NoError(t, err)
	_, err = w.Write([]byte("\x89PNG paid bytes"))
	require.NoError(t, err)
	require.NoError(t, closeOrdered(w))
	require.NoError(t, d.Put(ctx, "ledger/runs/r.json", []byte(`{"run":"r"}`)))
	require.NoError(t, d.Delete(ctx, "ledger/runs/r.json"))
}

// TestDirJournalRestoresWhatAMachineCrashLost abandons a Dir as a crash
// of the machine leaves it (the kernel's cache lost: files missing, cut
// short or holding other bytes, a delete undone, an entry torn in the
// middle of its append), then opens the folder as after a restart: every
// durable write is back byte for byte, the torn entry is not, and the log
// is gone.
func TestDirJournalRestoresWhatAMachineCrashLost(t *testing.T) {
	dir := abandoned(t)
	names := logs(t, dir)
	require.Len(t, names, 1)

	// What the disk may hold after the crash.
	require.NoError(t, os.Remove(filepath.Join(dir, "ledger/abc/claim.json")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ledger/abc/end.json"), []byte(`{"sta`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "image.png"), make([]byte, 15), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ledger/runs/r.json"), []byte(`{"run":"r"}`), 0o644))
	// The log as a restart finds it: written in another boot, its last
	// append torn.
	b := fromAnotherBoot(t, names[0])
	// A torn append: its length made it to the disk, its last bytes did
	// not.
	torn := appendEntry(nil, entry{kind: entryPut, stamp: monotonicNow(), key: "ghost.json", data: []byte("never acknowledged")})
	clear(torn[len(torn)-3:])
	b = append(b, torn...)
	require.NoError(t, os.WriteFile(names[0], b, 0o644))

	again, err := NewDir(dir)
	require.NoError(t, err)
	defer again.Close()
	for key, want := range map[string]string{
		"ledger/abc/claim.json": `{"state":"claimed"}`,
		"ledger/abc/end.json":   `{"state":"done"}`,
		"image.png":             "\x89PNG paid bytes",
	} {
		got, err := again.Get(t.Context(), key)
		require.NoError(t, err, key)
		assert.Equal(t, want, string(got), key)
	}
	for _, key := range []string{"ledger/runs/r.json", "ghost.json"} {
		ok, err := again.Exists(t.Context(), key)
		require.NoError(t, err)
		assert.False(t, ok, "%s: deleted, or never acknowledged", key)
	}
	assert.NotContains(t, logs(t, dir), names[0], "the dead log is removed once its files are durable")
}

// TestDirJournalOfThisBootIsNotReplayed: a run killed on a machine that
// kept running lost nothing (its files are in the kernel's cache), so the
// next NewDir syncs them and removes its log, and undoes nothing done
// since: a file a person removed after the kill stays removed.
func TestDirJournalOfThisBootIsNotReplayed(t *testing.T) {
	dir := abandoned(t)
	require.NoError(t, os.Remove(filepath.Join(dir, "image.png")))

	again, err := NewDir(dir)
	require.NoError(t, err)
	defer again.Close()
	assert.Len(t, logs(t, dir), 1, "only the new Dir's own log")
	ok, err := again.Exists(t.Context(), "image.png")
	require.NoError(t, err)
	assert.False(t, ok)
	got, err := again.Get(t.Context(), "ledger/abc/claim.json")
	require.NoError(t, err)
	assert.Equal(t, `{"state":"claimed"}`, string(got))
}

// TestDirJournalOfALiveDirIsLeftAlone: opening a folder that another Dir
// has open neither replays nor removes its log, and both go on writing.
func TestDirJournalOfALiveDirIsLeftAlone(t *testing.T) {
	dir := t.TempDir()
	live, err := NewDir(dir)
	require.NoError(t, err)
	writeSome(t, live)
	other, err := NewDir(dir)
	require.NoError(t, err)
	assert.Len(t, logs(t, dir), 2)
	require.NoError(t, live.Create(t.Context(), "a.json", []byte("a")))
	require.NoError(t, other.Create(t.Context(), "b.json", []byte("b")))
	assert.ErrorIs(t, other.Create(t.Context(), "a.json", []byte("x")), ErrExist)
	require.NoError(t, live.Close())
	require.NoError(t, other.Close())
	assert.Empty(t, logs(t, dir), "each Dir removes its own log as it closes")
}

// slowSyncs makes each journal sync take d and counts them, until the
// test ends.
func slowSyncs(t *testing.T, d time.Duration, fail error) *atomic.Int64 {
	var n atomic.Int64
	old := datasync
	datasync = func(f *os.File) error {
		n.Add(1)
		time.Sleep(d)
		if fail != nil {
			return fail
		}
		return old(f)
	}
	t.Cleanup(func() { datasync = old })
	return &n
}

// TestDirJournalSharesOneSyncAmongWritersOfOneMoment: sixteen writers
// making 20 claims each pay far fewer syncs than claims, and every claim
// is there.
func TestDirJournalSharesOneSyncAmongWritersOfOneMoment(t *testing.T) {
	syncs := slowSyncs(t, 2*time.Millisecond, nil)
	d, err := NewDir(t.TempDir())
	require.NoError(t, err)
	defer d.Close()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 20 {
				assert.NoError(t, d.Create(t.Context(), "ledger/"+string(rune('a'+w))+"/"+string(rune('a'+i))+".json", []byte("c")))
			}
		})
	}
	wg.Wait()
	n := 0
	for k, err := range d.List(t.Context(), "ledger/") {
		require.NoError(t, err, k)
		n++
	}
	assert.Equal(t, 320, n)
	assert.Less(t, syncs.Load(), int64(160), "320 claims share their syncs")
}

// TestDirJournalThatCannotBeWrittenGivesTheClaimBack: when the log's sync
// fails (a full disk), Create fails, the key is not left for anyone to
// take as a claim, and every later write fails too.
func TestDirJournalThatCannotBeWrittenGivesTheClaimBack(t *testing.T) {
	full := errors.New("no space left on device")
	d, err := NewDir(t.TempDir())
	require.NoError(t, err)
	defer d.Close()
	slowSyncs(t, 0, full)
	err = d.Create(t.Context(), "ledger/abc/claim.json", []byte("c"))
	require.ErrorIs(t, err, full)
	ok, err := d.Exists(t.Context(), "ledger/abc/claim.json")
	require.NoError(t, err)
	assert.False(t, ok, "a claim that is not durable is given back")
	w, err := d.NewWriter(t.Context(), "image.png", nil)
	require.NoError(t, err)
	_, _ = w.Write([]byte("png"))
	assert.ErrorIs(t, w.Close(), full, "an output that could not be made durable says so")
	assert.ErrorIs(t, d.Create(t.Context(), "ledger/abc/other.json", []byte("c")), full, "and every write after")
}

// TestDirOutputClosedInOrderSharesTheSyncOfTheRecordAfterIt: a run's
// image and the end record after it cost one sync of the journal, not two.
func TestDirOutputClosedInOrderSharesTheSyncOfTheRecordAfterIt(t *testing.T) {
	d, err := NewDir(t.TempDir())
	require.NoError(t, err)
	defer d.Close()
	syncs := slowSyncs(t, 0, nil)
	w, err := d.NewWriter(t.Context(), "image.png", nil)
	require.NoError(t, err)
	_, err = w.Write([]byte("png"))
	require.NoError(t, err)
	require.NoError(t, closeOrdered(w))
	require.NoError(t, d.Create(t.Context(), "ledger/abc/end.json", []byte("end")))
	assert.Equal(t, int64(1), syncs.Load())
}

// TestDirJournalStaysSmall: a log is cut back once past its checkpoint
// size, after the file system is synced, so a long run's log does not
// grow with the run; what it holds after the cut is still replayed.
func TestDirJournalStaysSmall(t *testing.T) {
	old := journalCheckpoint
	journalCheckpoint = 4 << 10
	t.Cleanup(func() { journalCheckpoint = old })
	dir := t.TempDir()
	d, err := NewDir(dir)
	require.NoError(t, err)
	record := bytes.Repeat([]byte("r"), 400)
	for i := range 200 {
		require.NoError(t, d.Create(t.Context(), fmt.Sprintf("ledger/%03d.json", i), record))
	}
	names := logs(t, dir)
	require.Len(t, names, 1)
	info, err := os.Stat(names[0])
	require.NoError(t, err)
	assert.Less(t, info.Size(), int64(5<<10), "200 records of 400 bytes, cut back past 4 KiB")

	// A record made after the last cut is in the log, and replayed.
	var last string
	for i := 0; last == "" && i < 20; i++ {
		key := fmt.Sprintf("ledger/after-%d.json", i)
		require.NoError(t, d.Create(t.Context(), key, record))
		if info, err := os.Stat(names[0]); err == nil && info.Size() > int64(len(record)) {
			last = key // not cut away by its own append
		}
	}
	require.NotEmpty(t, last)
	abandon(t, d)
	require.NoError(t, os.WriteFile(names[0], fromAnotherBoot(t, names[0]), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, last)))
	assert.Equal(t, record, reopened(t, dir, last))
}

// TestDirJournalReplayKeepsAWriteSyncedOnItsOwn: a small output in the
// log, then a large one over it (synced on its own, past the journal),
// then a crash of the machine: the replay leaves the large one.
func TestDirJournalReplayKeepsAWriteSyncedOnItsOwn(t *testing.T) {
	dir := t.TempDir()
	d, err := NewDir(dir)
	require.NoError(t, err)
	large := bytes.Repeat([]byte("L"), journalSmall+1)
	require.NoError(t, d.Put(t.Context(), "index.html", []byte("small")))
	require.NoError(t, d.Put(t.Context(), "index.html", large))
	abandon(t, d)
	name := logs(t, dir)[0]
	require.NoError(t, os.WriteFile(name, fromAnotherBoot(t, name), 0o644))

	assert.Equal(t, large, reopened(t, dir, "index.html"))
}

// TestDirJournalMergesDeadLogsByTheTimeOfEachWrite: two Dirs write one
// key in turn and the machine crashes: the last write wins, whichever log
// was touched last.
func TestDirJournalMergesDeadLogsByTheTimeOfEachWrite(t *testing.T) {
	dir, a, b := twoDirs(t)
	require.NoError(t, a.Put(t.Context(), "image.png", []byte("first")))
	require.NoError(t, b.Put(t.Context(), "image.png", []byte("second")))
	require.NoError(t, a.Put(t.Context(), "other.png", []byte("a's last write")))
	abandon(t, a)
	abandon(t, b)
	// a's log is read last, and was written last.
	for _, name := range logs(t, dir) {
		bs := fromAnotherBoot(t, name)
		to := "b.log"
		if bytes.Contains(bs, []byte("a's last write")) {
			to = "z.log"
		}
		require.NoError(t, os.Remove(name))
		require.NoError(t, os.WriteFile(filepath.Join(dir, journalDir, to), bs, 0o644))
	}
	require.NoError(t, os.Remove(filepath.Join(dir, "image.png")))

	assert.Equal(t, "second", string(reopened(t, dir, "image.png")))
}

// TestDirCloseRemovesTheLogsOfDirsKilledBeforeIt: a Dir killed while
// another runs leaves its log; the live one's Close syncs the file system
// after it and removes that log too, so that a crash of the machine later
// replays nothing older than what was written since.
func TestDirCloseRemovesTheLogsOfDirsKilledBeforeIt(t *testing.T) {
	dir, live, killed := twoDirs(t)
	require.NoError(t, killed.Put(t.Context(), "image.png", []byte("old")))
	require.NoError(t, killed.Create(t.Context(), "gone.json", []byte("x")))
	abandon(t, killed)
	require.NoError(t, live.Put(t.Context(), "image.png", []byte("new")))
	require.NoError(t, live.Delete(t.Context(), "gone.json"))
	require.Len(t, logs(t, dir), 2)
	require.NoError(t, live.Close())
	assert.Empty(t, logs(t, dir))
}

func TestKernelAtLeast(t *testing.T) {
	for release, want := range map[string]bool{
		"6.1.0-18-amd64": true, "5.8.0": true, "5.10": true, "5.7.19": false,
		"4.19.0": false, "5.8-rc1": true, "10.0": true, "": false, "x.y": false,
	} {
		assert.Equal(t, want, kernelAtLeast(release, 5, 8), release)
	}
}
