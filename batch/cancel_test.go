package batch_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/internal/media"
)

// A run whose context ends (the process is told to stop) records each
// call in flight as maybe paid (unknown) and each answered job as waiting
// for its download, with writes of their own bounded time; a rerun then
// downloads the answers without paying, and leaves the unknown ones.
func TestACancelledRunRecordsItsCallsInFlightAsMaybePaid(t *testing.T) {
	f := newFixture(t)
	stall := make(chan struct{})
	defer close(stall)
	arrived := make(chan struct{}, 3)
	var answer atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	// Images: the service holds their calls until the run is cancelled.
	f.srv.Handle("image/text-to-image", func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-stall:
		}
	})
	// Music: answered at once, its link stalls.
	wav := media.Music("tune", 0.2)
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answer.Load() {
			w.Header().Set("Content-Type", "audio/wav")
			_, _ = w.Write(wav)
			return
		}
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-stall:
		}
	}))
	defer files.Close()
	f.answerRaw("audio/text-to-music", func() string { return `"` + files.URL + `/tune.wav"` })
	f.write(t, append(imageJobs(2), `{"op":"audio/text-to-music","prompt":"tune"}`)...)
	go func() {
		for range 3 {
			<-arrived
		}
		cancel() // two calls and a download in flight
	}()
	r, err := batch.New(f.c, f.ledger, f.store, batch.Options{Concurrency: 4, Base: filepath.Dir(f.jobs)})
	require.NoError(t, err)
	c, err := r.Check(context.Background(), batch.File(f.jobs))
	require.NoError(t, err)
	sum, err := r.Run(ctx, c)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 2, sum.Unknown, "%+v", sum)
	assert.Equal(t, 1, sum.Waiting, "%+v", sum)
	st, err := batch.ReadStatus(context.Background(), f.ledger, nil)
	require.NoError(t, err)
	assert.Equal(t, map[batch.State]int{batch.Unknown: 2, batch.Answered: 1}, st.States)

	// The service counts a call once its handler returned.
	require.Eventually(t, func() bool { return f.srv.Count("image/text-to-image") == 2 }, 10*time.Second, time.Millisecond)
	answer.Store(true) // the download answers now
	sum, err = f.run(t, batch.Options{})
	require.NoError(t, err)
	assert.Equal(t, 2, f.srv.Count("image/text-to-image"), "nothing paid again: %+v", sum)
	assert.Equal(t, 1, f.srv.Count("audio/text-to-music"), "nothing paid again: %+v", sum)
	assert.Equal(t, 2, sum.Unknown, "%+v", sum)
	assert.Equal(t, 1, sum.Done, "downloaded, free: %+v", sum)
}
