package batch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

// fixture is a fake service, a folder for the jobs file and one for the
// results.
type fixture struct {
	srv  *creativetest.Server
	c    *creative.Client
	jobs string // the jobs file's path
	out  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv := creativetest.NewServer()
	t.Cleanup(srv.Close)
	c, err := creative.New(creative.WithBaseURL(srv.URL), creative.WithAccessKey(srv.AccessKey), creative.WithRetryWait(time.Millisecond, 2*time.Millisecond))
	require.NoError(t, err)
	dir := t.TempDir()
	return &fixture{srv: srv, c: c, jobs: filepath.Join(dir, "jobs.jsonl"), out: filepath.Join(t.TempDir(), "out")}
}

func (f *fixture) write(t *testing.T, lines ...string) {
	t.Helper()
	require.NoError(t, os.WriteFile(f.jobs, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

// run runs the jobs file once with a Runner of its own.
func (f *fixture) run(t *testing.T, o batch.Options) (batch.Summary, error) {
	t.Helper()
	store, err := batch.NewDir(f.out)
	require.NoError(t, err)
	defer store.Close()
	o.Base = filepath.Dir(f.jobs)
	r, err := batch.New(f.c, store, o)
	require.NoError(t, err)
	return r.Run(context.Background(), batch.File(f.jobs))
}

func imageJobs(n int) []string {
	var lines []string
	for i := 1; i <= n; i++ {
		lines = append(lines, fmt.Sprintf(`{"op":"image/text-to-image","prompt":"job %d"}`, i))
	}
	return lines
}

func TestRunDoesEveryJobOnceAndARerunPaysForNothing(t *testing.T) {
	f := newFixture(t)
	f.write(t, imageJobs(12)...)
	sum, err := f.run(t, batch.Options{Concurrency: 4})
	require.NoError(t, err)
	assert.Equal(t, 12, sum.Done, "%+v", sum)
	assert.Equal(t, 12, f.srv.Count("image/text-to-image"))

	// An inserted line, then a rerun: nothing is paid again.
	f.write(t, append([]string{`{"op":"image/generate-qr","url":"https://e.example","prompt":"new"}`}, imageJobs(12)...)...)
	sum, err = f.run(t, batch.Options{Concurrency: 4})
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Done)
	assert.Equal(t, 12, sum.DoneBefore)
	assert.Equal(t, 12, f.srv.Count("image/text-to-image"), "no job paid twice")
	assert.Equal(t, 1, f.srv.Count("image/generate-qr"))
}
