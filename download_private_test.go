package creative

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Download refuses result URLs on loopback, link-local and private
// addresses when the base URL is on none of them: by the URL when it names
// an address, where the connection is made when a name resolves to one,
// and at every redirect. A base URL on such an address, or
// WithPrivateDownloads, allows them.
func TestDownloadRefusesPrivateAddresses(t *testing.T) {
	files := newTestServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("RIFF")) })
	_, port, _ := net.SplitHostPort(files.Listener.Addr().String())
	public := "https://api.example" // never reached: only Downloads are made

	t.Run("by the URL, before anything is sent", func(t *testing.T) {
		c := newTestClient(t, public)
		for _, u := range []string{
			files.URL + "/f.wav",
			"http://169.254.169.254/latest/meta-data/",
			"http://[::1]:" + port + "/f.wav",
			"http://[::ffff:127.0.0.1]:" + port + "/f.wav",
			"http://10.1.2.3/f.wav",
			"http://192.168.0.1/f.wav",
			"http://172.16.0.1/f.wav",
			"http://0.0.0.0:" + port + "/f.wav",
			"http://[fe80::1]/f.wav",
		} {
			_, err := c.Download(context.Background(), URL(u), io.Discard)
			var ve *ValidationError
			if assert.True(t, errors.As(err, &ve), "%s: %v", u, err) {
				assert.Contains(t, ve.Rule, "private address")
			}
		}
		assert.Zero(t, files.hits.Load())
	})
	t.Run("by the address a name resolves to, where the connection is made", func(t *testing.T) {
		c := newTestClient(t, public)
		_, err := c.Download(context.Background(), URL("http://localhost:"+port+"/f.wav"), io.Discard)
		require.Error(t, err)
		var pe *privateAddrError
		assert.True(t, errors.As(err, &pe), "%v", err)
		assert.ErrorIs(t, err, ErrNotSent)
		var ne *NetworkError
		require.ErrorAs(t, err, &ne)
		assert.Equal(t, 1, ne.Attempts, "not retried")
		assert.Zero(t, files.hits.Load())
	})
	t.Run("through a caller's dialer, by the connection's remote address", func(t *testing.T) {
		var d net.Dialer
		for name, tr := range map[string]*http.Transport{
			"DialContext":      {DialContext: d.DialContext},
			"Dial, deprecated": {Dial: d.Dial}, // deprecated, still honoured
		} {
			c := newTestClient(t, public, WithHTTPClient(&http.Client{Transport: tr}))
			_, err := c.Download(context.Background(), URL("http://localhost:"+port+"/f.wav"), io.Discard)
			var pe *privateAddrError
			assert.True(t, errors.As(err, &pe), "%s: %v", name, err)
		}
		assert.Zero(t, files.hits.Load())
	})
	t.Run("at a redirect, through a proxy", func(t *testing.T) {
		// The proxy is reached (it is the caller's), and answers for the
		// file host with a redirect to a private address.
		proxy := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:"+port+"/f.wav", http.StatusFound)
		})
		pu, _ := url.Parse(proxy.URL)
		tr := &http.Transport{Proxy: http.ProxyURL(pu)}
		c := newTestClient(t, public, WithHTTPClient(&http.Client{Transport: tr}))
		_, err := c.Download(context.Background(), URL("http://files.example/f.wav"), io.Discard)
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrUnexpectedResponse)
		assert.Contains(t, err.Error(), "private address")
		assert.EqualValues(t, 1, proxy.hits.Load(), "the proxy was reached once")
		assert.Zero(t, files.hits.Load())
	})
	t.Run("allowed by WithPrivateDownloads", func(t *testing.T) {
		c := newTestClient(t, public, WithPrivateDownloads())
		n, err := c.Download(context.Background(), URL("http://localhost:"+port+"/f.wav"), io.Discard)
		require.NoError(t, err)
		assert.EqualValues(t, 4, n)
	})
	t.Run("allowed when the base URL is on such an address", func(t *testing.T) {
		c := newTestClient(t, files.URL)
		_, err := c.Download(context.Background(), URL("http://localhost:"+port+"/f.wav"), io.Discard)
		require.NoError(t, err)
	})
}

// WithPrivateOrigin allows Downloads from one private origin (a local
// fake's own) and from no other private address: a link the fake hands
// out to a "metadata" service on another port of the same loopback, or to
// another loopback host, is refused, by its URL or where the connection is
// made, and gets no request; so is a redirect there. Without it, a base
// URL on a private address allows them all, as WithPrivateDownloads does.
func TestAPrivateOriginIsTheOnlyPrivateOneItsClientDownloadsFrom(t *testing.T) {
	fake := newTestServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("RIFF")) })
	metadata := newTestServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("secret credentials")) })
	_, fakePort, _ := net.SplitHostPort(fake.Listener.Addr().String())
	_, metaPort, _ := net.SplitHostPort(metadata.Listener.Addr().String())
	c := newTestClient(t, fake.URL, WithPrivateOrigin(fake.URL))
	for _, u := range []string{
		fake.URL + "/files/a.wav",
		"http://localhost:" + fakePort + "/files/a.wav", // the fake's port, by another name: checked where it connects
	} {
		_, err := c.Download(context.Background(), URL(u), io.Discard)
		require.NoError(t, err, u)
	}
	for _, u := range []string{
		metadata.URL + "/latest/meta-data/",
		"http://localhost:" + metaPort + "/latest/meta-data/",
		"http://127.0.0.2:" + fakePort + "/files/a.wav",
	} {
		_, err := c.Download(context.Background(), URL(u), io.Discard)
		require.Error(t, err, u)
		assert.Contains(t, err.Error(), "loopback, link-local or private address", u)
	}
	assert.Zero(t, metadata.hits.Load(), "no request reached the other loopback origin")

	// A redirect from the fake's origin to the other one is not followed.
	redirecting := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, metadata.URL+"/latest/meta-data/", http.StatusFound)
	})
	_, err := newTestClient(t, redirecting.URL, WithPrivateOrigin(redirecting.URL)).Download(context.Background(), URL(redirecting.URL+"/files/a.wav"), io.Discard)
	require.Error(t, err)
	assert.Zero(t, metadata.hits.Load())

	_, err = newTestClient(t, fake.URL).Download(context.Background(), URL(metadata.URL+"/x"), io.Discard)
	require.NoError(t, err, "without WithPrivateOrigin, a base URL on a private address allows every private address")
	assert.EqualValues(t, 1, metadata.hits.Load())

	_, err = New(WithBaseURL(fake.URL), WithAccessKey(testKey), WithPrivateOrigin("http://127.0.0.1/some/path"))
	assert.ErrorContains(t, err, "WithPrivateOrigin: want an http(s) origin")
}
