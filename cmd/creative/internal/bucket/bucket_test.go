package bucket

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/storetest"
	"github.com/creativegen/creative-go/cmd/creative/internal/s3test"
)

// TestS3 holds the Store to batch.Store's contract against a real S3 server
// on 127.0.0.1 (versitygw over a temporary folder).
func TestS3(t *testing.T) {
	srv := s3test.Start(t)
	var n atomic.Int32
	contract(t, func(t *testing.T) (*Store, string) {
		u := srv.URL(fmt.Sprintf("run%d/out", n.Add(1)))
		return open(t, u), u
	})
	t.Run("objects are where the folder says", func(t *testing.T) {
		s := open(t, srv.URL("plain"))
		put(t, s, "ledger/a/1.json", "claimed")
		data, err := os.ReadFile(filepath.Join(srv.Root, "creative", "plain", "ledger", "a", "1.json"))
		if err != nil || string(data) != "claimed" {
			t.Fatalf("the server's folder holds %q, %v; want the object under the URL's prefix", data, err)
		}
	})
}

// TestMem holds the Store to the same contract over mem://, where the
// workers are goroutines of one process.
func TestMem(t *testing.T) {
	contract(t, func(t *testing.T) (*Store, string) {
		s := open(t, "mem://")
		return s, ""
	})
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

func put(t *testing.T, s batch.Store, key, data string) {
	t.Helper()
	if err := s.Put(t.Context(), key, []byte(data)); err != nil {
		t.Fatalf("Put(%s): %v", key, err)
	}
}

// contract runs batch/storetest's conformance suite over the stores that
// open makes (each a fresh, empty place; url is "" when a second Open would
// not reach the same place), and what a bucket adds to it: several stores
// racing on one place, listings of several pages, metadata, and nothing
// left by Open's probe.
func contract(t *testing.T, open func(*testing.T) (*Store, string)) {
	storetest.Run(t, func(t *testing.T) batch.Store {
		s, _ := open(t)
		return s
	})
	t.Run("of 16 concurrent creates from 4 stores on one place exactly one wins", func(t *testing.T) {
		s, u := open(t)
		if u == "" {
			t.Skip("a place that only one store reaches: storetest's race covers it")
		}
		stores := []batch.Store{s}
		for range 3 { // other workers: stores of their own on the same place
			stores = append(stores, openAgain(t, u))
		}
		var wins, exists atomic.Int32
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				err := stores[i%len(stores)].Create(t.Context(), "ledger/race", fmt.Appendf(nil, "%d", i))
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, batch.ErrExist):
					exists.Add(1)
				default:
					t.Errorf("Create: %v", err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 || exists.Load() != 15 {
			t.Fatalf("%d creates won and %d were refused, want 1 and 15", wins.Load(), exists.Load())
		}
	})
	t.Run("list is lexical, under the prefix, over several pages", func(t *testing.T) {
		s, _ := open(t)
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
		for k, err := range s.List(t.Context(), "") {
			if err != nil || strings.HasPrefix(k, probePrefix) {
				t.Fatalf("List shows %q, %v: Open's probe must leave nothing seen", k, err)
			}
		}
	})
	t.Run("a writer streams an object with its metadata", func(t *testing.T) {
		s, _ := open(t)
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
		if ok, _ := s.Exists(ctx, "0007-image.png"); ok {
			t.Fatal("the object is visible before Close")
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "0007-image.png")
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Get: %d bytes, %v; want the %d bytes written", len(got), err, len(want))
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

// openAgain opens a second Store on the place a first one opened, as
// another worker would.
func openAgain(t *testing.T, u string) *Store {
	return open(t, u)
}

// TestOpenRefusesFileURLs: fileblob checks that a file is absent and then
// renames over it, so it cannot hold a claim.
func TestOpenRefusesFileURLs(t *testing.T) {
	_, err := Open(t.Context(), "file://"+filepath.ToSlash(t.TempDir()))
	if !errors.Is(err, ErrNoConditionalCreate) || !strings.Contains(err.Error(), "plain path") {
		t.Fatalf("Open(file://...) = %v, want ErrNoConditionalCreate saying to give a plain path", err)
	}
}

// TestOpenRefusesAServiceThatIgnoresTheCondition: an S3 service that
// answers 200 to a PUT with If-None-Match: * on an existing key would let
// two workers claim one job; Open finds out and refuses it.
func TestOpenRefusesAServiceThatIgnoresTheCondition(t *testing.T) {
	var conditional atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPut && r.Header.Get("If-None-Match") == "*" {
			conditional.Add(1)
		}
		switch r.Method {
		case http.MethodPut:
			w.Header().Set("ETag", `"e"`)
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	_, err := Open(t.Context(), "s3://b/p?region=us-east-1&use_path_style=true&endpoint="+srv.URL)
	if !errors.Is(err, ErrNoConditionalCreate) || !strings.Contains(err.Error(), "If-None-Match") {
		t.Fatalf("Open = %v, want ErrNoConditionalCreate naming If-None-Match", err)
	}
	if conditional.Load() != 2 {
		t.Fatalf("%d conditional PUTs arrived, want the probe's 2", conditional.Load())
	}
	if strings.Contains(err.Error(), "endpoint=") {
		t.Fatalf("the error shows the URL's query: %v", err)
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
