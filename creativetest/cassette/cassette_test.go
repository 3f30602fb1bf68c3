package cassette_test

import (
	"context"
	"sync/atomic"
	"testing"

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
