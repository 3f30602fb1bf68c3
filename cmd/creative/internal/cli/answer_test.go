package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/internal/media"
)

// A single operation keeps an answer only when it is what the operation
// promises: a download of another kind, the service's error envelope, a
// cut file, is refused and no file is left; the name comes from the bytes,
// never from the link.
func TestASingleOperationKeepsALyingAnswerAsRejectedWithItsLink(t *testing.T) {
	wav := string(media.Music("tune", 0.2))
	for _, tc := range []struct {
		name, link, ctype, file string
		want                    string // the file saved, "" for none
		says                    string // in stderr when none
		rejected                string // the answer kept as refused, "" for none
	}{
		{"wav at a .svg link", "/f/x.svg", "image/svg+xml", wav, "text-to-music.wav", "", ""},
		{"wav at a .html link", "/f/x.html", "text/html", wav, "text-to-music.wav", "", ""},
		{"html at a .html link", "/f/x.html", "text/html", "<html><script>alert(1)</script></html>", "", "not audio", "text-to-music.rejected.bin"},
		{"svg at a .svg link", "/f/x.svg", "image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg"/>`, "", "not audio", "text-to-music.rejected.bin"},
		{"html at a .wav link", "/f/x.wav", "audio/wav", "<!DOCTYPE html><p>maintenance</p>", "", "not audio", "text-to-music.rejected.bin"},
		{"the error envelope as the file", "/f/x.wav", "application/json", `{"success":false,"message":"the file expired"}`, "", "the file expired", ""},
		{"an image for audio", "/f/x.wav", "image/png", "\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR", "", "not audio", "text-to-music.rejected.png"},
		{"a cut wav", "/f/x.wav", "audio/wav", wav[:len(wav)/2], "", "is cut after", "text-to-music.rejected.wav"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var base string
			rec := newRecorder(t, http.StatusOK, func(path string) (string, string) {
				if path == tc.link {
					return tc.ctype, tc.file
				}
				return "application/json", `{"success":true,"data":"` + base + tc.link + `"}`
			})
			base = rec.URL
			out := t.TempDir()
			code, stdout, stderr := runCLI(t, map[string]string{"CREATIVE_BASE_URL": rec.URL, "CREATIVE_ACCESS_KEY": cliKey},
				"audio", "text-to-music", "--prompt", "tune", "--out", out)
			names := answerDirNames(t, out)
			if tc.want != "" {
				require.Equal(t, 0, code, stderr)
				assert.Equal(t, filepath.Join(out, tc.want)+"\n", stdout)
				assert.Equal(t, []string{tc.want}, names, "the link file is gone once the file is saved")
				return
			}
			assert.Equal(t, exitKept, code, stderr)
			assert.Contains(t, stderr, tc.says)
			assert.Contains(t, stderr, base+tc.link, "the paid link is printed")
			assert.Contains(t, stderr, "creative fetch "+filepath.Join(out, "text-to-music.link.json"))
			want := []string{"text-to-music.link.json"}
			if tc.rejected != "" {
				want = append(want, tc.rejected)
				assert.Equal(t, tc.file, readFile(t, filepath.Join(out, tc.rejected)), "every paid byte is kept")
				assert.Contains(t, stderr, "kept as "+filepath.Join(out, tc.rejected))
			}
			assert.Equal(t, want, names)
			var lf linkRecord
			require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, "text-to-music.link.json"))), &lf))
			assert.Equal(t, []string{base + tc.link}, lf.Links)
			assert.Equal(t, "audio/text-to-music", lf.Op)
			assert.Contains(t, lf.Why, tc.says)
		})
	}
}

// A speech stream whose bytes show no audio is refused, whatever type it
// declares, and kept as rejected: it was paid for.
func TestSpeechThatIsNoAudioIsKeptAsRejected(t *testing.T) {
	for _, tc := range []struct{ body, name string }{{"??", "text-to-speech.rejected.bin"}, {"RIFF\x40\x00\x00\x00WAVEdata", "text-to-speech.rejected.wav"}} {
		rec := newRecorder(t, 200, func(string) (string, string) { return "audio/mpeg", tc.body })
		out := t.TempDir()
		code, _, stderr := runCLI(t, map[string]string{"CREATIVE_BASE_URL": rec.URL, "CREATIVE_ACCESS_KEY": cliKey},
			"audio", "text-to-speech", "--prompt", "hi", "--voice-id", "female-1", "--out", out)
		assert.Equal(t, exitKept, code, "%q", tc.body)
		assert.Contains(t, stderr, "is not what audio/text-to-speech promises")
		assert.Contains(t, stderr, "kept as "+filepath.Join(out, tc.name))
		assert.Equal(t, []string{tc.name}, answerDirNames(t, out))
		assert.Equal(t, tc.body, readFile(t, filepath.Join(out, tc.name)))
	}
}

func answerDirNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// An answer listing more links than --max-links allows downloads none;
// the flag raises the bound.
func TestMaxLinksBoundsTheLinksOfAnAnswer(t *testing.T) {
	wav := string(media.Music("stem", 0.1))
	const stems = 17
	var base string
	rec := newRecorder(t, http.StatusOK, func(path string) (string, string) {
		if strings.HasPrefix(path, "/f/") {
			return "audio/wav", wav
		}
		var links []string
		for i := range stems {
			links = append(links, fmt.Sprintf(`"%s/f/stem-%d.wav"`, base, i))
		}
		return "application/json", `{"success":true,"data":[` + strings.Join(links, ",") + `]}`
	})
	base = rec.URL
	song := filepath.Join(t.TempDir(), "song.wav")
	require.NoError(t, os.WriteFile(song, []byte(wav), 0o644))
	env := map[string]string{"CREATIVE_BASE_URL": rec.URL, "CREATIVE_ACCESS_KEY": cliKey}

	out := t.TempDir()
	code, _, stderr := runCLI(t, env, "audio", "split-audio", "--audio", song, "--out", out)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "more than the 16 links the client accepts")
	assert.Empty(t, answerDirNames(t, out))
	assert.Len(t, rec.seen, 1, "no link is fetched")

	out = t.TempDir()
	code, _, stderr = runCLI(t, env, "--max-links", "17", "audio", "split-audio", "--audio", song, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Len(t, answerDirNames(t, out), stems)
}

// --max-download-bytes bounds each file a batch downloads: past it the job
// waits, its file not kept, and a rerun that allows it fetches it without
// paying again.
func TestMaxDownloadBytesBoundsABatchsFiles(t *testing.T) {
	srv := creativetest.NewServer()
	defer srv.Close()
	env := map[string]string{"CREATIVE_BASE_URL": srv.URL, "CREATIVE_ACCESS_KEY": srv.AccessKey}
	jobs := filepath.Join(t.TempDir(), "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(`{"op":"audio/text-to-music","prompt":"tune","duration":1}`+"\n"), 0o644))
	out := t.TempDir()
	_, _, stderr := runCLI(t, env, "batch", jobs, "--out", out, "--max-download-bytes", "1000")
	recs := readResults(t, out)
	require.Len(t, recs, 1, stderr)
	assert.NotEqual(t, batch.Done, recs[0].State, stderr)
	assert.Contains(t, recs[0].Error, "1000 bytes")

	code, _, stderr := runCLI(t, env, "batch", jobs, "--out", out)
	require.Equal(t, 0, code, stderr)
	recs = readResults(t, out)
	assert.Equal(t, batch.Done, recs[len(recs)-1].State)
	assert.Equal(t, 1, srv.Count("audio/text-to-music"), "paid once")
}

// --max-download-bytes bounds a single command's download as it does a
// batch's: past it nothing of the file is kept but its paid link, in the
// link file, with exit status 3; creative fetch with the default bound
// then fetches it without paying again. A bound of 0 is refused before
// anything is sent.
func TestMaxDownloadBytesBoundsASingleCommandsFile(t *testing.T) {
	srv := creativetest.NewServer()
	defer srv.Close()
	env := map[string]string{"CREATIVE_BASE_URL": srv.URL, "CREATIVE_ACCESS_KEY": srv.AccessKey}
	out := t.TempDir()
	code, _, stderr := runCLI(t, env, "--max-download-bytes", "1000", "audio", "text-to-music", "--prompt", "tune", "--duration", "1", "--out", out)
	require.Equal(t, exitKept, code, stderr)
	assert.Contains(t, stderr, "1000 bytes")
	link := filepath.Join(out, "text-to-music.link.json")
	assert.Equal(t, []string{"text-to-music.link.json"}, answerDirNames(t, out), "the paid link is kept, nothing of the file: %s", stderr)

	code, _, stderr = runCLI(t, env, "fetch", link)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, []string{"text-to-music.wav"}, answerDirNames(t, out))
	assert.Equal(t, 1, srv.Count("audio/text-to-music"), "paid once")

	code, _, stderr = runCLI(t, env, "--max-download-bytes", "0", "audio", "text-to-music", "--prompt", "tune", "--out", t.TempDir())
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "--max-download-bytes must be above 0")
	assert.Equal(t, 1, srv.Count("audio/text-to-music"), "nothing sent")
}
