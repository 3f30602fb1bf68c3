package cassette_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
)

// record runs the script against a fresh fake into a fresh cassette and
// returns the cassette's files.
func record(t *testing.T) map[string]string {
	t.Helper()
	srv := creativetest.Start(t)
	dir := t.TempDir()
	rec := open(t, dir, cassette.Record, srv)
	if _, err := script(context.Background(), srv.Client(rec.Option()), "a fox"); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return files(t, dir)
}

func TestACassetteRecordedTwiceIsByteIdentical(t *testing.T) {
	first, second := record(t), record(t)
	if !slices.Equal(names(first), names(second)) {
		t.Fatalf("the recordings hold other files:\n%v\n%v", names(first), names(second))
	}
	bytes := 0
	for name, b := range first {
		if second[name] != b {
			t.Errorf("%s differs:\n%s\n%s", name, b, second[name])
		}
		bytes += len(b)
	}
	t.Logf("%d files, %d bytes, identical", len(first), bytes)
}

func TestABatchOf20JobsReplaysWithNoRequest(t *testing.T) {
	ctx := context.Background()
	var jobs []batch.Job
	for i := range 20 {
		switch i % 3 {
		case 0:
			jobs = append(jobs, batch.Job{Op: "image/text-to-image", Fields: map[string]any{"prompt": fmt.Sprintf("fox %d", i)}})
		case 1:
			jobs = append(jobs, batch.Job{Op: "audio/text-to-music", Fields: map[string]any{"prompt": fmt.Sprintf("jazz %d", i), "duration": 1}})
		default:
			jobs = append(jobs, batch.Job{Op: "image/generate-qr", Fields: map[string]any{"url": "https://example.com", "prompt": fmt.Sprintf("flowers %d", i)}})
		}
	}
	// run runs the jobs with a ledger of its own, as a clean CI run does,
	// and returns the files it wrote.
	run := func(t *testing.T, r *batch.Runner, store *ledgertest.Files) map[string]string {
		t.Helper()
		checked, err := r.Check(ctx, batch.Values(slices.Values(jobs)))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := r.Run(ctx, checked)
		if err != nil || sum.Done != len(jobs) {
			t.Fatalf("run: %+v, %v", sum, err)
		}
		out := map[string]string{}
		for _, key := range store.Keys() {
			if ext := key[strings.LastIndex(key, ".")+1:]; ext == "png" || ext == "wav" {
				out[key] = string(store.Bytes(key))
			}
		}
		return out
	}

	srv := creativetest.Start(t)
	dir := t.TempDir()
	rec := open(t, dir, cassette.Record, srv)
	store := ledgertest.NewFiles()
	r, err := batch.New(srv.Client(rec.Option()), ledgertest.NewMemory(), store, batch.Options{Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	recorded := run(t, r, store)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	paid := len(srv.Requests())
	srv.Reset()

	var sent atomic.Int64
	rep := open(t, dir, cassette.Replay, nil)
	store = ledgertest.NewFiles()
	r, err = batch.New(offline(t, rep, &sent), ledgertest.NewMemory(), store, batch.Options{Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	replayed := run(t, r, store)
	if n := len(srv.Requests()); n != 0 || sent.Load() != 0 {
		t.Errorf("the replayed batch sent %d requests to the service, %d to the network", n, sent.Load())
	}
	if len(replayed) != len(recorded) || len(recorded) < len(jobs) {
		t.Fatalf("the replay wrote %d files, the recording %d", len(replayed), len(recorded))
	}
	for k, v := range recorded {
		if replayed[k] != v {
			t.Errorf("%s differs in replay", k)
		}
	}
	t.Logf("20 jobs: recording sent %d calls (downloads apart), replay sent 0 and replayed %d answers; %d files alike", paid, rep.Replayed(), len(recorded))
}
