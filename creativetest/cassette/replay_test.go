package cassette_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
)

func TestAChangedPromptFailsWithADiffNamingTheField(t *testing.T) {
	ctx := context.Background()
	srv := creativetest.Start(t)
	dir := t.TempDir()
	rec := open(t, dir, cassette.Record, srv)
	c := srv.Client(rec.Option())
	if _, err := c.TextToImage(ctx, creative.TextToImageRequest{Prompt: "a fox", NumberOfResults: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "jazz"}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	srv.Reset()

	var misses []error
	rep, err := cassette.Open(dir, cassette.Replay, &cassette.Options{IgnoreEnv: true, OnMiss: func(err error) { misses = append(misses, err) }})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	var sent atomicCount
	rc := offline(t, rep, &sent.n)
	// Left out, the count is the default the SDK sends: one request.
	if _, err := rc.TextToImage(ctx, creative.TextToImageRequest{Prompt: "a fox"}); err != nil {
		t.Fatalf("the same request, its count left to its default: %v", err)
	}
	_, err = rc.TextToImage(ctx, creative.TextToImageRequest{Prompt: "a cat", NumberOfResults: 1})
	var miss *cassette.MissError
	if !errors.As(err, &miss) {
		t.Fatalf("a changed prompt: err = %v, want a *MissError", err)
	}
	if !slices.Equal(miss.Fields, []string{"prompt"}) || !strings.Contains(miss.Diff, `prompt: recorded "a fox", sent "a cat"`) {
		t.Errorf("the miss names %v and says:\n%s", miss.Fields, miss.Diff)
	}
	if !strings.Contains(err.Error(), "nothing was sent") || len(misses) != 1 {
		t.Errorf("err = %v; OnMiss told of %d misses", err, len(misses))
	}
	// An operation never recorded: the nearest is named with its op.
	_, err = rc.GenerateLogo(ctx, creative.GenerateLogoRequest{Prompt: "a fox"})
	if !errors.As(err, &miss) || miss.Fields[0] != "op" {
		t.Errorf("another operation: %v", err)
	}
	if n := len(srv.Requests()); n != 0 || sent.n.Load() != 0 {
		t.Errorf("misses sent %d requests to the service, %d to the network", n, sent.n.Load())
	}
}

// A JSON body is matched as a value: its members in another order, with
// other spacing and numbers written otherwise, is the same request.
func TestJSONBodiesMatchAsValues(t *testing.T) {
	ctx := context.Background()
	srv := creativetest.Start(t)
	dir := t.TempDir()
	rec := open(t, dir, cassette.Record, srv)
	if _, err := srv.Client(rec.Option()).TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "jazz", Duration: 2}); err != nil {
		t.Fatal(err)
	}
	rec.Close()
	rep := open(t, dir, cassette.Replay, nil)
	reorder := creative.WithMiddleware(func(r *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
		b, _ := io.ReadAll(r.Body)
		if !bytes.Equal(b, []byte(`{"prompt":"jazz","duration":2}`)) {
			t.Errorf("the SDK sent %s", b)
		}
		b = []byte(" {\n \"duration\" : 2.0e0,\t\"prompt\": \"\\u006aazz\" }")
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		return next(r)
	})
	var sent atomicCount
	hc := &http.Client{Transport: roundTripper(func(*http.Request) (*http.Response, error) { sent.n.Add(1); return nil, errors.New("offline") })}
	c, err := creative.New(creative.WithBaseURL("https://creative.invalid"), creative.WithAccessKey("k-replay"), creative.WithHTTPClient(hc), reorder, rep.Option())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "jazz", Duration: 2}); err != nil || sent.n.Load() != 0 {
		t.Errorf("the same values written otherwise: %v, %d sent", err, sent.n.Load())
	}
}

// Identical requests replay their recordings in order: a 503 and the
// retry's answer replay as they happened.
func TestIdenticalRequestsReplayInOrder(t *testing.T) {
	ctx := context.Background()
	srv := creativetest.Start(t)
	srv.Fail("image/generate-qr", creativetest.Fault{Status: http.StatusServiceUnavailable})
	dir := t.TempDir()
	rec := open(t, dir, cassette.Record, srv)
	req := creative.GenerateQRRequest{URL: "https://example.com", Prompt: "flowers"}
	if _, err := srv.Client(rec.Option()).GenerateQR(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := srv.Count("image/generate-qr"); n != 2 {
		t.Fatalf("recording sent %d requests, want the 503 and its retry", n)
	}
	rec.Close()
	srv.Reset()
	rep := open(t, dir, cassette.Replay, nil)
	var sent atomicCount
	c, err := creative.New(creative.WithBaseURL("https://creative.invalid"), creative.WithAccessKey("k-replay"),
		creative.WithRetryWait(1e6, 1e6), creative.WithHTTPClient(&http.Client{Transport: roundTripper(func(*http.Request) (*http.Response, error) {
			sent.n.Add(1)
			return nil, errors.New("offline")
		})}), rep.Option())
	if err != nil {
		t.Fatal(err)
	}
	var last *http.Response
	if _, err := c.GenerateQR(ctx, req, creative.WithResponseInto(&last)); err != nil {
		t.Fatal(err)
	}
	if rep.Replayed() != 2 || sent.n.Load() != 0 || last.Header.Get("X-Request-Id") != "req-2" {
		t.Errorf("replayed %d answers (want the 503, then req-2's), sent %d, last answer %s", rep.Replayed(), sent.n.Load(), last.Header.Get("X-Request-Id"))
	}
	// Both used: a third identical request is a miss, not the last one
	// again.
	_, err = c.GenerateQR(ctx, req)
	var miss *cassette.MissError
	if !errors.As(err, &miss) || miss.Replayed != 2 {
		t.Errorf("a third identical call: %v", err)
	}
}

// A link an answer gave, rewritten by the recording, fed to another
// operation: the service gets the link it can fetch, the cassette the
// rewritten one, and the chain replays.
func TestARecordedLinkFedToAnotherOperationReplays(t *testing.T) {
	ctx := context.Background()
	srv := creativetest.Start(t)
	dir := t.TempDir()
	chain := func(c *creative.Client) (creative.URL, error) {
		zoom, err := c.InfiniteZoom(ctx, creative.InfiniteZoomRequest{Prompt: "a forest"})
		if err != nil {
			return "", err
		}
		return c.RemoveVideoBackground(ctx, creative.RemoveVideoBackgroundRequest{URL: string(zoom)})
	}
	rec := open(t, dir, cassette.Record, srv)
	live, err := chain(srv.Client(rec.Option()))
	if err != nil {
		t.Fatal(err)
	}
	rec.Close()
	for _, r := range srv.Requests() {
		if r.Operation == "video/remove-background" && !strings.Contains(string(r.JSON), srv.URL+"/files/") {
			t.Errorf("the service was sent %s, not the link it made", r.JSON)
		}
	}
	srv.Reset()
	var sent atomicCount
	replayed, err := chain(offline(t, open(t, dir, cassette.Replay, nil), &sent.n))
	if err != nil || replayed != live || sent.n.Load() != 0 {
		t.Errorf("replay: %v, %q (recorded %q), %d sent", err, replayed, live, sent.n.Load())
	}
	// A rewritten link from an earlier run cannot be fetched by the
	// service: refused before anything is sent.
	later := open(t, t.TempDir(), cassette.RecordMissing, srv)
	_, err = srv.Client(later.Option()).RemoveVideoBackground(ctx, creative.RemoveVideoBackgroundRequest{URL: string(live)})
	if err == nil || !strings.Contains(err.Error(), "earlier recording") || len(srv.Requests()) != 0 {
		t.Errorf("a rewritten link of an earlier run: %v, %d sent", err, len(srv.Requests()))
	}
}
