package batch_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

func TestTheIndexShowsEveryJobFromDiskAlone(t *testing.T) {
	f := newFixture(t)
	f.srv.Fail("image/generate-logo", creativetest.Fault{Status: 400, Message: "prompt: <refused>"})
	f.write(t,
		`{"op":"image/text-to-image","id":"fox","prompt":"a fox","numberOfResults":2}`,
		`{"op":"image/generate-logo","prompt":"bad"}`,
		`{"op":"text/writer-tool","inputs":[{"jobRole":"r","jobSkills":"s"}],"language":"en","tone":"formal","useCase":"CoverLetter"}`,
		`{"op":"audio/text-to-speech","prompt":"hi","voiceId":"female 1"}`,
	)
	_, err := f.run(t, batch.Options{IndexEvery: time.Millisecond})
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(f.out, batch.IndexFile))
	require.NoError(t, err, "kept current during the run")

	store, err := batch.NewDir(f.out)
	require.NoError(t, err)
	defer store.Close()
	require.NoError(t, batch.WriteIndex(context.Background(), store))
	page, err := os.ReadFile(filepath.Join(f.out, batch.IndexFile))
	require.NoError(t, err)
	html := string(page)

	assert.Equal(t, 4, strings.Count(html, "<figure "), "every job is on the page")
	imgs := regexp.MustCompile(`<img loading="lazy" decoding="async" src="([^"]+)"`).FindAllStringSubmatch(html, -1)
	require.Len(t, imgs, 2)
	for _, m := range imgs {
		assert.FileExists(t, filepath.Join(f.out, m[1]), "every thumbnail names a file beside the page")
	}
	assert.Regexp(t, `<audio controls preload="none" src="000004-text-to-speech-[0-9a-f]{6}\.mp3">`, html)
	assert.Contains(t, html, `data-state="failed" data-op="image/generate-logo"`)
	assert.Contains(t, html, "prompt: &lt;refused&gt;", "the service's words are escaped")
	assert.Contains(t, html, "<pre>")
	assert.Contains(t, html, `<p id="count">4 jobs, 3 done, 1 failed</p>`)
	assert.Contains(t, html, `<select id="state">`)
	assert.Contains(t, html, `<option>video/remove-background</option>`)
	for _, external := range []string{`src="http`, `href="http`, "<link", "@import", "url("} {
		assert.NotContains(t, html, external, "self-contained")
	}
	noTemp, _ := filepath.Glob(filepath.Join(f.out, ".tmp", "*", "*"))
	for _, p := range noTemp {
		assert.Equal(t, "lock", filepath.Base(p), "no temporary page left")
	}
}
