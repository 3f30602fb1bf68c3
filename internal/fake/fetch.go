package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/creativegen/creative-go/internal/media"
)

// fetchTimeout bounds one fetch of a linked file.
const fetchTimeout = 5 * time.Second

// errNotLoopback refuses a connection the fake must not make.
var errNotLoopback = errors.New("creativetest: the fake connects only to loopback addresses")

// loopbackClient is the HTTP client that fetches linked files. Its dialer
// refuses every address that is not loopback, whatever a name resolved to
// and wherever a redirect leads, and it uses no proxy.
func loopbackClient() *http.Client {
	dialer := &net.Dialer{
		Timeout: fetchTimeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				return errNotLoopback
			}
			return nil
		},
	}
	return &http.Client{
		Timeout: fetchTimeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         dialer.DialContext,
			MaxIdleConnsPerHost: 4,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return errors.New("creativetest: more than 3 redirects")
			}
			return nil
		},
	}
}

// isLoopback reports whether a URL's host names the loopback interface.
func isLoopback(host string) bool {
	if h := strings.ToLower(host); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fetchBytes returns the file at link: from the Server's own files, or
// fetched from a loopback host. For any other host it returns nil, nil: the
// fake never reaches out to the network.
func (s *Server) fetchBytes(ctx context.Context, link string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(link, s.URL+"/files/"); ok {
		f, ok := s.file(path.Base(rest))
		if !ok {
			return nil, fmt.Errorf("url: no such file on the fake (it keeps the latest %d)", maxFiles)
		}
		return f.data, nil
	}
	u, err := url.Parse(link)
	if err != nil {
		return nil, fmt.Errorf("url: %v", err)
	}
	if !isLoopback(u.Hostname()) {
		return nil, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return nil, fmt.Errorf("url: %v", err)
	}
	resp, err := s.fetch.Do(req)
	if err != nil {
		return nil, fmt.Errorf("url: cannot fetch it: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("url: fetching it answered HTTP %d", resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, s.maxUpload+1))
	if err != nil {
		return nil, fmt.Errorf("url: reading it: %v", err)
	}
	if int64(len(b)) > s.maxUpload {
		return nil, fmt.Errorf("url: larger than the %d bytes allowed", s.maxUpload)
	}
	return b, nil
}

// fetchImage returns the image at link when the fake may fetch it, or a
// stand-in image for any other host.
func (s *Server) fetchImage(ctx context.Context, link string) ([]byte, error) {
	b, err := s.fetchBytes(ctx, link)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return media.StandIn(link), nil
	}
	if _, _, _, err := media.ImageSize(b); err != nil {
		return nil, errors.New("url: the linked file is not a PNG, JPEG, WebP or GIF image")
	}
	return b, nil
}
