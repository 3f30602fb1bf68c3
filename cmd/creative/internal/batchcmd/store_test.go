package batchcmd

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/sqliteledger"
	"github.com/creativegen/creative-go/cmd/creative/internal/bucket"
)

// testBuckets opens the buckets of the tests: mem:// and the fakes.
var testBuckets = &Buckets{Open: bucket.OpenStore, OpenFS: bucket.OpenFS}

func TestIsURL(t *testing.T) {
	for name, want := range map[string]bool{
		"out": false, "./out": false, "/srv/out": false, `C:\out`: false, "": false,
		"s3://b/p?region=eu-west-1": true, "gs://b": true, "azblob://c/p": true,
		"file:///srv/out": true, "mem://": true,
	} {
		if got := isURL(name); got != want {
			t.Errorf("isURL(%q) = %v, want %v", name, got, want)
		}
		// Buckets open every URL but file://, which stays on this machine.
		if got, want := IsBucket(name), want && !strings.HasPrefix(name, "file:"); got != want {
			t.Errorf("IsBucket(%q) = %v, want %v", name, got, want)
		}
	}
	for _, name := range []string{"FILE:///srv/out", "File://localhost/srv/out"} {
		if !isURL(name) || IsBucket(name) {
			t.Errorf("%s: isURL %v, IsBucket %v: want a URL that is no bucket", name, isURL(name), IsBucket(name))
		}
	}
}

func TestOpenPlace(t *testing.T) {
	// A bucket holds outputs only: it needs --ledger.
	_, err := testBuckets.openPlace(t.Context(), "mem://", "", true)
	if err == nil || !strings.Contains(err.Error(), "--ledger") {
		t.Fatalf("openPlace(mem://) = %v, want a refusal naming --ledger", err)
	}
	p, err := testBuckets.openPlace(t.Context(), "mem://", t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.out.(*bucket.Store); !ok || p.dir != "" {
		t.Fatalf("openPlace(mem://) = %T, want a bucket store", p.out)
	}
	_ = p.Close()
	if _, err := testBuckets.openPlace(t.Context(), "ftp://host/out", t.TempDir(), true); err == nil {
		t.Fatal("openPlace(ftp://...) = nil error, want the schemes it takes")
	}
	_, err = testBuckets.openPlace(t.Context(), t.TempDir(), "postgres://u:secret@db.example/ledger", true)
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("openPlace with a postgres:// ledger that cannot be reached = %v, want a refusal without the password", err)
	}
	// A path and a file:// URL are the local folder, its ledger beside.
	dir := t.TempDir()
	for _, out := range []string{dir, "file://" + filepath.ToSlash(dir)} {
		p, err := testBuckets.openPlace(t.Context(), out, "", true)
		if err != nil {
			t.Fatalf("openPlace(%s): %v", out, err)
		}
		if _, ok := p.out.(*batch.Folder); !ok || p.dir != dir {
			t.Errorf("openPlace(%s) = %T in %q, want the folder %s", out, p.out, p.dir, dir)
		}
		_ = p.Close()
		if _, err := os.Stat(filepath.Join(dir, sqliteledger.File)); err != nil {
			t.Errorf("no ledger in the folder: %v", err)
		}
	}
	_, err = testBuckets.openPlace(t.Context(), "file://otherhost/out", "", true)
	if err == nil {
		t.Fatal("openPlace(file://otherhost/...) = nil error, want a refusal of a remote file URL")
	}
}

// A bucket where an earlier version kept its ledger is refused, saying how
// to go on.
func TestABucketWithAnEarlierLedgerIsRefused(t *testing.T) {
	s, err := bucket.Open(t.Context(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	w, _ := s.NewWriter(t.Context(), "ledger/3fa/3fa9c1e0d2b4a6f8091a2b3c4d5e6f70.0001.json", nil)
	_, _ = w.Write([]byte("{}"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	err = refuseOldLedger(t.Context(), s, "mem://")
	if err == nil || !strings.Contains(err.Error(), "earlier version") || !strings.Contains(err.Error(), "--ledger") {
		t.Fatalf("refuseOldLedger = %v, want a refusal saying how to go on", err)
	}
}

// TestOpenJobs reads a jobs file and a file its lines name through the
// folder openJobs opens, from a path and from a file:// URL.
func TestOpenJobs(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"jobs.jsonl": `{"op":"audio/enhance","audio":"in/talk.wav"}`, "in/talk.wav": "RIFF"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{filepath.Join(dir, "jobs.jsonl"), "file://" + filepath.ToSlash(dir) + "/jobs.jsonl"} {
		fsys, base, closer, err := testBuckets.openJobs(t.Context(), name)
		if err != nil {
			t.Fatalf("openJobs(%s): %v", name, err)
		}
		jobs, err := fs.ReadFile(fsys, base)
		if err != nil || !strings.Contains(string(jobs), "audio/enhance") {
			t.Errorf("%s: jobs file %q, %v", name, jobs, err)
		}
		if got, err := fs.ReadFile(fsys, "in/talk.wav"); err != nil || string(got) != "RIFF" {
			t.Errorf("%s: in/talk.wav = %q, %v", name, got, err)
		}
		if err := closer.Close(); err != nil {
			t.Error(err)
		}
	}
}

// A worker starting beside another on a fresh folder: the other makes its
// ledger, then its results, between this one's first look for a ledger
// (none yet) and its listing of the folder (results there). The folder is
// a ledger's, not earlier runs' without one: checkEarlier lets the run go.
// Without a ledger the same results are refused.
func TestCheckEarlierSeesALedgerMadeWhileItLooked(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	other := func(withLedger bool) func() {
		return func() {
			if withLedger {
				l, err := sqliteledger.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				l.Close()
			}
			if err := os.WriteFile(filepath.Join(out, ResultsFile), []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() { afterFirstLook = func() {} })
	afterFirstLook = other(true)
	if err := checkEarlier(io.Discard, out, "", false); err != nil {
		t.Fatalf("a ledger made while the folder was looked at: %v", err)
	}
	for _, n := range []string{sqliteledger.File, sqliteledger.File + "-wal", sqliteledger.File + "-shm"} {
		_ = os.Remove(filepath.Join(out, n))
	}
	afterFirstLook = other(false)
	if err := checkEarlier(io.Discard, out, "", false); err == nil || !strings.Contains(err.Error(), "earlier runs") {
		t.Fatalf("results without a ledger: %v", err)
	}
}
