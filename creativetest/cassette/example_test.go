package cassette_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
)

// A test records its calls once, with a key, and replays them for ever
// after, with no key and no network. Here the fake service stands in for
// the real one; in a test, cassette.Start(t, dir, cassette.Replay, nil)
// opens, fails and closes with the test, and CREATIVE_RECORD_MODE=record
// on the go test line records.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "cassette")
	defer os.RemoveAll(dir)

	// Once: record against the service (here the fake), paying for each
	// call; the cassette is a folder to commit beside the test.
	service := creativetest.NewServer()
	defer service.Close()
	rec, err := cassette.Open(dir, cassette.Record, &cassette.Options{IgnoreEnv: true})
	if err != nil {
		log.Fatal(err)
	}
	c := service.Client(rec.Option())
	music, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "calm piano", Duration: 2})
	if err != nil {
		log.Fatal(err)
	}
	recorded, _ := c.Download(ctx, music, io.Discard)
	rec.Close()
	fmt.Println("recorded:", service.Count("audio/text-to-music"), "call,", recorded, "bytes of music")

	// For ever after, in CI: replay, with no key and a base URL nothing
	// listens on.
	rep, err := cassette.Open(dir, cassette.Replay, &cassette.Options{IgnoreEnv: true})
	if err != nil {
		log.Fatal(err)
	}
	defer rep.Close()
	c, err = creative.New(creative.WithBaseURL("https://creative.invalid"), creative.WithAccessKey(cassette.AccessKey()), rep.Option())
	if err != nil {
		log.Fatal(err)
	}
	music, err = c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "calm piano", Duration: 2})
	if err != nil {
		log.Fatal(err)
	}
	replayed, _ := c.Download(ctx, music, io.Discard)
	fmt.Println("replayed:", replayed, "bytes of music,", rep.Sent(), "requests sent")

	// A changed request is no recording: it fails, naming the field.
	_, err = c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "loud drums", Duration: 2})
	var miss *cassette.MissError
	if errors.As(err, &miss) {
		fmt.Println("miss: differs in", miss.Fields)
	}
	// Output:
	// recorded: 1 call, 88244 bytes of music
	// replayed: 88244 bytes of music, 0 requests sent
	// miss: differs in [prompt]
}
