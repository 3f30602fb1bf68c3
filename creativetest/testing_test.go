package creativetest_test

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
)

func TestStartClosesTheServerWhenTheTestEnds(t *testing.T) {
	var srv *creativetest.Server
	t.Run("a test that starts one", func(t *testing.T) {
		srv = creativetest.Start(t, creativetest.WithAccessKey("k-1"))
		assert.Equal(t, "k-1", srv.AccessKey)
		_, err := srv.Client().GenerateQR(context.Background(), creative.GenerateQRRequest{URL: "https://example.com", Prompt: "p"})
		require.NoError(t, err)
	})
	_, err := http.Get(srv.URL + "/files/none")
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "the Server still listens after its test ended")
}

func TestEveryAnswerCarriesARequestID(t *testing.T) {
	srv := creativetest.Start(t)
	var resp *http.Response
	c := srv.Client(creative.WithResponseInto(&resp), creative.WithMaxRetries(0))
	ctx := context.Background()
	seen := map[string]bool{}
	check := func(name string, h http.Header) {
		t.Helper()
		id := h.Get("X-Request-Id")
		assert.Regexp(t, `^req-\d+$`, id, name)
		assert.False(t, seen[id], "%s: id %s given twice", name, id)
		seen[id] = true
	}

	url, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "jazz", Duration: 1})
	require.NoError(t, err)
	check("a success", resp.Header)

	_, err = c.Download(ctx, url, &strings.Builder{})
	require.NoError(t, err)
	check("a download", resp.Header)

	srv.Fail("audio/text-to-music", creativetest.Fault{Status: http.StatusBadGateway, Body: "<html>bad gateway</html>"})
	_, err = c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "jazz"})
	var apiErr *creative.APIError
	require.ErrorAs(t, err, &apiErr)
	check("a fault", apiErr.Header)
	assert.Equal(t, apiErr.Header.Get("X-Request-Id"), apiErr.RequestID)
	assert.True(t, strings.HasSuffix(err.Error(), "(request id "+apiErr.RequestID+")"), err.Error())

	_, err = c.TextToImage(ctx, creative.TextToImageRequest{Prompt: "x", NumberOfResults: 1, StyleID: "0123456789abcdef01234567"})
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	check("a refusal", apiErr.Header)

	_, err = srv.Client(creative.WithAccessKey("wrong"), creative.WithResponseInto(&resp)).TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "jazz"})
	require.ErrorIs(t, err, creative.ErrUnauthorized)
	check("a wrong key", resp.Header)

	for _, path := range []string{"/no/v1/such", "/files/none"} {
		r, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		r.Body.Close()
		assert.Equal(t, http.StatusNotFound, r.StatusCode)
		check(path, r.Header)
	}
}

// InstantRetryAfter's point is the time it saves: each case runs in a
// synctest bubble, the Server in memory, and the waits are measured on the
// bubble's clock.
func TestInstantRetryAfterRetriesAtOnce(t *testing.T) {
	ctx := context.Background()
	qr := creative.GenerateQRRequest{URL: "https://example.com", Prompt: "p"}
	// backoffs bounds the waits of the Server's Client of their own: its
	// retry waits are at most 10 ms.
	const backoffs = 10 * time.Millisecond
	tests := []struct {
		name       string
		retryAfter func() string // read on the bubble's clock
		status     int
	}{
		{"a 503 asking for a second", func() string { return "1" }, http.StatusServiceUnavailable},
		{"a 429 asking for two seconds", func() string { return "2" }, http.StatusTooManyRequests},
		{"a 429 asking until a date", func() string { return time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat) }, http.StatusTooManyRequests},
	}
	for _, tt := range tests {
		t.Run(tt.name+", then success", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := creativetest.StartInMemory(t)
				srv.Fail("image/generate-qr", creativetest.Fault{Status: tt.status, RetryAfter: tt.retryAfter()})
				start := time.Now()
				img, err := srv.Client(creativetest.InstantRetryAfter()).GenerateQR(ctx, qr)
				require.NoError(t, err)
				assert.LessOrEqual(t, time.Since(start), backoffs, "the wait asked for was not spent")
				assert.Equal(t, "image/png", img.ContentType())
				assert.Equal(t, 2, srv.Count("image/generate-qr"))
			})
		})
	}
	t.Run("retries run out: the error keeps the asked wait in a header", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := creativetest.StartInMemory(t)
			srv.Fail("image/generate-qr", creativetest.Fault{Times: 3, Status: http.StatusServiceUnavailable, RetryAfter: "1"})
			start := time.Now()
			_, err := srv.Client(creativetest.InstantRetryAfter()).GenerateQR(ctx, qr)
			assert.LessOrEqual(t, time.Since(start), 2*backoffs, "the waits asked for were not spent")
			var apiErr *creative.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, 3, apiErr.Attempts)
			assert.Equal(t, "1", apiErr.Header.Get(creativetest.AskedRetryAfter))
			assert.Zero(t, apiErr.RetryAfter)
			assert.Equal(t, 3, srv.Count("image/generate-qr"))
		})
	})
	t.Run("a wait longer than the client waits is left as sent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := creativetest.StartInMemory(t)
			srv.Fail("image/generate-qr", creativetest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "120"})
			_, err := srv.Client(creativetest.InstantRetryAfter()).GenerateQR(ctx, qr)
			var apiErr *creative.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, 120*time.Second, apiErr.RetryAfter)
			assert.Empty(t, apiErr.Header.Get(creativetest.AskedRetryAfter))
			assert.Equal(t, 1, srv.Count("image/generate-qr"), "not retried")
		})
	})
	t.Run("other answers pass unchanged", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := creativetest.StartInMemory(t)
			srv.Fail("image/generate-qr", creativetest.Fault{Status: http.StatusServiceUnavailable})
			var resp *http.Response
			_, err := srv.Client(creativetest.InstantRetryAfter(), creative.WithResponseInto(&resp)).GenerateQR(ctx, qr)
			require.NoError(t, err)
			assert.Empty(t, resp.Header.Get(creativetest.AskedRetryAfter))
			assert.Equal(t, 2, srv.Count("image/generate-qr"))
		})
	})
}
