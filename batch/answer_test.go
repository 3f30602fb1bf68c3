package batch_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/internal/media"
)

// files is a host of files whose bodies a test sets, served without a
// Content-Length (chunked), as a close-delimited or streamed answer comes:
// only the file's own format tells it is cut.
type files struct {
	*httptest.Server
	mu    sync.Mutex
	body  map[string]string
	ctype string
	hits  atomic.Int64
}

func newFiles(t *testing.T) *files {
	fs := &files{body: map[string]string{}}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.hits.Add(1)
		fs.mu.Lock()
		body, ok := fs.body[r.URL.Path]
		ctype := fs.ctype
		fs.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.(http.Flusher).Flush() // no Content-Length
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *files) set(path, body string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.body[path] = body
}

// answerWith makes the fake answer op with data, as raw JSON.
func (f *fixture) answerWith(op string, data func() string) {
	f.srv.Handle(op, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"success":true,"data":`+data()+`}`)
	})
}

// outputs lists the files a run kept, without the ledger and the page.
func (f *fixture) outputs(t *testing.T) []string {
	t.Helper()
	var keys []string
	for k, err := range f.store.List(context.Background(), "") {
		require.NoError(t, err)
		if !strings.HasPrefix(k, "ledger/") && !strings.HasSuffix(k, ".html") {
			keys = append(keys, k)
		}
	}
	return keys
}

// ledgerHolds reports whether a record of the ledger holds s.
func (f *fixture) ledgerHolds(t *testing.T, s string) bool {
	t.Helper()
	for k, err := range f.store.List(context.Background(), "ledger/") {
		require.NoError(t, err)
		b, err := f.store.Get(context.Background(), k)
		require.NoError(t, err)
		if strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}

// A download that lies is never done: another kind than the operation
// promises, the service's error envelope, a file cut before its format's
// end. The job waits, and a rerun fetches it again without paying; a link's
// name never names the file.
func TestALyingDownloadIsNotDoneAndARerunFetchesItAgain(t *testing.T) {
	const op = "audio/text-to-music"
	wav := string(media.Music("tune", 0.2))
	for _, tc := range []struct {
		name, link, file, says string
	}{
		{"a cut wav", "/x.wav", wav[:len(wav)/2], "is cut after"},
		{"html at a .html link", "/x.html", "<html><script>alert(1)</script></html>", "not audio"},
		{"svg at a .svg link", "/x.svg", `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`, "not audio"},
		{"the error envelope", "/x.wav", `{"success":false,"message":"the link expired"}`, "the link expired"},
		{"a png for audio", "/x.wav", pngFile(t), "not audio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			fs := newFiles(t)
			f.answerWith(op, func() string { return `"` + fs.URL + tc.link + `"` })
			fs.set(tc.link, tc.file)
			f.write(t, `{"op":"audio/text-to-music","prompt":"tune"}`)
			sum, err := f.run(t, batch.Options{})
			require.NoError(t, err)
			assert.Equal(t, 0, sum.Done, "%+v", sum)
			assert.Equal(t, 1, sum.Waiting, "%+v", sum)
			assert.Empty(t, f.outputs(t), "nothing is kept")
			assert.True(t, f.ledgerHolds(t, tc.says), "the record says why")

			// The file is whole now: a rerun fetches it, without paying.
			fs.set(tc.link, wav)
			sum, err = f.run(t, batch.Options{})
			require.NoError(t, err)
			assert.Equal(t, 1, sum.Done, "%+v", sum)
			assert.Equal(t, 1, f.srv.Count(op), "paid once")
			assert.EqualValues(t, 2, fs.hits.Load(), "fetched twice")
			outs := f.outputs(t)
			require.Len(t, outs, 1)
			assert.True(t, strings.HasSuffix(outs[0], ".wav"), "named by its bytes: %s", outs[0])
		})
	}
}

func pngFile(t *testing.T) string {
	b, err := os.ReadFile(pngPath(t))
	require.NoError(t, err)
	return string(b)
}

// An image that is not one (HTML in the base64) is never done.
func TestAnImageThatIsNoImageIsNotDone(t *testing.T) {
	f := newFixture(t)
	html := base64.StdEncoding.EncodeToString([]byte("<!DOCTYPE html><script>alert(1)</script>"))
	f.answerWith("image/text-to-image", func() string { return `[{"base64":"` + html + `"}]` })
	f.write(t, imageJobs(1)...)
	sum, err := f.run(t, batch.Options{})
	require.NoError(t, err)
	assert.Equal(t, 0, sum.Done, "%+v", sum)
	assert.Empty(t, f.outputs(t))
	assert.True(t, f.ledgerHolds(t, "not an image"))
}

// An answer listing more links than the bound downloads none of them.
func TestAnAnswerWithTooManyLinksDownloadsNone(t *testing.T) {
	f := newFixture(t)
	fs := newFiles(t)
	var links []string
	for i := range 5000 {
		links = append(links, fmt.Sprintf(`"%s/stem-%d.wav"`, fs.URL, i))
	}
	f.answerWith("audio/split-audio", func() string { return "[" + strings.Join(links, ",") + "]" })
	song := filepath.Join(filepath.Dir(f.jobs), "song.wav")
	require.NoError(t, os.WriteFile(song, media.Music("song", 0.2), 0o644))
	f.write(t, `{"op":"audio/split-audio","audio":"song.wav"}`)
	sum, err := f.run(t, batch.Options{})
	require.NoError(t, err)
	assert.Equal(t, 0, sum.Done, "%+v", sum)
	assert.Zero(t, fs.hits.Load(), "no link is fetched")
	assert.True(t, f.ledgerHolds(t, "more than the 16 links"))
}
