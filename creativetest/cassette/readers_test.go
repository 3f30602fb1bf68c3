package cassette_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
)

// A Record that starts a cassette anew while a replay of it runs (another
// test binary, or another Cassette of this one: the folder's locks are
// per open file) forgets the old recordings without deleting the bodies
// the replay reads: the replay replays each of them, sending nothing.
// With no replay running, the old bodies go with the old index.
func TestARecordStartingAnewLeavesTheBodiesAReplayReads(t *testing.T) {
	t.Setenv(cassette.EnvMode, "")
	t.Setenv(creative.EnvAccessKey, "")
	ctx := context.Background()
	srv := creativetest.Start(t)
	for _, replaying := range []bool{true, false} {
		dir := t.TempDir()
		first := open(t, dir, cassette.Record, srv)
		c := srv.Client(first.Option())
		for _, p := range []string{"a", "b"} {
			if _, err := c.TextToImage(ctx, creative.TextToImageRequest{Prompt: p, NumberOfResults: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(dir, "bodies", "*"))
		var replay *cassette.Cassette
		var sent atomic.Int64
		if replaying {
			replay = open(t, dir, cassette.Replay, nil)
		}
		again := open(t, dir, cassette.Record, srv)
		if _, err := srv.Client(again.Option()).TextToImage(ctx, creative.TextToImageRequest{Prompt: "c", NumberOfResults: 1}); err != nil {
			t.Fatal(err)
		}
		if replaying {
			rc := offline(t, replay, &sent)
			for _, p := range []string{"a", "b"} {
				if _, err := rc.TextToImage(ctx, creative.TextToImageRequest{Prompt: p, NumberOfResults: 1}); err != nil {
					t.Errorf("the replay of %q while a Record started anew: %v", p, err)
				}
			}
			if sent.Load() != 0 {
				t.Errorf("the replay sent %d requests", sent.Load())
			}
			_ = replay.Close()
		}
		_ = again.Close()
		// The new cassette replays its own recording alone.
		fresh := open(t, dir, cassette.Replay, nil)
		fc := offline(t, fresh, &sent)
		if _, err := fc.TextToImage(ctx, creative.TextToImageRequest{Prompt: "c", NumberOfResults: 1}); err != nil {
			t.Errorf("replaying: %v, the new recording", err)
		}
		var miss *cassette.MissError
		if _, err := fc.TextToImage(ctx, creative.TextToImageRequest{Prompt: "a", NumberOfResults: 1}); !errors.As(err, &miss) {
			t.Errorf("replaying %q, forgotten: %v, want a *MissError", "a", err)
		}
		left := 0
		for _, b := range old {
			if _, err := os.Stat(b); err == nil {
				left++
			}
		}
		if want := map[bool]int{true: len(old), false: 0}[replaying]; left != want {
			t.Errorf("replaying %t: %d of the %d old bodies left, want %d", replaying, left, len(old), want)
		}
	}
}
