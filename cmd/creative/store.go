package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/cmd/creative/internal/bucket"
)

// isURL reports whether --out or a jobs file names a bucket URL
// (s3://, gs://, azblob://, file://, mem://) rather than a local path.
func isURL(name string) bool {
	u, err := url.Parse(name)
	return err == nil && len(u.Scheme) > 1 && u.Opaque == "" && (u.Host != "" || u.Path != "" || u.Scheme == "mem")
}

// openStore opens the place of record named by --out: a plain path is the
// local folder store; file:///path is the same folder store (the folder
// store's exclusive create works across processes, gocloud.dev's fileblob's
// does not); any other URL is a bucket through gocloud.dev/blob, refused
// when it cannot create an object only if it is absent.
func openStore(ctx context.Context, out string) (batch.Store, error) {
	if !isURL(out) {
		return openDir(out)
	}
	u, err := url.Parse(out)
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	if u.Scheme == "file" {
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("--out: %s: a file URL names a folder on this machine: file:///path", out)
		}
		return openDir(filepath.FromSlash(u.Path))
	}
	s, err := bucket.Open(ctx, out)
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	return s, nil
}

// openDir opens the local folder store at path.
func openDir(path string) (batch.Store, error) {
	d, err := batch.NewDir(path)
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	return d, nil
}

// openJobs opens the folder of a jobs file (a path or a bucket URL such as
// s3://bucket/batches/jobs.jsonl) as an fs.FS, and returns the jobs file's
// name in it: the jobs file and the files its lines name are read through
// it. Close the returned Closer when reading is done.
func openJobs(ctx context.Context, name string) (fs.FS, string, io.Closer, error) {
	if isURL(name) {
		return bucket.OpenFS(ctx, name)
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, "", nil, err
	}
	return os.DirFS(filepath.Dir(abs)), filepath.Base(abs), io.NopCloser(nil), nil
}
