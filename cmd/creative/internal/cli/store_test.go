package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creativegen/creative-go/batch/sqlitestore"
	"github.com/creativegen/creative-go/cmd/creative/internal/bucket"
)

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
		if got, want := isBucket(name), want && !strings.HasPrefix(name, "file:"); got != want {
			t.Errorf("isBucket(%q) = %v, want %v", name, got, want)
		}
	}
	for _, name := range []string{"FILE:///srv/out", "File://localhost/srv/out"} {
		if !isURL(name) || isBucket(name) {
			t.Errorf("%s: isURL %v, isBucket %v: want a URL that is no bucket", name, isURL(name), isBucket(name))
		}
	}
}

func TestOpenStoreBucketURLs(t *testing.T) {
	s, err := testBuckets.openStore(t.Context(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*bucket.Store); !ok {
		t.Fatalf("openStore(mem://) = %T, want a bucket store", s)
	}
	if _, err := testBuckets.openStore(t.Context(), "ftp://host/out"); err == nil {
		t.Fatal("openStore(ftp://...) = nil error, want the schemes it takes")
	}
	// A path and a file:// URL are the local folder store, whose
	// exclusive create holds across processes.
	dir := t.TempDir()
	for _, out := range []string{dir, "file://" + filepath.ToSlash(dir)} {
		s, err := testBuckets.openStore(t.Context(), out)
		if err != nil {
			t.Fatalf("openStore(%s): %v", out, err)
		}
		if d, ok := s.(*sqlitestore.Store); !ok || d.Path() != dir {
			t.Errorf("openStore(%s) = %T, want the folder store on %s", out, s, dir)
		}
		_ = s.Close()
	}
	_, err = testBuckets.openStore(t.Context(), "file://otherhost/out")
	if err == nil || errors.Is(err, bucket.ErrNoConditionalCreate) {
		t.Fatalf("openStore(file://otherhost/...) = %v, want a refusal of a remote file URL", err)
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
