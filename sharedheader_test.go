package creative

import (
	"context"
	"net/http"
	"net/http/cookiejar"
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
