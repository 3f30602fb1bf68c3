package bucket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/cmd/creative/internal/s3test"
)

// TestS3 holds the Store to batch.Store's contract against a real S3 server
// on 127.0.0.1 (versitygw over a temporary folder).
func TestS3(t *testing.T) {
	srv := s3test.Start(t)
	var n atomic.Int32
	contract(t, func(t *testing.T) *Store { return open(t, srv.URL(fmt.Sprintf("run%d/out", n.Add(1)))) })
	t.Run("objects are where the folder says", func(t *testing.T) {
		s := open(t, srv.URL("plain"))
		put(t, s, "a/1.png", "png")
		data, err := os.ReadFile(filepath.Join(srv.Root, "creative", "plain", "a", "1.png"))
		if err != nil || string(data) != "png" {
			t.Fatalf("the server's folder holds %q, %v; want the object under the URL's prefix", data, err)
		}
	})
}

// TestMem holds the Store to the same contract over mem://.
func TestMem(t *testing.T) {
	contract(t, func(t *testing.T) *Store { return open(t, "mem://") })
}

func open(t *testing.T, u string) *Store {
	t.Helper()
	s, err := Open(t.Context(), u)
	if err != nil {
		t.Fatalf("Open(%s): %v", u, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func put(t *testing.T, s *Store, key, data string) {
	t.Helper()
	w, err := s.NewWriter(t.Context(), key, nil)
	if err == nil {
		_, err = io.WriteString(w, data)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatalf("writing %s: %v", key, err)
	}
}

// read reads key's bytes, or nil.
func read(s *Store, key string) []byte {
	b, err := s.b.ReadAll(context.Background(), key)
	if err != nil {
		return nil
	}
	return b
}

// contract runs ledgertest's suite of output stores over the stores that
// open makes (each a fresh, empty place), and what a bucket adds to it:
// listings of several pages, and metadata.
func contract(t *testing.T, open func(*testing.T) *Store) {
	ledgertest.RunStore(t, func(t *testing.T) (batch.Store, func(string) []byte) {
		s := open(t)
		return s, func(k string) []byte { return read(s, k) }
	})
	t.Run("list is lexical, under the prefix, over several pages", func(t *testing.T) {
		s := open(t)
		s.pageSize = 3
		var want []string
		for i := range 10 {
			k := fmt.Sprintf("ledger/%02d/claim", 9-i)
			put(t, s, k, "x")
			want = append(want, k)
		}
		put(t, s, "outputs/a.png", "x")
		slices.Sort(want)
		var got []string
		for k, err := range s.List(t.Context(), "ledger/") {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, k)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("List = %q\nwant %q", got, want)
		}
	})
	t.Run("of creates racing to one key, one writes it", func(t *testing.T) {
		s := open(t)
		const racers = 8
		var won atomic.Int32
		errs := make(chan error, racers)
		for i := range racers {
			go func() {
				err := s.Create(t.Context(), "which.json", []byte(fmt.Sprint(i)))
				if err == nil {
					won.Store(int32(i))
				}
				errs <- err
			}()
		}
		wins := 0
		for range racers {
			switch err := <-errs; {
			case err == nil:
				wins++
			case !errors.Is(err, fs.ErrExist):
				t.Errorf("a create that lost: %v, want fs.ErrExist", err)
			}
		}
		if got := string(read(s, "which.json")); wins != 1 || got != fmt.Sprint(won.Load()) {
			t.Fatalf("%d creates succeeded, the key holds %q: want one, and its bytes", wins, got)
		}
		if err := s.Create(t.Context(), "which.json", []byte("again")); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("a create over an object = %v, want fs.ErrExist", err)
		}
	})
	t.Run("a writer streams an object with its metadata", func(t *testing.T) {
		s := open(t)
		ctx := t.Context()
		meta := map[string]string{"job": "line-7", "operation": "image/text-to-image", "request-id": "r-1", "content-type": "image/png"}
		w, err := s.NewWriter(ctx, "0007-image.png", meta)
		if err != nil {
			t.Fatal(err)
		}
		want := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB: two parts
		for chunk := range slices.Chunk(want, 100_000) {
			if _, err := w.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := read(s, "0007-image.png"); !bytes.Equal(got, want) {
			t.Fatalf("read %d bytes; want the %d bytes written", len(got), len(want))
		}
		got2, err := s.Metadata(ctx, "0007-image.png")
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range meta {
			if got2[k] != v {
				t.Errorf("metadata %s = %q, want %q (all: %v)", k, got2[k], v, got2)
			}
		}
	})
}

// TestOpenRefusesFileURLs: a local folder is given as a plain path.
func TestOpenRefusesFileURLs(t *testing.T) {
	_, err := Open(t.Context(), "file://"+filepath.ToSlash(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "plain path") {
		t.Fatalf("Open(file://...) = %v, want a refusal saying to give a plain path", err)
	}
}

// TestOpenFS reads a jobs file and a file its lines name from a bucket.
func TestOpenFS(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, srv.URL("batches"))
	put(t, s, "may/jobs.jsonl", `{"op":"audio/enhance","audio":"in/talk.wav"}`)
	put(t, s, "may/in/talk.wav", "RIFF")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jobs.jsonl"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ url, name, jobs, file string }{
		{srv.URL("batches/may/jobs.jsonl"), "jobs.jsonl", `{"op":"audio/enhance","audio":"in/talk.wav"}`, "in/talk.wav"},
		{"file://" + filepath.ToSlash(dir) + "/jobs.jsonl", "jobs.jsonl", "{}", ""},
	} {
		fsys, name, closer, err := OpenFS(t.Context(), tc.url)
		if err != nil {
			t.Fatalf("OpenFS(%s): %v", tc.url, err)
		}
		if name != tc.name {
			t.Errorf("name = %q, want %q", name, tc.name)
		}
		if got, err := fs.ReadFile(fsys, name); err != nil || string(got) != tc.jobs {
			t.Errorf("jobs file = %q, %v; want %q", got, err, tc.jobs)
		}
		if tc.file != "" {
			if got, err := fs.ReadFile(fsys, tc.file); err != nil || string(got) != "RIFF" {
				t.Errorf("%s = %q, %v", tc.file, got, err)
			}
		}
		if _, err := fs.ReadFile(fsys, "missing.wav"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
		}
		_ = closer.Close()
	}
}
