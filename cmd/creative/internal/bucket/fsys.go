package bucket

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file://, for reading only
)

// OpenFS opens the folder of the object named by rawURL (a jobs file such as
// s3://bucket/batches/jobs.jsonl) as a read-only fs.FS, so that the jobs
// file and the files its lines name are read from the bucket and a worker
// needs nothing baked into its image. It returns the object's name within
// the folder, and the bucket to close when reading is done. Reading needs no
// conditional create, so file:// is accepted here too. Reads use ctx.
func OpenFS(ctx context.Context, rawURL string) (fs.FS, string, io.Closer, error) {
	u, prefix, err := parse(rawURL)
	if err != nil {
		return nil, "", nil, err
	}
	shown := redact(u)
	if u.Scheme != "file" && !supported(u.Scheme) {
		return nil, "", nil, fmt.Errorf("bucket: %s: unsupported scheme %q", shown, u.Scheme)
	}
	dir, name := path.Split(strings.TrimSuffix(prefix, "/"))
	if name == "" {
		return nil, "", nil, fmt.Errorf("bucket: %s names a bucket, not a file in it", shown)
	}
	if u.Scheme == "file" {
		u.Path = "/" + dir
		dir = ""
	}
	b, err := blob.OpenBucket(ctx, u.String())
	if err != nil {
		return nil, "", nil, fmt.Errorf("bucket: open %s: %w", shown, err)
	}
	if dir != "" {
		b = blob.PrefixedBucket(b, dir)
	}
	b.SetIOFSCallback(func() (context.Context, *blob.ReaderOptions) { return ctx, nil })
	return b, name, b, nil
}
