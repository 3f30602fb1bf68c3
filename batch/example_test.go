package batch_test

import (
	"context"
	"fmt"
	"slices"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/creativetest"
)

// A batch from Go values, recorded in a Ledger and written to a Store
// (here both in memory; a program keeps its ledger in SQLite with package
// sqliteledger or in PostgreSQL, and its outputs in a folder or a bucket):
// the second run finds every job done and pays for none.
func Example() {
	srv := creativetest.NewServer()
	defer srv.Close()
	store := ledgertest.NewFiles()
	r, err := batch.New(srv.Client(), ledgertest.NewMemory(), store, batch.Options{Concurrency: 2})
	if err != nil {
		panic(err)
	}
	jobs := batch.Values(slices.Values([]batch.Job{
		{Op: "image/generate-qr", ID: "home", Fields: map[string]any{"url": "https://example.com", "prompt": "spring flowers"}},
		{Op: "image/text-to-image", Fields: map[string]any{"prompt": "a fox in the snow", "styleId": "anime"}},
	}))
	checked, err := r.Check(context.Background(), jobs) // every job, before anything is sent
	if err != nil {
		panic(err)
	}
	for range 2 {
		sum, err := r.Run(context.Background(), checked)
		fmt.Printf("%d done now, %d before, err %v\n", sum.Done, sum.DoneBefore, err)
	}
	fmt.Println(srv.Count("image/generate-qr")+srv.Count("image/text-to-image"), "calls")
	ok, _ := store.Exists(context.Background(), "home-generate-qr.png")
	fmt.Println("home-generate-qr.png:", ok)
	// Output:
	// 2 done now, 0 before, err <nil>
	// 0 done now, 2 before, err <nil>
	// 2 calls
	// home-generate-qr.png: true
}
