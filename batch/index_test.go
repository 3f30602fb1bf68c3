package batch_test

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

// card is what the page embeds of a job (see package page).
type card struct {
	Job    string      `json:"j"`
	ID     string      `json:"i"`
	Line   int         `json:"l"`
	Op     string      `json:"o"`
	State  string      `json:"s"`
	Fields [][2]string `json:"f"`
	Files  []struct {
		Href string `json:"h"`
		Kind string `json:"k"`
	} `json:"m"`
	Text  string `json:"t"`
	Error string `json:"e"`
	RID   string `json:"r"`
}

// cards reads the jobs a page embeds.
func cards(t *testing.T, html string) []card {
	t.Helper()
	_, data, ok := strings.Cut(html, `<script type="application/json" id="jobs">`)
	require.True(t, ok)
	data, _, ok = strings.Cut(data, "</script>")
	require.True(t, ok)
	var out []card
	require.NoError(t, json.Unmarshal([]byte(data), &out))
	return out
}

// indexWatch is a Store that counts the writes of the index.
type indexWatch struct {
	batch.Store
	writes atomic.Int32
}

func (s *indexWatch) NewWriter(ctx context.Context, key string, meta map[string]string) (io.WriteCloser, error) {
	if key == batch.IndexFile {
		s.writes.Add(1)
	}
	return s.Store.NewWriter(ctx, key, meta)
}

// While a run goes, the index is written again every IndexEvery when jobs
// ended since: four jobs of 20 s each, one at a time, every 7 s of the
// bubble's clock (so that no tick falls at the moment a job ends).
func TestTheIndexIsKeptCurrentWhileARunGoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, creativetest.WithInMemoryNetwork(), creativetest.WithLatency(20*time.Second))
		f.write(t, imageJobs(4)...)
		store := &indexWatch{Store: f.store}
		r, err := batch.New(f.c, f.ledger, store, batch.Options{Concurrency: 1, IndexEvery: 7 * time.Second, Base: filepath.Dir(f.jobs)})
		require.NoError(t, err)
		start := time.Now()
		sum, err := checkAndRun(r, batch.File(f.jobs))
		require.NoError(t, err)
		assert.Equal(t, 4, sum.Done)
		assert.Equal(t, 80*time.Second, time.Since(start))
		// At 7 s (no job ended yet), then after each of the first three
		// ends (at 20, 40 and 60 s: written at 21, 42 and 63 s); the run
		// ends at 80 s, before the tick at 84 s: WriteIndex is the
		// caller's then.
		assert.Equal(t, int32(4), store.writes.Load())
	})
}

// slowExists is a Store that takes 10 s to say whether a file is there.
type slowExists struct{ indexWatch }

func (s *slowExists) Exists(ctx context.Context, key string) (bool, error) {
	time.Sleep(10 * time.Second)
	return s.indexWatch.Exists(ctx, key)
}

// A run that claims and ends no job (a rerun of done jobs, 20 s of
// checking their files) leaves the page alone while it goes.
func TestARunThatChangesNothingLeavesTheIndexAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, creativetest.WithInMemoryNetwork())
		f.write(t, imageJobs(2)...)
		_, err := f.run(t, batch.Options{Concurrency: 1})
		require.NoError(t, err)
		store := &slowExists{indexWatch{Store: f.store}}
		r, err := batch.New(f.c, f.ledger, store, batch.Options{Concurrency: 1, IndexEvery: time.Second, Base: filepath.Dir(f.jobs)})
		require.NoError(t, err)
		sum, err := checkAndRun(r, batch.File(f.jobs))
		require.NoError(t, err)
		assert.Equal(t, 2, sum.DoneBefore)
		assert.Zero(t, store.writes.Load())
	})
}

// slowIndex is a Store whose index takes 10 s to write, as a page of a
// ledger of a million jobs may.
type slowIndex struct{ indexWatch }

func (s *slowIndex) NewWriter(ctx context.Context, key string, meta map[string]string) (io.WriteCloser, error) {
	if key == batch.IndexFile {
		time.Sleep(10 * time.Second)
	}
	return s.indexWatch.NewWriter(ctx, key, meta)
}

// A page that takes long to write waits ten times as long before the next:
// eight jobs of 20 s, one at a time, IndexEvery 7 s; written at 7 s (until
// 17 s), then not before 117 s: at 119 s (until 129 s), and not again
// before the run ends at 160 s.
func TestASlowIndexIsWrittenLessOften(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, creativetest.WithInMemoryNetwork(), creativetest.WithLatency(20*time.Second))
		f.write(t, imageJobs(8)...)
		store := &slowIndex{indexWatch{Store: f.store}}
		r, err := batch.New(f.c, f.ledger, store, batch.Options{Concurrency: 1, IndexEvery: 7 * time.Second, Base: filepath.Dir(f.jobs)})
		require.NoError(t, err)
		sum, err := checkAndRun(r, batch.File(f.jobs))
		require.NoError(t, err)
		assert.Equal(t, 8, sum.Done)
		assert.Equal(t, int32(2), store.writes.Load())
	})
}

func TestTheIndexShowsEveryJobOfTheLedger(t *testing.T) {
	f := newFixture(t)
	f.srv.Fail("image/generate-logo", creativetest.Fault{Status: 400, Message: "prompt: <refused>"})
	f.write(t,
		`{"op":"image/text-to-image","id":"fox","prompt":"a fox","numberOfResults":2}`,
		`{"op":"image/generate-logo","prompt":"bad"}`,
		`{"op":"text/writer-tool","inputs":[{"jobRole":"r","jobSkills":"s"}],"language":"en","tone":"formal","useCase":"CoverLetter"}`,
		`{"op":"audio/text-to-speech","prompt":"hi","voiceId":"female 1"}`,
	)
	_, err := f.run(t, batch.Options{})
	require.NoError(t, err)
	require.NoError(t, batch.WriteIndex(context.Background(), f.ledger, f.store))
	page := f.store.Bytes(batch.IndexFile)
	byLine := map[int]card{}
	for _, c := range cards(t, string(page)) {
		byLine[c.Line] = c
	}
	require.Len(t, byLine, 4, "every job is on the page")
	assert.Equal(t, "fox", byLine[1].ID)
	assert.Equal(t, "done", byLine[1].State)
	require.Len(t, byLine[1].Files, 2)
	for _, file := range byLine[1].Files {
		assert.Equal(t, "image", file.Kind)
		ok, err := f.store.Exists(context.Background(), strings.TrimPrefix(file.Href, "./"))
		require.NoError(t, err)
		assert.True(t, ok, "every thumbnail names a file beside the page: %s", file.Href)
	}
	assert.Contains(t, byLine[1].Fields, [2]string{"prompt", "a fox"})
	assert.Equal(t, "failed", byLine[2].State)
	assert.Contains(t, byLine[2].Error, "prompt: <refused>")
	assert.NotEmpty(t, byLine[2].RID)
	assert.NotEmpty(t, byLine[3].Text)
	require.Len(t, byLine[4].Files, 1)
	assert.Equal(t, "audio", byLine[4].Files[0].Kind)
	assert.NotContains(t, string(page), "prompt: <refused>", "the service's words are never markup")
}
