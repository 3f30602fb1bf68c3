package creative

import (
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyOracle says where a request that arrived carries testKey, in any form
// a server could read it back from: the request line, any header's name or
// value, Basic auth, whatever the case, plain, escaped or in base64.
func keyOracle(r *http.Request) string {
	texts := map[string]string{"request line": r.Method + " " + r.RequestURI, "host": r.Host}
	for k, vs := range r.Header {
		texts["header "+k] = k + ": " + strings.Join(vs, ", ")
	}
	if u, p, ok := r.BasicAuth(); ok {
		texts["Basic auth"] = u + ":" + p
	}
	low := strings.ToLower(testKey)
	b64 := []string{base64.StdEncoding.EncodeToString([]byte(testKey)), base64.URLEncoding.EncodeToString([]byte(testKey))}
	for where, text := range texts {
		if l := leak(text, testKey); l != "" {
			return where + " (" + l + ")"
		}
		dec, _ := url.QueryUnescape(text)
		if strings.Contains(strings.ToLower(text), low) || strings.Contains(strings.ToLower(dec), low) {
			return where
		}
		for _, b := range b64 {
			if strings.Contains(text, strings.TrimRight(b, "=")) {
				return where + " (base64)"
			}
		}
	}
	return ""
}

// The redirect policy as a table: status × origin × where the key hides in
// the Location × call or Download. A call follows only a 307 or 308 to the
// base URL's origin; a Download follows any redirect of its GET, to any
// origin; no hop whose URL holds the key, in any form, or carries user
// information is followed. The server at the target counts what arrived
// and whether any of it carried the key; only a call's request to the base
// URL's origin may.
func TestTheRedirectPolicy(t *testing.T) {
	type arrival struct{ path, key string }
	var (
		mu       sync.Mutex
		arrivals = map[string][]arrival{} // by server: "home", "other"
	)
	serve := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if !strings.HasPrefix(r.URL.Path, "/target") {
				http.Redirect(w, r, r.Header.Get("X-Test-Location"), atoi(r.Header.Get("X-Test-Status")))
				return
			}
			mu.Lock()
			arrivals[name] = append(arrivals[name], arrival{r.URL.Path, keyOracle(r)})
			mu.Unlock()
			replyJSON(200, musicOK)(w, r)
		}
	}
	home := newTestServer(t, serve("home"))
	other := newTestServer(t, serve("other"))
	_, port, _ := net.SplitHostPort(other.Listener.Addr().String())
	origins := map[string]string{"same origin": home.URL, "another origin": "http://localhost:" + port}

	hides := []struct {
		name     string
		location func(base string) string
	}{
		{"nowhere", func(b string) string { return b + "/target" }},
		{"in the query", func(b string) string { return b + "/target?k=" + testKey }},
		{"in the path", func(b string) string { return b + "/target/" + testKey }},
		{"upper-cased in the query", func(b string) string { return b + "/target?k=" + strings.ToUpper(testKey) }},
		{"in base64 in the query", func(b string) string {
			return b + "/target?k=" + base64.URLEncoding.EncodeToString([]byte("u:"+testKey))
		}},
		{"percent-escaped in the query", func(b string) string { return b + "/target?k=" + escapeEach(testKey, "%%%02X") }},
		{"as userinfo (Basic auth)", func(b string) string { return strings.Replace(b, "://", "://u:"+testKey+"@", 1) + "/target" }},
		{"as a user name alone", func(b string) string { return strings.Replace(b, "://", "://"+testKey+"@", 1) + "/target" }},
	}
	statuses := []int{301, 302, 303, 307, 308}

	for _, kind := range []string{"call", "download"} {
		for origin, base := range origins {
			for _, hide := range hides {
				for _, status := range statuses {
					name := kind + "/" + origin + "/key " + hide.name + "/" + http.StatusText(status)
					t.Run(name, func(t *testing.T) {
						mu.Lock()
						clear(arrivals)
						mu.Unlock()
						loc := hide.location(base)
						opts := []Option{WithHeader("X-Test-Location", loc), WithHeader("X-Test-Status", strconv.Itoa(status))}
						ctx, cancel := context.WithTimeout(context.Background(), safety)
						defer cancel()
						var err error
						if kind == "call" {
							c := newTestClient(t, home.URL, opts...)
							err = music(ctx, c)
						} else {
							// A Download's headers of WithHeader are the call's own.
							c := newTestClient(t, home.URL)
							_, err = c.Download(ctx, URL(home.URL+"/file"), io.Discard, opts...)
						}
						follow := hide.name == "nowhere" &&
							(kind == "download" || (origin == "same origin" && (status == 307 || status == 308)))
						mu.Lock()
						got := append(append([]arrival(nil), arrivals["home"]...), arrivals["other"]...)
						mu.Unlock()
						if !follow {
							require.Error(t, err)
							assert.ErrorIs(t, err, ErrUnexpectedResponse)
							assert.Empty(t, got, "the redirect is not followed")
							assert.Empty(t, leak(err.Error(), testKey), "the error quotes no key: %v", err)
							return
						}
						require.NoError(t, err)
						require.Len(t, got, 1, "the redirect is followed once")
						if kind == "call" {
							assert.Contains(t, got[0].key, "header X-Access-Key", "a call keeps its key at the base URL's origin")
						} else {
							assert.Empty(t, got[0].key, "a Download never carries the key")
						}
					})
				}
			}
		}
	}
}

// A hop to another origin carries the key in no header: not the key's own,
// not one of WithHeader that holds it, not the Referer.
func TestAHopToAnotherOriginCarriesTheKeyInNoHeader(t *testing.T) {
	var key string
	other := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		key = keyOracle(r)
		replyJSON(200, musicOK)(w, r)
	})
	_, port, _ := net.SplitHostPort(other.Listener.Addr().String())
	home := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+port+"/cdn/file", http.StatusFound)
	})
	c := newTestClient(t, home.URL)
	// The call's own header, sent to the Download's first host, holds the
	// key: the gate refuses to carry it anywhere but the base URL's origin.
	_, err := c.Download(context.Background(), URL(other.URL+"/direct"), io.Discard, WithHeader("Authorization", "Bearer "+testKey))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNotSent)
	assert.Contains(t, err.Error(), "Authorization header")
	assert.Empty(t, key, "nothing arrived")
	for _, h := range [][2]string{
		{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+testKey))},
		{"X-Echo", strings.ToUpper(testKey)},
		{"X-" + testKey, "1"},
	} {
		_, err = c.Download(context.Background(), URL(other.URL+"/direct"), io.Discard, WithHeader(h[0], h[1]))
		assert.ErrorIs(t, err, ErrNotSent, "%s", h[0])
		assert.Empty(t, leak(err.Error(), testKey))
	}
	assert.Empty(t, key, "nothing arrived")

	_, err = c.Download(context.Background(), URL(home.URL+"/file"), io.Discard, WithHeader("X-Trace", "t-1"))
	require.NoError(t, err)
	assert.Empty(t, key)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// A 307 or 308 to the base URL's origin sends the call's JSON body again,
// whole, to the hop: the attempt went to net/http without a GetBody (so
// net/http could not send it again on its own), and the request gets one
// only for the redirect. The captured chain carries none.
func TestA307Or308SendsTheSameBodyToTheHop(t *testing.T) {
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			var (
				mu     sync.Mutex
				bodies = map[string][]string{}
			)
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				b, err := io.ReadAll(r.Body)
				require.NoError(t, err)
				mu.Lock()
				bodies[r.URL.Path] = append(bodies[r.URL.Path], string(b))
				mu.Unlock()
				if r.URL.Path != "/moved" {
					http.Redirect(w, r, "/moved", status)
					return
				}
				replyJSON(200, musicOK)(w, r)
			})
			c := ts.client(t)
			var resp *http.Response
			ctx, cancel := context.WithTimeout(context.Background(), safety)
			defer cancel()
			require.NoError(t, music(ctx, c))
			require.NoError(t, music(ctx, c, WithResponseInto(&resp)))
			mu.Lock()
			defer mu.Unlock()
			want := []string{`{"prompt":"p"}`, `{"prompt":"p"}`}
			assert.Equal(t, map[string][]string{"/audio/v1/text-to-music": want, "/moved": want}, bodies)
			require.NotNil(t, resp.Request)
			require.NotNil(t, resp.Request.Response)
			assert.Nil(t, resp.Request.GetBody)
			assert.Nil(t, resp.Request.Response.Request.GetBody)
		})
	}
}
