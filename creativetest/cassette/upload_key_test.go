package cassette_test

import (
	"context"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
)

// An uploaded file that holds the key, in any form the redactor knows,
// is matched by its hash alone and never kept in the cassette; the call
// still replays.
func TestAnUploadThatHoldsTheKeyIsNotKept(t *testing.T) {
	t.Setenv(creative.EnvAccessKey, "")
	ctx := context.Background()
	srv := creativetest.Start(t, creativetest.WithAccessKey(plantedKey))
	for _, form := range []string{plantedKey, url.QueryEscape(plantedKey)} {
		t.Run(form, func(t *testing.T) {
			upload := append(wav(), []byte(" "+form)...)
			dir := t.TempDir()
			rec := open(t, dir, cassette.Record, srv)
			c := srv.Client(rec.Option(), creative.WithMaxRetries(0))
			call := func(c *creative.Client) error {
				_, err := c.SplitAudio(ctx, creative.SplitAudioRequest{Audio: creative.FileFromBytes("a.wav", upload)})
				return err
			}
			if err := call(c); err != nil {
				t.Fatal(err)
			}
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			for name, body := range files(t, dir) {
				if strings.Contains(body, form) {
					t.Errorf("%s holds the upload with the key in it", name)
				}
			}
			if err := cassette.Check(dir, &cassette.CheckOptions{Keys: []string{plantedKey}}); err != nil {
				t.Errorf("Check: %v", err)
			}
			var sent atomic.Int64
			if err := call(offline(t, open(t, dir, cassette.Replay, nil), &sent)); err != nil {
				t.Errorf("the upload does not replay: %v", err)
			}
		})
	}
}
