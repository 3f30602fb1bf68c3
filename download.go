package creative

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
)

// Download streams the file at u, a URL returned by the service, into w and
// returns the number of bytes written. The access key is never sent: the
// file may live on another host. Only http and https URLs are accepted, and
// an answer other than 2xx is an *APIError. The file is not bounded unless
// WithMaxResponseBytes is given (to New or to this call).
func (c *Client) Download(ctx context.Context, u URL, w io.Writer, opts ...Option) (int64, error) {
	rs, err := c.download(ctx, u, opts)
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	return rs.copyTo(w)
}

// DownloadFile is Download into the file at path, written atomically: a
// temporary file in the same folder, renamed into place once every byte
// arrived, with mode 0644 before the umask. On failure or cancellation
// nothing is left behind and an existing file at path is untouched.
func (c *Client) DownloadFile(ctx context.Context, u URL, path string, opts ...Option) (int64, error) {
	rs, err := c.download(ctx, u, opts)
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	return writeFileAtomic(path, rs.copyTo)
}

func (c *Client) download(ctx context.Context, u URL, opts []Option) (*response, error) {
	const op = "download"
	pu, err := url.Parse(string(u))
	if err != nil || pu.Host == "" || (pu.Scheme != "http" && pu.Scheme != "https") {
		// The URL is quoted back, without the keys it may hold.
		value := strconv.Quote(string(u))
		if _, key, err := c.callSettings(op, opts); err == nil {
			r := newRedactor(key, c.key())
			value = r.redact(value)
		}
		return nil, &ValidationError{Operation: op, Field: "url", Rule: "must be an http or https URL", Value: value}
	}
	return c.do(ctx, &request{op: op, rawURL: pu.String(), accept: "*/*"}, opts)
}

// writeFileAtomic creates a temporary file beside path, lets write fill it,
// and renames it to path once write succeeded; on any failure the temporary
// file is removed and path is untouched. The file's mode is 0644 before the
// umask.
func writeFileAtomic(path string, write func(io.Writer) (int64, error)) (n int64, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := createTemp(dir, base)
	if err != nil {
		return 0, fmt.Errorf("creative: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if n, err = write(f); err != nil {
		return n, err
	}
	if err = f.Close(); err != nil {
		return n, fmt.Errorf("creative: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return n, fmt.Errorf("creative: %w", err)
	}
	return n, nil
}

// createTemp creates a new file beside base in dir with mode 0644, so that
// the umask applies as it does to any file the program creates (os.CreateTemp
// would make it 0600).
func createTemp(dir, base string) (*os.File, error) {
	var rnd [8]byte
	for range 10 {
		_, _ = rand.Read(rnd[:])
		name := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(rnd[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no free temporary name beside %s", filepath.Join(dir, base))
}
