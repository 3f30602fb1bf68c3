package batch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/creativetest"
)

// fixture is a fake service, a folder for the jobs file, a ledger and a
// store for the results.
type fixture struct {
	srv    *creativetest.Server
	c      *creative.Client
	jobs   string // the jobs file's path
	ledger *ledgertest.Memory
	store  *ledgertest.Files
}

// newFixture makes a fixture whose fake takes opts: with
// creativetest.WithInMemoryNetwork, make it inside a synctest bubble.
func newFixture(t *testing.T, opts ...creativetest.Option) *fixture {
	t.Helper()
	srv := creativetest.Start(t, opts...)
	c := srv.Client(creative.WithRetryWait(time.Millisecond, 2*time.Millisecond))
	return &fixture{srv: srv, c: c, jobs: filepath.Join(t.TempDir(), "jobs.jsonl"),
		ledger: ledgertest.NewMemory(), store: ledgertest.NewFiles()}
}

func (f *fixture) write(t *testing.T, lines ...string) {
	t.Helper()
	require.NoError(t, os.WriteFile(f.jobs, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

// run runs the jobs file once with a Runner of its own.
func (f *fixture) run(t *testing.T, o batch.Options) (batch.Summary, error) {
	t.Helper()
	o.Base = filepath.Dir(f.jobs)
	r, err := batch.New(f.c, f.ledger, f.store, o)
	require.NoError(t, err)
	return checkAndRun(r, batch.File(f.jobs))
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

// A job's id fields take the docs' labels and sizes as the spec's; the
// job is what they name, so rewriting its labels pays for nothing.
func TestAJobNamedWithTheDocsLabelsIsTheSameJobWithTheSpecs(t *testing.T) {
	f := newFixture(t)
	f.write(t, `{"op":"image/text-to-image","prompt":"owl","imageSizeId":"16:9","styleId":"Photo","cameraId":"Fish Eye"}`)
	sum, err := f.run(t, batch.Options{})
	require.NoError(t, err)
	require.Equal(t, 1, sum.Done, "%+v", sum)
	reqs := f.srv.Requests()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, `{"prompt":"owl","numberOfResults":1,"imageSizeId":"6644b0c5ec3658a8e38d9520","dimensionsId":"6644b0c5ec3658a8e38d9520","styleId":"6644b0c5ec3658a8e38d94ec","cameraId":"6644b0c5ec3658a8e38d9534"}`, string(reqs[0].JSON))

	f.write(t, `{"op":"image/text-to-image","prompt":"owl","imageSizeId":"6644b0c5ec3658a8e38d9520","styleId":"photograph","cameraId":"fisheye-lens"}`)
	sum, err = f.run(t, batch.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, sum.DoneBefore, "%+v", sum)
	assert.Equal(t, 1, f.srv.Count("image/text-to-image"), "not paid twice")
}

// Two runners at once meet each other's claims in flight; with
// ResendUnknown, each finds the other live and leaves them.
func TestTwoRunnersOnOneFolderPayForEachJobOnce(t *testing.T) {
	for _, resend := range []bool{false, true} {
		t.Run(fmt.Sprint("ResendUnknown ", resend), func(t *testing.T) {
			f := newFixture(t)
			const jobs = 60
			f.write(t, imageJobs(jobs)...)
			var sums [2]batch.Summary
			var errs [2]error
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range 2 {
				wg.Go(func() {
					<-start
					sums[i], errs[i] = f.run(t, batch.Options{Concurrency: 8, Worker: fmt.Sprint("worker-", i), ResendUnknown: resend})
				})
			}
			close(start)
			wg.Wait()
			require.NoError(t, errs[0])
			require.NoError(t, errs[1])
			assert.Equal(t, jobs, f.srv.Count("image/text-to-image"), "every job paid once, none twice")
			assert.Equal(t, jobs, sums[0].Done+sums[1].Done, "%+v %+v", sums[0], sums[1])
			for i := range 2 {
				assert.Equal(t, jobs, sums[i].Done+sums[i].Elsewhere+sums[i].DoneBefore, "worker %d: %+v", i, sums[i])
				assert.Zero(t, sums[i].Unknown)
				assert.Zero(t, sums[i].Claimed, "a claim of the other, live, worker is never taken for a dead one's")
			}
			t.Logf("worker 0 did %d, worker 1 did %d; met in flight: %d, %d", sums[0].Done, sums[1].Done,
				sums[0].Elsewhere, sums[1].Elsewhere)
		})
	}
}

// failingLedger is a Ledger whose claims and records fail from the nth
// on, as a full disk would.
type failingLedger struct {
	batch.Ledger
	n, writes atomic.Int32
}

func (l *failingLedger) full() error {
	if l.writes.Add(1) >= l.n.Load() {
		return fmt.Errorf("write: %w", syscall.ENOSPC)
	}
	return nil
}

func (l *failingLedger) Claim(ctx context.Context, c *batch.Claim) (batch.ClaimResult, error) {
	if err := l.full(); err != nil {
		return batch.ClaimResult{}, err
	}
	return l.Ledger.Claim(ctx, c)
}

func (l *failingLedger) Record(ctx context.Context, a *batch.Entry) error {
	if err := l.full(); err != nil {
		return err
	}
	return l.Ledger.Record(ctx, a)
}

func TestALedgerThatCannotBeWrittenStopsTheRunAndLosesNoPaidAnswer(t *testing.T) {
	f := newFixture(t)
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf(`{"op":"audio/text-to-music","prompt":"tune %d"}`, i))
	}
	f.write(t, lines...)
	ledger := &failingLedger{Ledger: f.ledger}
	// The first job is claimed, answered and ended, the second claimed and
	// paid for; then the disk is full.
	ledger.n.Store(5)
	var mu sync.Mutex
	ended := map[batch.State]int{}
	r, err := batch.New(f.c, ledger, f.store, batch.Options{Concurrency: 1, Base: filepath.Dir(f.jobs), OnEvent: func(e batch.Event) {
		if e.Type == batch.JobEnded {
			mu.Lock()
			ended[e.Record.State]++
			mu.Unlock()
		}
	}})
	require.NoError(t, err)
	sum, err := checkAndRun(r, batch.File(f.jobs))
	var le *batch.LedgerError
	require.ErrorAs(t, err, &le)
	assert.ErrorIs(t, err, syscall.ENOSPC)
	calls := f.srv.Count("audio/text-to-music")
	assert.Equal(t, 2, calls, "no job started after the failed write")
	require.Len(t, le.Unrecorded, 1, "the answer whose record failed is handed back")
	assert.Len(t, le.Unrecorded[0].URLs, 1)
	assert.Contains(t, le.Unrecorded[0].URLs[0], "/files/")
	assert.Equal(t, 1, sum.Done)
	assert.Equal(t, 18, sum.NotStarted, "%+v", sum)
	assert.Equal(t, map[batch.State]int{batch.Done: 1, batch.Claimed: 1}, ended, "nothing unrecorded is called done")

	// The rerun with room again: the job whose answer was not recorded
	// stays claimed (maybe paid), nothing is paid twice, the rest run.
	f.srv.Reset()
	sum, err = f.run(t, batch.Options{Concurrency: 4})
	require.NoError(t, err)
	assert.Equal(t, 18, f.srv.Count("audio/text-to-music"))
	assert.Equal(t, 1, sum.Claimed, "%+v", sum)
	assert.Equal(t, 1, sum.DoneBefore)
}

func TestClassifySaysUnknownWhenInDoubt(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want batch.State
	}{
		{"the outcome is unknown", fmt.Errorf("x: %w", creative.ErrOutcomeUnknown), batch.Unknown},
		{"a local validation error", &creative.ValidationError{Field: "prompt", Rule: "required"}, batch.Failed},
		{"a 400", &creative.APIError{StatusCode: 400}, batch.Failed},
		{"a 429", &creative.APIError{StatusCode: 429}, batch.Refused},
		{"a 503", &creative.APIError{StatusCode: 503}, batch.Refused},
		{"a 408", &creative.APIError{StatusCode: 408}, batch.Refused},
		{"a 500", &creative.APIError{StatusCode: 500}, batch.Unknown},
		{"a 401", &creative.APIError{StatusCode: 401}, batch.Failed},
		{"a 404", &creative.APIError{StatusCode: 404}, batch.Failed},
		{"nothing sent", fmt.Errorf("dial: %w", creative.ErrNotSent), batch.Refused},
		{"refused after the retries", fmt.Errorf("x: %w", creative.ErrRefused), batch.Refused},
		{"anything else", errors.New("something"), batch.Unknown},
		{"a 200 that is not what the operation promises", fmt.Errorf("x: %w", creative.ErrUnexpectedResponse), batch.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, batch.Classify(tt.err))
		})
	}
}

func TestJobsFromGoValuesAndFilesFromAnFS(t *testing.T) {
	f := newFixture(t)
	png, err := os.ReadFile(pngPath(t))
	require.NoError(t, err)
	fsys := fstest.MapFS{"in/cat.png": {Data: png}}
	store := f.store
	var events atomic.Int32
	r, err := batch.New(f.c, f.ledger, store, batch.Options{FS: fsys, OnEvent: func(e batch.Event) {
		if e.Type == batch.JobEnded {
			events.Add(1)
		}
	}})
	require.NoError(t, err)
	jobs := []batch.Job{
		{Op: "image/re-imagine", ID: "cat", Fields: map[string]any{"image": "in/cat.png"}},
		{Op: "image/generate-logo", Fields: map[string]any{"prompt": "p", "numberOfResults": 2}},
		{Op: "image/generate-logo", Fields: map[string]any{"prompt": "p", "numberOfResults": 2}},
	}
	sum, err := checkAndRun(r, batch.Values(slices.Values(jobs)))
	var ce *batch.CheckError
	if errors.As(err, &ce) {
		t.Fatal(ce.Lines[0])
	}
	require.NoError(t, err)
	assert.Equal(t, 3, sum.Done, "two identical jobs are two jobs")
	assert.Equal(t, int32(3), events.Load())
	reqs := f.srv.Requests()
	require.Len(t, reqs, 3)
	ok, err := store.Exists(context.Background(), "cat-re-imagine.png")
	require.NoError(t, err)
	assert.True(t, ok)

	_, err = checkAndRun(r, batch.Values(slices.Values([]batch.Job{
		{Op: "image/re-imagine", Fields: map[string]any{"image": "../cat.png"}},
		{Op: "image/generate-logo", Fields: map[string]any{"prompt": "p", "numberOfResults": 0}},
	})))
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Lines, 2)
	assert.Equal(t, "line 1: image: ../cat.png is outside the jobs file's folder (files are read from inside it only)", ce.Lines[0].Error())
	assert.Equal(t, "line 2: numberOfResults: is 0: leave it out for the service's default (1)", ce.Lines[1].Error())
	assert.Len(t, f.srv.Requests(), 3, "nothing more was sent")
}

// pngPath writes a small PNG made by the fake and returns its path.
func pngPath(t *testing.T) string {
	t.Helper()
	srv := creativetest.NewServer()
	defer srv.Close()
	im, err := srv.Client().GenerateQR(context.Background(), creative.GenerateQRRequest{URL: "https://e.example", Prompt: "p"})
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "cat.png")
	require.NoError(t, im.Save(p))
	return p
}

// fullDisk is a Store whose output writers fail, as a full disk would.
type fullDisk struct{ batch.Store }

func (s fullDisk) NewWriter(ctx context.Context, key string, meta map[string]string) (io.WriteCloser, error) {
	return nil, fmt.Errorf("create %s: %w", key, syscall.ENOSPC)
}

func TestImagesThatCannotBeWrittenStopTheRunAndAreNeverCalledDone(t *testing.T) {
	f := newFixture(t)
	f.write(t, imageJobs(10)...)
	r, err := batch.New(f.c, f.ledger, fullDisk{f.store}, batch.Options{Concurrency: 1, Base: filepath.Dir(f.jobs)})
	require.NoError(t, err)
	sum, err := checkAndRun(r, batch.File(f.jobs))
	require.ErrorIs(t, err, syscall.ENOSPC)
	assert.Equal(t, 1, f.srv.Count("image/text-to-image"), "no job started after the failed write")
	assert.Zero(t, sum.Done)
	assert.Equal(t, 1, sum.Lost, "paid, and its answer could not be kept: %+v", sum)

	// A rerun with room again pays for it only with the flag.
	f.srv.Reset()
	sum, err = f.run(t, batch.Options{})
	require.NoError(t, err)
	assert.Equal(t, 9, f.srv.Count("image/text-to-image"))
	assert.Equal(t, 1, sum.Lost)
	sum, err = f.run(t, batch.Options{RepayLost: true})
	require.NoError(t, err)
	assert.Equal(t, 10, f.srv.Count("image/text-to-image"))
	assert.Equal(t, 1, sum.Done)
}

// Classify reads the errors the SDK gives, not only errors made by hand:
// each server behaviour leaves its job in the state a rerun can act on.
func TestClassifyReadsTheSDKsErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	for _, tc := range []struct {
		name   string
		status int // 0: no server (a closed port)
		want   batch.State
	}{
		{"a 400 envelope", 400, batch.Failed},
		{"a 500", 500, batch.Unknown},
		{"a 502 from a gateway", 502, batch.Unknown},
		{"a 503, every time", 503, batch.Refused},
		{"a 429, every time", 429, batch.Refused},
		{"a closed port", 0, batch.Refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := closed
			if tc.status != 0 {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Retry-After", "0")
					w.WriteHeader(tc.status)
					_, _ = io.WriteString(w, `{"success":false,"message":"no"}`)
				}))
				t.Cleanup(srv.Close)
				base = srv.URL
			}
			c, err := creative.New(creative.WithBaseURL(base), creative.WithAccessKey("classify-key"),
				creative.WithMaxRetries(1), creative.WithRetryWait(time.Millisecond, time.Millisecond))
			require.NoError(t, err)
			_, err = c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "p"})
			require.Error(t, err)
			assert.Equal(t, tc.want, batch.Classify(err), "%v", err)
		})
	}
}

// checkAndRun checks the jobs of src, then runs them.
func checkAndRun(r *batch.Runner, src batch.Source) (batch.Summary, error) {
	c, err := r.Check(context.Background(), src)
	if err != nil {
		return batch.Summary{}, err
	}
	return r.Run(context.Background(), c)
}

func TestAMistypedFieldGetsTheNearestNameAndNothingIsSent(t *testing.T) {
	f := newFixture(t)
	r, err := batch.New(f.c, nil, nil, batch.Options{})
	require.NoError(t, err)
	jobs := []batch.Job{
		{Op: "image/text-to-image", Fields: map[string]any{"prompt": "p", "colour": "red"}},
		{Op: "image/text-to-image", Fields: map[string]any{"prompt": "p", "number-of-results": 2}},
		{Op: "audio/text-to-speech", Fields: map[string]any{"prompt": "p", "voice": "female 1"}},
		{Op: "image/text-to-image", Fields: map[string]any{"prompt": "p", "flavour": "sweet"}},
	}
	_, err = r.Check(context.Background(), batch.Values(slices.Values(jobs)))
	var ce *batch.CheckError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Lines, 4)
	takes := " (it takes: prompt, numberOfResults, imageSizeId, styleId, cameraId, colorId, lightingId)"
	assert.Equal(t, `line 1: colour: image/text-to-image takes no such field; did you mean "colorId"?`+takes, ce.Lines[0].Error())
	assert.Equal(t, `line 2: number-of-results: image/text-to-image takes no such field; did you mean "numberOfResults"?`+takes, ce.Lines[1].Error())
	assert.Equal(t, `line 3: voice: audio/text-to-speech takes no such field; did you mean "voiceId"? (it takes: prompt, voiceId)`, ce.Lines[2].Error())
	assert.Equal(t, "line 4: flavour: image/text-to-image takes no such field"+takes, ce.Lines[3].Error(), "no name is near")
	assert.Empty(t, f.srv.Requests())
}

// A run whose context has ended says so, not that its ledger failed, and
// counts every job it did not start as not started.
func TestACancelledRunIsNoLedgerFailure(t *testing.T) {
	for range 20 {
		f := newFixture(t)
		f.write(t, imageJobs(10)...)
		r, err := batch.New(f.c, f.ledger, f.store, batch.Options{Base: filepath.Dir(f.jobs)})
		require.NoError(t, err)
		c, err := r.Check(context.Background(), batch.File(f.jobs))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		sum, err := r.Run(ctx, c)
		require.ErrorIs(t, err, context.Canceled)
		var le *batch.LedgerError
		require.False(t, errors.As(err, &le), "%v", err)
		assert.Equal(t, 10, sum.NotStarted, "%+v", sum)
		assert.Zero(t, f.srv.Count("image/text-to-image"))
	}
}

// A download is bounded: one larger than the bound leaves the job answered,
// its partial file nowhere, and a rerun that allows it downloads the answer
// without paying again.
func TestADownloadOverItsBoundIsNotKeptAndARerunFetchesItFree(t *testing.T) {
	const op = "audio/text-to-music"
	f := newFixture(t)
	f.write(t, `{"op":"audio/text-to-music","prompt":"tune"}`)
	sum, err := f.run(t, batch.Options{MaxDownloadBytes: 64})
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Waiting, "answered, its file not kept: %+v", sum)
	assert.Empty(t, f.store.Keys(), "no partial file")

	sum, err = f.run(t, batch.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Done, "%+v", sum)
	assert.Equal(t, 1, f.srv.Count(op), "paid once")
}
