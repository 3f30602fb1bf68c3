//go:build unix

package outdir

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestOpenInputRefusesAFIFOAtOnceAndFollowsALink(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "jobs.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	start := time.Now()
	f, err := OpenInput(fifo)
	if err == nil {
		f.Close()
		t.Fatal("a FIFO was opened")
	}
	if !errors.Is(err, ErrNotRegular) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	if _, err := OpenInput(dir); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a folder: %v", err)
	}
	if _, err := OpenInput("/dev/null"); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a device: %v", err)
	}
	real := filepath.Join(dir, "real.jsonl")
	if err := os.WriteFile(real, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	f, err = OpenInput(link)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
