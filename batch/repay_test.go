package batch_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

// A done job whose file is gone, its bytes having come in the answer, has
// nothing to fetch it from: a rerun leaves it Missing and pays nothing,
// and Options.RepayLost pays for it again, once.
func TestRepayLostPaysAgainForADoneJobWhoseBytesCameInTheAnswer(t *testing.T) {
	f := newFixture(t)
	f.write(t, imageJobs(2)...)
	var files []string
	sum, err := f.run(t, batch.Options{OnEvent: func(e batch.Event) {
		if e.Type == batch.JobEnded && e.Record.Line == 1 {
			files = e.Record.Files
		}
	}})
	require.NoError(t, err)
	require.Equal(t, 2, sum.Done, "%+v", sum)
	require.NotEmpty(t, files)
	require.NoError(t, f.store.Delete(context.Background(), files[0]))

	sum, err = f.run(t, batch.Options{})
	require.NoError(t, err)
	assert.Equal(t, batch.Summary{Jobs: 2, DoneBefore: 1, Missing: 1}, sum)
	assert.Equal(t, 2, f.srv.Count("image/text-to-image"), "nothing paid without the say-so")

	sum, err = f.run(t, batch.Options{RepayLost: true})
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Done, "%+v", sum)
	assert.Equal(t, 3, f.srv.Count("image/text-to-image"), "paid once more")
	ok, err := f.store.Exists(context.Background(), files[0])
	require.NoError(t, err)
	assert.True(t, ok, "written again")
}

// An answer whose links a service on this machine served, which is gone
// (its port refuses the connection: a fake that ended), is lost, as an
// expired link is, and says so in the library's words.
func TestLinksOfAFakeThatIsGoneAreLost(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there any more

	f := newFixture(t)
	f.srv.Handle(creativetest.OpTextToMusic, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"success":true,"message":"ok","data":"http://%s/files/song.wav"}`, gone)
	})
	f.write(t, `{"op":"audio/text-to-music","prompt":"jazz"}`)
	var rec batch.Record
	sum, err := f.run(t, batch.Options{OnEvent: func(e batch.Event) {
		if e.Type == batch.JobEnded {
			rec = e.Record
		}
	}})
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Lost, "%+v", sum)
	assert.Equal(t, batch.Answered, rec.State)
	assert.True(t, rec.Lost)
	assert.Contains(t, rec.Error, "served by a fake service on this machine, which is gone and its links with it (Options.RepayLost pays for the job again)")
}
