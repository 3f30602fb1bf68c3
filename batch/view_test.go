package batch_test

import (
	"context"
	"io"
	"iter"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
)

// askCounter is a Store that counts what it is asked, by method.
type askCounter struct {
	batch.Store
	mu    sync.Mutex
	asked map[string]int
}

// Remote says that the store's reads are round trips, as a bucket's are.
func (s *askCounter) Remote() bool { return true }

func (s *askCounter) ask(what string) {
	s.mu.Lock()
	s.asked[what]++
	s.mu.Unlock()
}

func (s *askCounter) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.asked
	s.asked = map[string]int{}
	return a
}

func (s *askCounter) Get(ctx context.Context, key string) ([]byte, error) {
	s.ask("Get")
	return s.Store.Get(ctx, key)
}

func (s *askCounter) Exists(ctx context.Context, key string) (bool, error) {
	s.ask("Exists")
	return s.Store.Exists(ctx, key)
}

func (s *askCounter) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	s.ask("List")
	return s.Store.List(ctx, prefix)
}

// A rerun of finished jobs learns where each stands from listings of the
// Store (the outputs, then the ledger): it reads no record and asks after
// no file, and batch status lists the ledger once.
func TestARerunReadsTheLedgerFromListings(t *testing.T) {
	f := newFixture(t)
	f.write(t, imageJobs(50)...)
	store := &askCounter{Store: f.store, asked: map[string]int{}}
	r, err := batch.New(f.c, store, batch.Options{Concurrency: 4, Base: filepath.Dir(f.jobs)})
	require.NoError(t, err)
	sum, err := checkAndRun(r, batch.File(f.jobs))
	require.NoError(t, err)
	require.Equal(t, 50, sum.Done)
	assert.Equal(t, map[string]int{"List": 2}, store.take(), "a first run lists and reads nothing")

	r, err = batch.New(f.c, store, batch.Options{Concurrency: 4, Base: filepath.Dir(f.jobs)})
	require.NoError(t, err)
	sum, err = checkAndRun(r, batch.File(f.jobs))
	require.NoError(t, err)
	assert.Equal(t, 50, sum.DoneBefore, "%+v", sum)
	assert.Equal(t, map[string]int{"List": 2}, store.take())

	st, err := batch.ReadStatus(context.Background(), store, nil)
	require.NoError(t, err)
	assert.Equal(t, 50, st.States[batch.Done])
	assert.Equal(t, map[string]int{"List": 1}, store.take())
}

var newEnd = regexp.MustCompile(`^(ledger/[0-9a-f]{3}/[0-9a-f]{32}\.[0-9]{4})\..*\.end\.json$`)

// The ledger of an earlier version, whose keys of ends say nothing of how
// the attempt ended, reads as it did: every job done is done, and a rerun
// sends nothing.
func TestALedgerOfAnEarlierVersionIsRead(t *testing.T) {
	f := newFixture(t)
	f.write(t, append(imageJobs(6), `{"op":"audio/text-to-music","prompt":"a"}`)...)
	sum, err := f.run(t, batch.Options{})
	require.NoError(t, err)
	require.Equal(t, 7, sum.Done)
	ctx := context.Background()
	moved := 0
	for key, err := range f.store.List(ctx, "ledger/") {
		require.NoError(t, err)
		if m := newEnd.FindStringSubmatch(key); m != nil {
			b, err := f.store.Get(ctx, key)
			require.NoError(t, err)
			require.NoError(t, f.store.Create(ctx, m[1]+".end.json", b))
			require.NoError(t, f.store.Delete(ctx, key))
			moved++
		}
	}
	require.Equal(t, 7, moved)
	f.srv.Reset()
	sum, err = f.run(t, batch.Options{})
	require.NoError(t, err)
	assert.Equal(t, 7, sum.DoneBefore, "%+v", sum)
	assert.Empty(t, f.srv.Requests())
	st, err := batch.ReadStatus(ctx, f.store, nil)
	require.NoError(t, err)
	assert.Equal(t, map[batch.State]int{batch.Done: 7}, st.States)
}

// Each end's key says how the attempt ended; a done job's files are in it.
func TestTheKeyOfAnEndSaysHowTheAttemptEnded(t *testing.T) {
	f := newFixture(t)
	f.write(t, `{"op":"image/text-to-image","prompt":"p","numberOfResults":2}`)
	_, err := f.run(t, batch.Options{})
	require.NoError(t, err)
	var ends []string
	for key, err := range f.store.List(context.Background(), "ledger/") {
		require.NoError(t, err)
		if strings.HasSuffix(key, ".end.json") {
			ends = append(ends, key)
		}
	}
	require.Len(t, ends, 1)
	assert.Regexp(t, `^ledger/[0-9a-f]{3}/[0-9a-f]{32}\.0001\.done\.f[A-Za-z0-9_-]+\.end\.json$`, ends[0])
}

// pageWatch is a Store that counts the writes of index.html.
type pageWatch struct {
	batch.Store
	mu     sync.Mutex
	writes int
}

func (s *pageWatch) NewWriter(ctx context.Context, key string, meta map[string]string) (io.WriteCloser, error) {
	if key == batch.IndexFile {
		s.mu.Lock()
		s.writes++
		s.mu.Unlock()
	}
	return s.Store.NewWriter(ctx, key, meta)
}

// A large ledger is listed in its 16 parts at once; what they say is what
// one listing says: every job done, and the page written from one listing
// is current for a rerun that listed the parts.
func TestALedgerListedInPartsSaysWhatOneListingSays(t *testing.T) {
	defer batch.ListLedgerInParts()()
	f := newFixture(t)
	f.write(t, imageJobs(40)...)
	store := &askCounter{Store: f.store, asked: map[string]int{}}
	_, err := f.run(t, batch.Options{Concurrency: 4})
	require.NoError(t, err)
	pages := &remotePages{pageWatch{Store: store}}
	require.NoError(t, batch.WriteIndex(context.Background(), pages))
	require.Equal(t, 1, pages.writes)
	store.take()

	r, err := batch.New(f.c, pages, batch.Options{Concurrency: 4, Base: filepath.Dir(f.jobs)})
	require.NoError(t, err)
	sum, err := checkAndRun(r, batch.File(f.jobs))
	require.NoError(t, err)
	assert.Equal(t, 40, sum.DoneBefore, "%+v", sum)
	assert.Equal(t, map[string]int{"List": 32}, store.take(), "the outputs, and 16 parts of the ledger, part b in its 16 groups")
	require.NoError(t, r.WriteIndex(context.Background()))
	assert.Equal(t, 1, pages.writes, "the page was current")
	assert.Equal(t, 1, store.take()["Get"], "the page's mark, and nothing else")
}

// remotePages is a pageWatch whose reads are round trips.
type remotePages struct{ pageWatch }

func (*remotePages) Remote() bool { return true }

// RecordStage is the one reader of keys: a record is a key of the
// ledger's own shape, in its own folder, and nothing else.
func TestRecordStageReadsOnlyTheLedgersKeys(t *testing.T) {
	const job = "3fa9c1d2e3f405162738495a6b7c8d9e"
	for key, want := range map[string]string{
		"ledger/3fa/" + job + ".0001.json":                    "claim",
		"ledger/3fa/" + job + ".0012.answered.json":           "answered",
		"ledger/3fa/" + job + ".0001.end.json":                "end",
		"ledger/3fa/" + job + ".0001.done.fMDAwMDAx.end.json": "end",
		"ledger/3fa/" + job + ".0001.answered-lost.end.json":  "end",
		"ledger/3fb/" + job + ".0001.json":                    "",
		"ledger/runs/" + job + ".0001.json":                   "",
		"ledger/3FA/" + strings.ToUpper(job) + ".0001.json":   "",
		"ledger/3fa/" + job + ".0000.json":                    "",
		"ledger/3fa/" + job + ".001.json":                     "",
		"ledger/3fa/" + job + ".0001.other.json":              "",
		"ledger/3fa/" + job + ".0001":                         "",
		"ledger/3fa/" + job[:31] + "g.0001.json":              "",
		"3fa/" + job + ".0001.json":                           "",
		"ledger/budget/calls/00000000000000000000.json":       "",
		"ledger/budget/calls.hint.json":                       "",
		"ledger/page.json":                                    "",
		"000001-image-text-to-image-3fa9c1.png":               "",
		"x/ledger/3fa/" + job + ".0001.json":                  "",
	} {
		assert.Equal(t, want, batch.RecordStage(key), key)
	}
}
