package cassette_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
)

// In record mode the files an answer links to are downloaded through the
// SDK's own Download, under every check it makes of a link the service
// gave, whatever HTTP client the cassette is given: a link to another
// origin that carries the key in its query, and a loopback "metadata"
// link (by address or by name) that Download refuses, get no request,
// counted where they would arrive; a plain link is fetched once and
// recorded; the key is in no file of the cassette.
func TestRecordingDownloadsLinksOnlyThroughTheSDKsGate(t *testing.T) {
	const key = "ck_gate_0123456789abcdef"
	t.Setenv(cassette.EnvMode, "")
	t.Setenv(creative.EnvAccessKey, "")
	var metaHits, keyedHits, plainHits atomic.Int64
	meta := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		metaHits.Add(1)
		_, _ = io.WriteString(w, `{"AccessKeyId":"instance-credentials"}`)
	}))
	t.Cleanup(meta.Close)
	_, metaPort, _ := net.SplitHostPort(meta.Listener.Addr().String())
	// files.example stands for another origin on the internet: a
	// transport of the test's answers for it, and reaches the fake and
	// the metadata server on 127.0.0.1 for the rest.
	public := func(fake *creativetest.Server) *http.Client {
		next := fake.HTTPClient().Transport
		return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.URL.Host != "files.example" {
				return next.RoundTrip(r)
			}
			if strings.Contains(r.URL.RawQuery, "k=") {
				keyedHits.Add(1)
			} else {
				plainHits.Add(1)
			}
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"audio/wav"}}, ContentLength: int64(len(wav())),
				Body: io.NopCloser(strings.NewReader(string(wav()))), Request: r}, nil
		})}
	}
	for _, tc := range []struct {
		name   string
		client func(fake *creativetest.Server) *http.Client
	}{
		{"the SDK's own transport", func(*creativetest.Server) *http.Client { return nil }},
		{"a transport of the caller's, checked by the URL", public},
	} {
		t.Run(tc.name, func(t *testing.T) {
			metaHits.Store(0)
			keyedHits.Store(0)
			plainHits.Store(0)
			srv := creativetest.Start(t, creativetest.WithAccessKey(key))
			links := []string{
				"https://files.example/stem-1.wav?k=" + url.QueryEscape(key),
				meta.URL + "/latest/meta-data/iam/security-credentials/",
				"http://localhost:" + metaPort + "/latest/meta-data/",
				"http://169.254.169.254/latest/meta-data/",
			}
			if tc.name != "the SDK's own transport" {
				links = append(links, "https://files.example/stem-2.wav")
			}
			srv.Handle("audio/split-audio", func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				quoted := make([]string, len(links))
				for i, l := range links {
					quoted[i] = fmt.Sprintf("%q", l)
				}
				fmt.Fprintf(w, `{"success":true,"message":"ok","data":[%s]}`, strings.Join(quoted, ","))
			})
			dir := t.TempDir()
			rec, err := cassette.Open(dir, cassette.Record, &cassette.Options{IgnoreEnv: true, NoPacing: true, HTTPClient: tc.client(srv)})
			if err != nil {
				t.Fatal(err)
			}
			c := srv.Client(rec.Option(), creative.WithMaxRetries(0))
			ctx := context.Background()
			// The fake's own link, at its own origin, is fetched and recorded.
			music, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "jazz", Duration: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(music), "https://cassette.invalid/files/") {
				t.Errorf("the fake's own link was not recorded: %s", music)
			}
			_, _ = c.SplitAudio(ctx, creative.SplitAudioRequest{Audio: creative.FileFromBytes("a.wav", wav())})
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			if n := metaHits.Load(); n != 0 {
				t.Errorf("the metadata server got %d requests in record mode, want 0", n)
			}
			if n := keyedHits.Load(); n != 0 {
				t.Errorf("the link holding the key got %d requests, want 0", n)
			}
			if want := int64(len(links) - 4); plainHits.Load() != want {
				t.Errorf("the plain link of another origin got %d requests, want %d", plainHits.Load(), want)
			}
			for name, body := range files(t, dir) {
				if strings.Contains(body, key) || strings.Contains(body, "instance-credentials") {
					t.Errorf("%s holds the key or the metadata's answer", name)
				}
			}
		})
	}
}
