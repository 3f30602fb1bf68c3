package batch_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

// A job waiting before a retry (the service said 429, retry after a
// minute) has nothing in flight: Stop ends it at once, refused, without
// sending the retry, so that Run returns at once and a rerun sends it.
func TestStopEndsAtOnceAJobWaitingBeforeARetry(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		synctest.Test(t, func(t *testing.T) {
			f := newFixture(t, creativetest.WithInMemoryNetwork())
			arrived := make(chan struct{}, 4)
			f.srv.Handle(creativetest.OpTextToImage, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "60")
				w.WriteHeader(status)
				arrived <- struct{}{}
			})
			f.write(t, imageJobs(1)...)
			r, err := batch.New(f.c, f.ledger, f.store, batch.Options{Base: filepath.Dir(f.jobs)})
			require.NoError(t, err)
			checked, err := r.Check(context.Background(), batch.File(f.jobs))
			require.NoError(t, err)
			type result struct {
				sum batch.Summary
				err error
			}
			ended := make(chan result, 1)
			go func() {
				sum, err := r.Run(context.Background(), checked)
				ended <- result{sum, err}
			}()
			<-arrived
			synctest.Wait() // the job waits its minute before the retry
			start := time.Now()
			assert.Zero(t, r.Stop(), "no call in flight")
			res := <-ended
			assert.Zero(t, time.Since(start), "ended at once, not after the Retry-After")
			require.NoError(t, res.err)
			assert.Equal(t, 1, res.sum.Refused, "refused, never maybe paid: %+v", res.sum)
			assert.Equal(t, 1, f.srv.Count(creativetest.OpTextToImage), "the retry was not sent")
			st, err := batch.ReadStatus(context.Background(), f.ledger, nil)
			require.NoError(t, err)
			assert.Equal(t, map[batch.State]int{batch.Refused: 1}, st.States)
		})
	}
}
