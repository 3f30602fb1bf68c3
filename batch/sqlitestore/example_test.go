package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/sqlitestore"
	"github.com/creativegen/creative-go/creativetest"
)

// A batch recorded in a folder: the ledger in ledger.db, the outputs as
// files beside it. A second run, by this process or another, finds every
// job done and pays for none.
func Example() {
	srv := creativetest.NewServer()
	defer srv.Close()
	dir, err := os.MkdirTemp("", "results")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	jobs := batch.Values(slices.Values([]batch.Job{
		{Op: "image/generate-qr", ID: "home", Fields: map[string]any{"url": "https://example.com", "prompt": "spring flowers"}},
		{Op: "audio/text-to-speech", ID: "hello", Fields: map[string]any{"prompt": "Hello!", "voiceId": "female 1"}},
	}))
	for range 2 {
		store, err := sqlitestore.Open(dir)
		if err != nil {
			panic(err)
		}
		r, err := batch.New(srv.Client(), store, batch.Options{Concurrency: 2})
		if err != nil {
			panic(err)
		}
		checked, err := r.Check(context.Background(), jobs)
		if err != nil {
			panic(err)
		}
		sum, err := r.Run(context.Background(), checked)
		fmt.Printf("%d done now, %d before, err %v\n", sum.Done, sum.DoneBefore, err)
		store.Close()
	}
	for _, name := range []string{"ledger.db", "home-generate-qr.png", "hello-text-to-speech.mp3"} {
		_, err := os.Stat(filepath.Join(dir, name))
		fmt.Println(name, err == nil)
	}
	// Output:
	// 2 done now, 0 before, err <nil>
	// 0 done now, 2 before, err <nil>
	// ledger.db true
	// home-generate-qr.png true
	// hello-text-to-speech.mp3 true
}
