package creative

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"strconv"

	"github.com/creativegen/creative-go/internal/atomicfile"
)

// Download streams the file at u, a URL returned by the service, into w and
// returns the number of bytes written. The access key is never sent: the
// file may live on another host. Only http and https URLs are accepted, and
// a URL that holds the access key (the call's or the Client's, as it is or
// escaped) is refused with a *ValidationError before anything is sent. An
// answer other than 2xx is an *APIError. The file is not bounded unless
// WithMaxResponseBytes is given (to New or to this call).
func (c *Client) Download(ctx context.Context, u URL, w io.Writer, opts ...Option) (int64, error) {
	if w == nil {
		return 0, &misuseError{"download", "a nil io.Writer"}
	}
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
	if err := c.usable(ctx, op); err != nil {
		return nil, err
	}
	// The keys are the call's and the Client's; a bad option is do's to
	// report.
	_, key, _ := c.callSettings(op, opts)
	keys := newRedactor(key, c.key())
	var rule string
	pu, err := url.Parse(string(u))
	switch {
	case err != nil || pu.Host == "" || (pu.Scheme != "http" && pu.Scheme != "https"):
		rule = "must be an http or https URL"
	case keys.holds(string(u)) || keys.holds(pu.String()):
		// The request line would carry the key to the file's host.
		rule = "must not hold the access key"
	}
	if rule != "" {
		// The URL is quoted back, without the keys it may hold.
		return nil, &ValidationError{Operation: op, Field: "url", Rule: rule, Value: keys.redact(strconv.Quote(string(u)))}
	}
	return c.do(ctx, &request{op: op, rawURL: pu.String(), accept: "*/*"}, opts)
}

// writeFileAtomic writes the file at path with atomicfile.Write: a
// temporary file beside it, renamed to path once write succeeded. Errors
// of the file system name path and are prefixed with the package.
func writeFileAtomic(path string, write func(io.Writer) (int64, error)) (int64, error) {
	n, err := atomicfile.Write(path, write)
	if _, ok := err.(*fs.PathError); ok {
		err = fmt.Errorf("creative: %w", err)
	}
	return n, err
}
