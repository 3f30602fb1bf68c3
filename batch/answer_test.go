package batch_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
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
type answerFiles struct {
	*httptest.Server
	mu    sync.Mutex
	body  map[string]string
	ctype string
	hits  atomic.Int64
}

func newAnswerFiles(t *testing.T) *answerFiles {
	fs := &answerFiles{body: map[string]string{}}
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

func (fs *answerFiles) set(path, body string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.body[path] = body
}

// answerRaw makes the fake answer op with data, as raw JSON.
func (f *fixture) answerRaw(op string, data func() string) {
	f.srv.Handle(op, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"success":true,"data":`+data()+`}`)
	})
}

// outputs lists the files a run kept, without the page.
func (f *fixture) keptOutputs(t *testing.T) []string {
	t.Helper()
	var keys []string
	for _, k := range f.store.Keys() {
		if !strings.HasSuffix(k, ".html") {
			keys = append(keys, k)
		}
	}
	return keys
}

// ledgerSays reports whether the ledger's last attempt of a job holds s.
func (f *fixture) ledgerSays(t *testing.T, s string) bool {
	t.Helper()
	for e, err := range f.ledger.Jobs(context.Background(), false) {
		require.NoError(t, err)
		b, err := json.Marshal(e)
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
	const music, zoom = "audio/text-to-music", "video/infinite-zoom"
	wav := string(media.Music("tune", 0.2))
	mp4 := answerMP4()
	for _, tc := range []struct {
		name, op, link, file, says, whole, ext string
		kept                                   bool // refused by its type: kept as rejected
	}{
		{"a cut wav", music, "/x.wav", wav[:len(wav)/2], "is cut after", wav, ".wav", false},
		{"html at a .html link", music, "/x.html", "<html><script>alert(1)</script></html>", "not audio", wav, ".wav", true},
		{"svg at a .svg link", music, "/x.svg", `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`, "not audio", wav, ".wav", true},
		{"the error envelope", music, "/x.wav", `{"success":false,"message":"the link expired"}`, "the link expired", wav, ".wav", false},
		{"a png for audio", music, "/x.wav", answerPNG(t), "not audio", wav, ".wav", true},
		{"a cut mp4", zoom, "/x.mp4", mp4[:len(mp4)-100], "is cut after", mp4, ".mp4", false},
		{"an mp4 without its moov", zoom, "/x.mp4", mp4[:len(mp4)-108], "no moov box", mp4, ".mp4", false},
		{"html for a video", zoom, "/x.html", "<!DOCTYPE html><p>gone</p>", "not a video", mp4, ".mp4", true},
		{"a wav for a video", zoom, "/x.mp4", wav, "not a video", mp4, ".mp4", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := tc.op
			f := newFixture(t)
			fs := newAnswerFiles(t)
			f.answerRaw(op, func() string { return `"` + fs.URL + tc.link + `"` })
			fs.set(tc.link, tc.file)
			f.write(t, `{"op":"`+op+`","prompt":"tune"}`)
			sum, err := f.run(t, batch.Options{})
			require.NoError(t, err)
			assert.Equal(t, 0, sum.Done, "%+v", sum)
			assert.Equal(t, 1, sum.Waiting, "%+v", sum)
			outs, rejected := splitRejected(f.keptOutputs(t))
			assert.Empty(t, outs, "no output is done")
			assert.True(t, f.ledgerSays(t, tc.says), "the record says why")
			if tc.kept {
				// Paid bytes are never dropped: kept under a name that says so.
				require.Len(t, rejected, 1)
				assert.Equal(t, tc.file, f.read(t, rejected[0]))
				assert.True(t, f.ledgerSays(t, "kept as "+rejected[0]), "the record names the file")
			} else {
				assert.Empty(t, rejected, "a cut download is fetched again, not kept")
			}

			// The file is whole now: a rerun fetches it, without paying.
			fs.set(tc.link, tc.whole)
			sum, err = f.run(t, batch.Options{})
			require.NoError(t, err)
			assert.Equal(t, 1, sum.Done, "%+v", sum)
			assert.Equal(t, 1, f.srv.Count(op), "paid once")
			assert.EqualValues(t, 2, fs.hits.Load(), "fetched twice")
			outs, _ = splitRejected(f.keptOutputs(t))
			require.Len(t, outs, 1)
			assert.True(t, strings.HasSuffix(outs[0], tc.ext), "named by its bytes: %s", outs[0])
		})
	}
}

// splitRejected tells the outputs from the answers kept as rejected.
func splitRejected(keys []string) (outs, rejected []string) {
	for _, k := range keys {
		if strings.Contains(k, batch.Rejected) {
			rejected = append(rejected, k)
		} else {
			outs = append(outs, k)
		}
	}
	return outs, rejected
}

// read reads an object of the store.
func (f *fixture) read(t *testing.T, key string) string {
	t.Helper()
	b, err := f.store.Get(context.Background(), key)
	require.NoError(t, err)
	return string(b)
}

// answerMP4 is an MP4 of an ftyp, an mdat and, last, its moov (108 bytes).
func answerMP4() string {
	box := func(typ string, body []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
		return append(append(b, typ...), body...)
	}
	f := box("ftyp", []byte("isom\x00\x00\x02\x00isomiso2mp41"))
	f = append(f, box("mdat", bytes.Repeat([]byte{0xab}, 3000))...)
	return string(append(f, box("moov", box("mvhd", make([]byte, 92)))...))
}

func answerPNG(t *testing.T) string {
	b, err := os.ReadFile(pngPath(t))
	require.NoError(t, err)
	return string(b)
}

// An image that is not one, or is cut, is never done; it was paid for, so
// it is kept whole as <stem>.rejected.<ext> and the record names it; a
// rerun checks it again without paying, and it stays kept while the check
// refuses it.
func TestAnImageThatIsNoWholeImageIsNotDoneAndIsKept(t *testing.T) {
	png := answerPNG(t)
	jpg := answerJPEG(t)
	for _, tc := range []struct{ name, file, says string }{
		{"html", "<!DOCTYPE html><script>alert(1)</script>", "not an image"},
		{"svg", `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`, "not an image"},
		{"the error envelope", `{"success":false,"message":"no credits"}`, "not an image"},
		{"a cut png", png[:len(png)-20], "its IEND chunk"},
		{"a cut jpeg", jpg[:len(jpg)/2], "its end-of-image marker"},
		{"a wav", string(media.Music("x", 0.05)), "not an image"},
		{"three bytes", "abc", "not an image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			b64 := base64.StdEncoding.EncodeToString([]byte(tc.file))
			f.answerRaw("image/text-to-image", func() string { return `[{"base64":"` + b64 + `"}]` })
			f.write(t, imageJobs(1)...)
			sum, err := f.run(t, batch.Options{})
			require.NoError(t, err)
			assert.Equal(t, 0, sum.Done, "%+v", sum)
			assert.Equal(t, 1, sum.Waiting, "kept, not lost: %+v", sum)
			outs, rejected := splitRejected(f.keptOutputs(t))
			assert.Empty(t, outs)
			require.Len(t, rejected, 1)
			assert.Equal(t, tc.file, f.read(t, rejected[0]), "every paid byte is kept")
			assert.True(t, f.ledgerSays(t, tc.says))
			assert.True(t, f.ledgerSays(t, "kept as "+rejected[0]))

			sum, err = f.run(t, batch.Options{})
			require.NoError(t, err)
			assert.Equal(t, 1, f.srv.Count("image/text-to-image"), "the rerun paid nothing")
			assert.Equal(t, 1, sum.Waiting, "checked again, still refused: %+v", sum)
			_, again := splitRejected(f.keptOutputs(t))
			assert.Equal(t, rejected, again, "still kept")
		})
	}
}

// A rerun checks a kept answer again from the Store, without paying: one
// the check now accepts (here, its bytes made whole, as a check that
// learned its format would take them) is put under its own name, and the
// job is done. An image of the same answer that was whole stays done.
func TestARerunAcceptsAKeptAnswerTheCheckNowTakes(t *testing.T) {
	png := answerPNG(t)
	f := newFixture(t)
	good := base64.StdEncoding.EncodeToString([]byte(png))
	bad := base64.StdEncoding.EncodeToString([]byte("<svg/>"))
	f.answerRaw("image/text-to-image", func() string { return `[{"base64":"` + good + `"},{"base64":"` + bad + `"}]` })
	f.write(t, `{"op":"image/text-to-image","prompt":"fox","numberOfResults":2}`)
	sum, err := f.run(t, batch.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Waiting, "%+v", sum)
	outs, rejected := splitRejected(f.keptOutputs(t))
	require.Len(t, outs, 1)
	require.Len(t, rejected, 1)
	assert.True(t, strings.HasSuffix(rejected[0], ".rejected-2.bin"), rejected[0])

	w, err := f.store.NewWriter(context.Background(), rejected[0], nil)
	require.NoError(t, err)
	_, _ = io.WriteString(w, png)
	require.NoError(t, w.Close())
	sum, err = f.run(t, batch.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Done, "%+v", sum)
	assert.Equal(t, 1, f.srv.Count("image/text-to-image"), "the rerun paid nothing")
	outs, rejected = splitRejected(f.keptOutputs(t))
	assert.Empty(t, rejected, "accepted: under its own name now")
	require.Len(t, outs, 2)
	assert.True(t, strings.HasSuffix(outs[1], "-2.png"), outs[1])
	assert.Equal(t, png, f.read(t, outs[1]))
}

func answerJPEG(t *testing.T) string {
	var b bytes.Buffer
	require.NoError(t, jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, 64, 64)), nil))
	return b.String()
}

// An answer listing more links than the bound downloads none of them.
func TestAnAnswerWithTooManyLinksDownloadsNone(t *testing.T) {
	f := newFixture(t)
	fs := newAnswerFiles(t)
	var links []string
	for i := range 5000 {
		links = append(links, fmt.Sprintf(`"%s/stem-%d.wav"`, fs.URL, i))
	}
	f.answerRaw("audio/split-audio", func() string { return "[" + strings.Join(links, ",") + "]" })
	song := filepath.Join(filepath.Dir(f.jobs), "song.wav")
	require.NoError(t, os.WriteFile(song, media.Music("song", 0.2), 0o644))
	f.write(t, `{"op":"audio/split-audio","audio":"song.wav"}`)
	sum, err := f.run(t, batch.Options{})
	require.NoError(t, err)
	assert.Equal(t, 0, sum.Done, "%+v", sum)
	assert.Zero(t, fs.hits.Load(), "no link is fetched")
	assert.True(t, f.ledgerSays(t, "more than the 16 links"))
}
