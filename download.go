package creative

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

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
	case c.privateURL(pu):
		rule = "must not point to a loopback, link-local or private address (WithPrivateDownloads allows it)"
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

// privateAllowed reports whether a Download may reach u on a private
// address: any with WithPrivateDownloads, or when the base URL is on one
// and WithPrivateOrigin narrows nothing; else only an origin of
// WithPrivateOrigin.
func (c *Client) privateAllowed(u *url.URL) bool {
	return c.private || slices.ContainsFunc(c.origins, func(o *url.URL) bool { return sameOrigin(o, u) })
}

// privateURL reports whether u, a Download's URL, is refused by its host
// alone: an IP address on a private network or, when the transport is not
// one whose connections can be checked (see downloadTransport), the name
// "localhost" too. Other names are checked where the connection is made.
func (c *Client) privateURL(u *url.URL) bool {
	if c.privateAllowed(u) {
		return false
	}
	if _, hooked := c.rt.(*http.Transport); !hooked {
		return privateHost(u.Hostname())
	}
	return privateIP(u.Hostname())
}

// ownAddr reports whether a, an address a Download connects to, is that of
// an origin of WithPrivateOrigin: its IP, or a loopback address for
// "localhost", with its port.
func (c *Client) ownAddr(a netip.AddrPort) bool {
	return slices.ContainsFunc(c.origins, func(o *url.URL) bool {
		if strconv.Itoa(int(a.Port())) != portOf(o) {
			return false
		}
		if ip, err := netip.ParseAddr(o.Hostname()); err == nil {
			return ip.Unmap() == a.Addr().Unmap()
		}
		return strings.EqualFold(o.Hostname(), "localhost") && a.Addr().IsLoopback()
	})
}

// privateHost reports whether host, a URL's host name, is "localhost" or
// an address that privateAddr refuses.
func privateHost(host string) bool {
	return strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") || privateIP(host)
}

// privateIP reports whether host is an IP address that privateAddr refuses.
func privateIP(host string) bool {
	a, err := netip.ParseAddr(host)
	return err == nil && privateAddr(a)
}

// privateAddr reports whether a is an address inside the caller's network
// or machine: loopback, link-local, private, unspecified or multicast.
func privateAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() ||
		a.IsPrivate() || a.IsUnspecified() || a.IsMulticast() || (a.Is4() && a.As4()[0] == 0)
}

// A privateAddrError is a Download refused where its connection was made:
// the host's address is inside the caller's network. It is not retried.
type privateAddrError struct {
	addr string
}

func (e *privateAddrError) Error() string {
	return "creative: download: refused to connect to " + e.addr + ", a loopback, link-local or private address (WithPrivateDownloads allows it)"
}

// downloadTransport is the transport of Downloads: the Client's, whose
// connections refuse private addresses unless the Client allows them. The
// address is checked as the connection is made, after DNS (so a name that
// resolves to such an address, or changes to one, is refused too): by the
// dialer's Control before connecting when the transport dials with its
// default dialer, else on the connection's remote address before a byte is
// written. A proxy's own address is not checked: the proxy reaches the
// file. A transport that is not an *http.Transport cannot be hooked there:
// its Downloads are checked by the URL alone (download).
func (c *Client) downloadTransport() http.RoundTripper {
	t, ok := c.rt.(*http.Transport)
	if c.private || !ok {
		return c.rt
	}
	dl := t.Clone()
	var proxies sync.Map // host:port of the proxies Downloads went through
	if proxy := t.Proxy; proxy != nil {
		dl.Proxy = func(r *http.Request) (*url.URL, error) {
			u, err := proxy(r)
			if u != nil {
				proxies.Store(canonicalAddr(u), true)
			}
			return u, err
		}
	}
	guard := func(_, address string, _ syscall.RawConn) error {
		if ap, err := netip.ParseAddrPort(address); err == nil && privateAddr(ap.Addr()) && !c.ownAddr(ap) {
			return &privateAddrError{addr: address}
		}
		return nil
	}
	plain := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	guarded := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: guard}).DialContext
	legacy, legacyTLS := legacyDials(dl)
	if dial := t.DialContext; dial != nil || legacy != nil { // the caller's dialer: check what it connected to
		if dial == nil {
			dial = legacy
		}
		plain, guarded = dial, c.checkRemote(dial)
	}
	dl.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if _, ok := proxies.Load(addr); ok {
			return plain(ctx, network, addr)
		}
		return guarded(ctx, network, addr)
	}
	if t.DialTLSContext != nil {
		dl.DialTLSContext = c.checkRemote(t.DialTLSContext)
	} else if legacyTLS != nil {
		dl.DialTLSContext = c.checkRemote(legacyTLS)
	}
	return dl
}

type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// legacyDials takes the deprecated Dial and DialTLS out of t, as dialFuncs
// (nil when unset): a caller's transport may still dial with them, and its
// Downloads must dial the same way, checked.
func legacyDials(t *http.Transport) (dial, dialTLS dialFunc) {
	//lint:ignore SA1019 a caller's transport may still set it
	d, dt := t.Dial, t.DialTLS
	if d != nil {
		dial = func(_ context.Context, network, addr string) (net.Conn, error) { return d(network, addr) }
	}
	if dt != nil {
		dialTLS = func(_ context.Context, network, addr string) (net.Conn, error) { return dt(network, addr) }
	}
	//lint:ignore SA1019 cleared, since the checked DialContext and DialTLSContext replace them
	t.Dial, t.DialTLS = nil, nil
	return dial, dialTLS
}

// checkRemote returns dial refusing a connection whose remote address is
// private, before anything is written to it.
func (c *Client) checkRemote(dial dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if ap, err := netip.ParseAddrPort(conn.RemoteAddr().String()); err == nil && privateAddr(ap.Addr()) && !c.ownAddr(ap) {
			_ = conn.Close()
			return nil, &privateAddrError{addr: conn.RemoteAddr().String()}
		}
		return conn, nil
	}
}

// canonicalAddr is u's host:port, with the scheme's port when it names
// none, as a transport dials it.
func canonicalAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[u.Scheme]
	}
	return net.JoinHostPort(u.Hostname(), port)
}
