package cassette_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
)

func TestRecordedOnceReplaysOfflineWithNoRequest(t *testing.T) {
	ctx := context.Background()
	srv := creativetest.Start(t)
	dir := t.TempDir()
	rec := open(t, dir, cassette.Record, srv)
	live, err := script(ctx, srv.Client(rec.Option()), "a fox")
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	paid := len(srv.Requests())
	srv.Reset()
	// Binary bodies are files named by their hash: the two images, taken
	// out of their JSON answer, the speech and the music.
	got := files(t, dir)
	for _, line := range strings.Split(strings.TrimSpace(live), "\n") {
		f := strings.Fields(line)
		if f[0] != "image" && f[0] != "speech" {
			continue
		}
		found := false
		for name := range got {
			found = found || strings.HasPrefix(name, "bodies/"+f[2])
		}
		if !found {
			t.Errorf("no body file is named by the hash of the %s (%s): %v", f[0], f[2], names(got))
		}
	}

	// A cassette with no secret in it passes the check, no key known.
	t.Setenv(creative.EnvAccessKey, "")
	if err := cassette.Check(dir, nil); err != nil {
		t.Errorf("a clean cassette: %v", err)
	}
	var sent atomic.Int64
	rep := open(t, dir, cassette.Replay, nil)
	replayed, err := script(ctx, offline(t, rep, &sent), "a fox")
	if err != nil {
		t.Fatal(err)
	}
	if replayed != live {
		t.Errorf("replay gave\n%s\nrecording gave\n%s", replayed, live)
	}
	if n := len(srv.Requests()); n != 0 || sent.Load() != 0 {
		t.Errorf("replay sent %d requests to the service and %d to the network", n, sent.Load())
	}
	t.Logf("recorded %d paid calls; replayed %d answers, 0 sent\n%s", paid, rep.Replayed(), live)
}

// A test written as docs/testing.md shows: Start and Client, recording
// when CREATIVE_RECORD_MODE says so, replaying with no key and no base URL
// otherwise.
func TestStartAndClientRecordThenReplayFromTheEnvironment(t *testing.T) {
	srv := creativetest.Start(t)
	dir := t.TempDir()
	call := func(t *testing.T) string {
		cas := cassette.Start(t, dir, cassette.Replay, &cassette.Options{HTTPClient: srv.HTTPClient()})
		c, err := cas.Client()
		if err != nil {
			t.Fatal(err)
		}
		qr, err := c.GenerateQR(context.Background(), creative.GenerateQRRequest{URL: "https://example.com", Prompt: "flowers"})
		if err != nil {
			t.Fatal(err)
		}
		return sum(qr.Data)
	}
	var live, replayed string
	t.Run("record", func(t *testing.T) {
		t.Setenv(cassette.EnvMode, "record")
		t.Setenv(creative.EnvBaseURL, srv.URL)
		t.Setenv(creative.EnvAccessKey, srv.AccessKey)
		live = call(t)
	})
	recorded := srv.Count("image/generate-qr")
	t.Run("replay", func(t *testing.T) {
		t.Setenv(cassette.EnvMode, "")
		t.Setenv(creative.EnvBaseURL, "")
		t.Setenv(creative.EnvAccessKey, "")
		replayed = call(t)
	})
	if recorded != 1 || srv.Count("image/generate-qr") != 1 || live == "" || replayed != live {
		t.Errorf("the service saw %d calls recording, %d in all; the QR code was %s, replayed %s", recorded, srv.Count("image/generate-qr"), live, replayed)
	}
}
