package creativetest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
)

// A Server on the in-memory network lives in a synctest bubble with the
// code under test: a Retry-After of half a minute passes at once, on the
// bubble's clock, and is waited for exactly.
func TestAServerInMemoryRunsInASynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := creativetest.Start(t, creativetest.WithInMemoryNetwork())
		srv.Fail(creativetest.OpGenerateQR, creativetest.Fault{Status: 503, RetryAfter: "30"})
		start := time.Now()
		_, err := srv.Client().GenerateQR(context.Background(), creative.GenerateQRRequest{URL: "https://example.com", Prompt: "p"})
		require.NoError(t, err)
		assert.Equal(t, 30*time.Second, time.Since(start), "the wait asked for, on the bubble's clock")
		assert.Equal(t, 2, srv.Count(creativetest.OpGenerateQR))
	})
}
