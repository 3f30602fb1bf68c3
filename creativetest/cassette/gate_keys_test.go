package cassette_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest/cassette"
)

// A link that holds a key the cassette keeps out, though not the key of
// the request that got it (one of Options.Keys, or CREATIVE_ACCESS_KEY
// while a test's Client sends another), is not fetched: the file host
// gets no request, in any form the key takes in the link, and the link
// stays as it came, its key redacted.
func TestRecordingFetchesNoLinkThatHoldsAKeyOfTheCassette(t *testing.T) {
	t.Setenv(cassette.EnvMode, "")
	const sent, kept, env = "ck_live_sent_with_0123456", "ck_live_other_account_789", "ck_live_from_the_env_4321"
	for name, tc := range map[string]struct{ key, query string }{
		"an Options key in the query":         {kept, "token=" + kept},
		"an Options key escaped":              {kept, "token=" + url.QueryEscape(strings.ToUpper(kept))},
		"an Options key in base64":            {kept, "auth=" + base64.URLEncoding.EncodeToString([]byte("u:"+kept))},
		"CREATIVE_ACCESS_KEY in the query":    {env, "k=" + env},
		"CREATIVE_ACCESS_KEY in the fragment": {env, "x=1#" + env},
		"no key: fetched and recorded (one)":  {"", "v=1"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(creative.EnvAccessKey, env)
			var fileHits atomic.Int64
			var svc *httptest.Server
			svc = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if r.URL.Path == "/files/a.wav" {
					fileHits.Add(1)
					_, _ = w.Write(wav())
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"success":true,"message":"ok","data":%q}`, svc.URL+"/files/a.wav?"+tc.query)
			}))
			defer svc.Close()
			dir := t.TempDir()
			rec, err := cassette.Open(dir, cassette.Record, &cassette.Options{IgnoreEnv: true, Keys: []string{kept}})
			if err != nil {
				t.Fatal(err)
			}
			cl, err := creative.New(creative.WithBaseURL(svc.URL), creative.WithAccessKey(sent), creative.WithInsecureHTTP(), creative.WithMaxRetries(0), rec.Option())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cl.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "jazz", Duration: 2}); err != nil {
				t.Fatal(err)
			}
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			want := int64(0)
			if tc.key == "" {
				want = 1
			}
			if fileHits.Load() != want {
				t.Errorf("the file host got %d requests, want %d", fileHits.Load(), want)
			}
			err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || tc.key == "" {
					return err
				}
				b, err := os.ReadFile(p)
				if strings.Contains(strings.ToLower(string(b)), strings.ToLower(tc.key)) {
					t.Errorf("%s holds the key", p)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
