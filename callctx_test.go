package creative

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTheCallersHTTPTraceStillRuns(t *testing.T) {
	ts := newTestServer(t, replyJSON(500, `{"success":false,"message":"boom"}`))
	c := ts.client(t)
	var got, wrote atomic.Int32
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn:      func(httptrace.GotConnInfo) { got.Add(1) },
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Add(1) },
	})
	_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"})
	require.ErrorIs(t, err, ErrOutcomeUnknown, "the client's own hooks ran too: the request was written whole")
	require.EqualValues(t, 1, got.Load())
	require.EqualValues(t, 1, wrote.Load())
	require.EqualValues(t, 1, ts.hits.Load())
}

func TestAMiddlewaresContextKeepsTheCall(t *testing.T) {
	type k struct{}
	n := 0
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"success":true,"data":"https://f.example/a.wav"}`))
	})
	mw := func(req *http.Request, next MiddlewareNext) (*http.Response, error) {
		return next(req.WithContext(context.WithValue(req.Context(), k{}, 1)))
	}
	c := ts.client(t, WithMiddleware(mw))
	_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
	require.NoError(t, err)
	require.EqualValues(t, 2, ts.hits.Load())
}
