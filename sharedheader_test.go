package creative

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writerOK answers a WriterTool call.
const writerOK = `{"success":true,"message":"ok","data":{"language":"en","useCase":"x","word_count":1,"text":{"choices":[{"text":"hi","index":0,"word_count":1}]}}}`

func writerCall(ctx context.Context, c *Client, opts ...Option) error {
	_, err := c.WriterTool(ctx, WriterToolRequest{UseCase: "x", Language: "en", Action: "a", Tone: "t", Inputs: []any{"b"}}, opts...)
	return err
}

// A caller's http.Client with a cookie jar: net/http adds the jar's
// cookies to each request's header. One call's Cookie header is its own:
// it never grows from call to call, nor shows in another call's request,
// and calls made at once do not write one header map together.
func TestAJarsCookiesStayInTheirCallsRequest(t *testing.T) {
	var mu sync.Mutex
	var cookies []string
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cookies = append(cookies, r.Header.Get("Cookie"))
		mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "s", Value: "1", Path: "/"})
		replyJSON(200, writerOK)(w, r)
	})
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := ts.client(t, WithHTTPClient(&http.Client{Jar: jar}))
	ctx := context.Background()
	for range 3 {
		require.NoError(t, writerCall(ctx, c))
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { assert.NoError(t, writerCall(ctx, c)) })
	}
	wg.Wait()
	require.Len(t, cookies, 11)
	assert.Empty(t, cookies[0], "the first call has no cookie yet")
	for i, got := range cookies[1:] {
		assert.Equal(t, "s=1", got, "call %d", i+2)
	}
}

// Plain calls, which share their operation's header, beside calls with a
// header of their own, a redirect back to the base URL and a caller who
// writes into the request WithResponseInto handed: each request carries
// its own headers only, and the key goes with every one of them.
func TestPlainCallsNeverSeeAnotherCallsHeaders(t *testing.T) {
	var mu sync.Mutex
	var bad []string
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("hop") == "" && r.Header.Get("X-Own") != "" {
			http.Redirect(w, r, r.URL.Path+"?hop=1", http.StatusTemporaryRedirect)
			return
		}
		own, key := r.Header.Get("X-Own"), r.Header.Get(headerAccessKey)
		if (own != "" && own != r.Header.Get("X-Echo")) || key != testKey || r.Header.Get("X-Caller") != "" || len(r.Header.Values("X-Own")) > 1 {
			mu.Lock()
			bad = append(bad, fmt.Sprintf("own=%q echo=%q caller=%q key ok=%v", own, r.Header.Get("X-Echo"), r.Header.Get("X-Caller"), key == testKey))
			mu.Unlock()
		}
		replyJSON(200, writerOK)(w, r)
	})
	var last *http.Response
	c := ts.client(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			switch i % 3 {
			case 0:
				v := strconv.Itoa(i)
				assert.NoError(t, writerCall(ctx, c, WithHeader("X-Own", v), WithHeader("X-Echo", v)))
			case 1:
				var resp *http.Response
				assert.NoError(t, writerCall(ctx, c, WithResponseInto(&resp)))
				if assert.NotNil(t, resp) {
					assert.Empty(t, resp.Request.Header.Get(headerAccessKey))
					resp.Request.Header.Set("X-Caller", "1")
					mu.Lock()
					last = resp
					mu.Unlock()
				}
			default:
				assert.NoError(t, writerCall(ctx, c))
			}
		})
	}
	wg.Wait()
	require.NotNil(t, last)
	for range 3 {
		require.NoError(t, writerCall(ctx, c))
	}
	assert.Empty(t, bad)
	assert.Equal(t, int64(40+14+3), ts.hits.Load(), "each call once, and the calls with a header of their own once more after the redirect")
}

// WithResponseInto given to the Client: the request it hands over is a
// copy without the key, and what the caller writes into it reaches no
// later call.
func TestTheClientsResponseIntoHandsACopyOfTheSharedHeader(t *testing.T) {
	var callers, keys []string
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		callers = append(callers, r.Header.Get("X-Caller"))
		keys = append(keys, r.Header.Get(headerAccessKey))
		replyJSON(200, writerOK)(w, r)
	})
	var resp *http.Response
	c := ts.client(t, WithResponseInto(&resp))
	for range 3 {
		require.NoError(t, writerCall(context.Background(), c))
		require.NotNil(t, resp)
		assert.Empty(t, resp.Request.Header.Values(headerAccessKey))
		assert.NotContains(t, fmt.Sprintf("%v %+v %#v %#v", resp, resp, resp, resp.Request), testKey)
		resp.Request.Header.Set("X-Caller", "1")
		resp.Request.Header.Set(headerAccessKey, "changed")
	}
	assert.Equal(t, []string{"", "", ""}, callers)
	assert.Equal(t, []string{testKey, testKey, testKey}, keys)
}

// A caller's transport whose Proxy function writes into the request it is
// given (caller's code that sees the request): what it writes into one
// call's request never shows in the next's.
func TestAProxyFunctionsWriteStaysInItsCallsRequest(t *testing.T) {
	var seen []string
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, strings.Join(r.Header.Values("X-Proxy-Note"), ","))
		replyJSON(200, writerOK)(w, r)
	})
	tr := &http.Transport{Proxy: func(r *http.Request) (*url.URL, error) {
		r.Header.Add("X-Proxy-Note", "1")
		return nil, nil
	}}
	t.Cleanup(tr.CloseIdleConnections)
	c := ts.client(t, WithHTTPClient(&http.Client{Transport: tr}))
	for range 3 {
		require.NoError(t, writerCall(context.Background(), c))
	}
	assert.Equal(t, []string{"1", "1", "1"}, seen)
}
