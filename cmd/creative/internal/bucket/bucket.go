// Package bucket holds a batch's outputs in object storage: a batch.Store
// over a gocloud.dev/blob bucket (S3 and any S3-compatible service, Google
// Cloud Storage, Azure Blob Storage, and an in-memory bucket for tests),
// which any number of workers on any number of machines write. The bucket
// holds files only; the workers' ledger is a database (see package batch).
//
// This package lives in the command line's module so that gocloud.dev and
// the cloud SDKs it brings never enter the SDK's go.mod.
package bucket

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"maps"
	"mime"
	"net/url"
	"path"
	"strings"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob://
	_ "gocloud.dev/blob/gcsblob"   // gs://
	_ "gocloud.dev/blob/memblob"   // mem://
	_ "gocloud.dev/blob/s3blob"    // s3://
	"gocloud.dev/gcerrors"

	"github.com/creativegen/creative-go/batch"
)

// Schemes are the URL schemes Open accepts.
var Schemes = []string{"s3", "gs", "azblob", "mem"}

// Chunks of a streamed output: each writer holds at most partSize *
// partConcurrency bytes of an object in memory, whatever its size.
const (
	partSize        = 8 << 20
	partConcurrency = 2
)

// listPageSize is the number of keys a listing holds at once (S3's and
// Azure's largest page).
const listPageSize = 1000

// A Store is a batch.Store over a bucket. It is safe for concurrent use by
// goroutines and by processes that open the same bucket and prefix.
type Store struct {
	b        *blob.Bucket
	url      string // redacted, for messages
	pageSize int    // keys asked of the service per page of a listing
}

var _ batch.Store = (*Store)(nil)

// Open opens the bucket named by rawURL as a Store: s3://bucket/prefix,
// gs://bucket/prefix, azblob://container/prefix or mem://, with the query
// parameters of gocloud.dev's URL openers (region, endpoint,
// use_path_style, ...). The path after the bucket, if any, is a prefix under
// which every key of the Store lives. Credentials come from the
// environment, as each cloud's SDK reads them. Open refuses file://: a
// local folder is given as a plain path.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	u, prefix, err := parse(rawURL)
	if err != nil {
		return nil, err
	}
	shown := redact(u)
	if u.Scheme == "file" {
		return nil, fmt.Errorf("bucket: %s: give a local folder as a plain path", shown)
	}
	if !supported(u.Scheme) {
		return nil, fmt.Errorf("bucket: %s: unsupported scheme %q (want one of %s)", shown, u.Scheme, strings.Join(Schemes, ", "))
	}
	b, err := blob.OpenBucket(ctx, u.String())
	if err != nil {
		return nil, fmt.Errorf("bucket: open %s: %w", shown, err)
	}
	if prefix != "" {
		b = blob.PrefixedBucket(b, prefix)
	}
	return &Store{b: b, url: shown, pageSize: listPageSize}, nil
}

// OpenStore is Open for a caller that wants a batch.Store: on error the
// store is a nil interface, not one holding a nil *Store.
func OpenStore(ctx context.Context, rawURL string) (batch.Store, error) {
	s, err := Open(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// parse splits rawURL into the URL gocloud.dev opens and the key prefix
// taken from its path ("" or ending in "/").
func parse(rawURL string) (*url.URL, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", fmt.Errorf("bucket: %w", err)
	}
	if u.Scheme == "" {
		return nil, "", fmt.Errorf("bucket: %q is not a URL", rawURL)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" && !fs.ValidPath(prefix) {
		return nil, "", fmt.Errorf("bucket: %s: invalid prefix %q", redact(u), prefix)
	}
	if u.Scheme != "file" {
		u.Path, u.RawPath = "", ""
	}
	if prefix != "" {
		prefix += "/"
	}
	return u, prefix, nil
}

func supported(scheme string) bool {
	for _, s := range Schemes {
		if s == scheme {
			return true
		}
	}
	return false
}

// redact shows a URL without its user information and query values, which
// may hold credentials.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	return c.String()
}

// Get reads key, or returns an error matching fs.ErrNotExist.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := batch.CheckKey(key); err != nil {
		return nil, err
	}
	data, err := s.b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("bucket: get %s: %w", key, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("bucket: get %s: %w", key, err)
	}
	return data, nil
}

// NewReader opens key for reading as a stream, so that a caller bounds
// what it reads, or returns an error matching fs.ErrNotExist.
func (s *Store) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := batch.CheckKey(key); err != nil {
		return nil, err
	}
	r, err := s.b.NewReader(ctx, key, nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("bucket: get %s: %w", key, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("bucket: get %s: %w", key, err)
	}
	return r, nil
}

// List yields the keys under prefix in lexical order, asking the service
// for one page of keys at a time.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		token := blob.FirstPageToken
		for len(token) > 0 {
			page, next, err := s.b.ListPage(ctx, token, s.pageSize, &blob.ListOptions{Prefix: prefix})
			if err != nil {
				yield("", fmt.Errorf("bucket: list %s: %w", prefix, err))
				return
			}
			for _, obj := range page {
				if obj.IsDir {
					continue
				}
				if !yield(obj.Key, nil) {
					return
				}
			}
			token = next
		}
	}
}

// NewWriter streams an object to key, with meta as its metadata. At most a
// few parts of it are in memory at once. Nothing is visible under key until
// Close returns nil; a writer whose context is cancelled, or that is closed
// after a failed Write, leaves nothing.
func (s *Store) NewWriter(ctx context.Context, key string, meta map[string]string) (io.WriteCloser, error) {
	if err := batch.CheckKey(key); err != nil {
		return nil, err
	}
	// A "content-type" in meta is the object's Content-Type, so that a
	// bucket served over HTTP shows the page or plays the file; without one
	// the key's extension names it, or else the driver detects it from the
	// first bytes.
	contentType := mediaType(key)
	if ct, ok := meta["content-type"]; ok {
		contentType, meta = ct, maps.Clone(meta)
		delete(meta, "content-type")
	}
	wctx, cancel := context.WithCancel(ctx)
	w, err := s.b.NewWriter(wctx, key, &blob.WriterOptions{
		ContentType:    contentType,
		Metadata:       meta,
		BufferSize:     partSize,
		MaxConcurrency: partConcurrency,
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("bucket: write %s: %w", key, err)
	}
	return &writer{w: w, cancel: cancel, key: key}, nil
}

// mediaTypes are the types of the files the service makes that Go's own
// table may not know.
var mediaTypes = map[string]string{".mp3": "audio/mpeg", ".wav": "audio/wav", ".mp4": "video/mp4", ".jsonl": "application/jsonl"}

// mediaType is the media type of a key's extension, "" when unknown.
func mediaType(key string) string {
	ext := strings.ToLower(path.Ext(key))
	if t, ok := mediaTypes[ext]; ok {
		return t
	}
	return mime.TypeByExtension(ext)
}

// writer aborts the upload at Close when a Write failed, so that a partial
// object is never committed.
type writer struct {
	w      *blob.Writer
	cancel context.CancelFunc
	key    string
	err    error
}

func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.w.Write(p)
	if err != nil {
		w.err = fmt.Errorf("bucket: write %s: %w", w.key, err)
		return n, w.err
	}
	return n, nil
}

func (w *writer) Close() error {
	defer w.cancel()
	if w.err != nil {
		w.cancel() // abort: the upload is not committed
		_ = w.w.Close()
		return w.err
	}
	if err := w.w.Close(); err != nil {
		return fmt.Errorf("bucket: write %s: %w", w.key, err)
	}
	return nil
}

// Metadata returns the metadata stored with key's object (for an output,
// the job, operation, id and request id that made it), and its
// Content-Type as "content-type".
func (s *Store) Metadata(ctx context.Context, key string) (map[string]string, error) {
	if err := batch.CheckKey(key); err != nil {
		return nil, err
	}
	attrs, err := s.b.Attributes(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("bucket: metadata %s: %w", key, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("bucket: metadata %s: %w", key, err)
	}
	meta := maps.Clone(attrs.Metadata)
	if meta == nil {
		meta = map[string]string{}
	}
	meta["content-type"] = attrs.ContentType
	return meta, nil
}

// Exists reports whether key names an object.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	if err := batch.CheckKey(key); err != nil {
		return false, err
	}
	ok, err := s.b.Exists(ctx, key)
	if err != nil {
		return false, fmt.Errorf("bucket: exists %s: %w", key, err)
	}
	return ok, nil
}

// Create writes data to key only if key names no object, in one
// conditional request (S3's If-None-Match, GCS's and Azure's
// preconditions): of writers racing to one key, one succeeds and the
// others get an error matching fs.ErrExist, as does a key already there.
func (s *Store) Create(ctx context.Context, key string, data []byte) error {
	if err := batch.CheckKey(key); err != nil {
		return err
	}
	err := s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: mediaType(key), IfNotExist: true})
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return fmt.Errorf("bucket: create %s: %w", key, fs.ErrExist)
	}
	if err != nil {
		return fmt.Errorf("bucket: create %s: %w", key, err)
	}
	return nil
}

// Delete removes key; a key that does not exist is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := batch.CheckKey(key); err != nil {
		return err
	}
	err := s.b.Delete(ctx, key)
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("bucket: delete %s: %w", key, err)
	}
	return nil
}

// Close releases the bucket.
func (s *Store) Close() error {
	if err := s.b.Close(); err != nil {
		return fmt.Errorf("bucket: close: %w", err)
	}
	return nil
}
