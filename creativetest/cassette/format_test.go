package cassette_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
)

// A Cassette that has seen a request knows its key, and the options of
// the package hold the keys a caller gives: no verb of fmt and no
// handler of log/slog prints one.
func TestNoFormattedValueOfThePackageHoldsAKey(t *testing.T) {
	t.Setenv(cassette.EnvMode, "")
	t.Setenv(creative.EnvAccessKey, "")
	const given = "ck_live_given_0123456789"
	srv := creativetest.Start(t, creativetest.WithAccessKey(plantedKey))
	o := cassette.Options{Keys: []string{given}, IgnoreEnv: true, HTTPClient: srv.HTTPClient()}
	rec, err := cassette.Open(t.TempDir(), cassette.Record, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	c := srv.Client(rec.Option(), creative.WithMaxRetries(0))
	if _, err := c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "jazz", Duration: 2}); err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"*Cassette":    rec,
		"Options":      o,
		"*Options":     &o,
		"CheckOptions": cassette.CheckOptions{Keys: []string{given}, Patterns: []*regexp.Regexp{regexp.MustCompile("ck_")}},
	}
	for name, v := range values {
		var out []string
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			out = append(out, fmt.Sprintf(verb, v))
		}
		for _, h := range []func(*bytes.Buffer) slog.Handler{
			func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
			func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		} {
			var b bytes.Buffer
			slog.New(h(&b)).Info("cassette", "value", v)
			out = append(out, b.String())
		}
		for _, s := range out {
			for _, k := range []string{plantedKey, given} {
				if strings.Contains(s, k) || strings.Contains(strings.ToLower(s), fmt.Sprintf("%x", k)) {
					t.Errorf("%s prints a key: %.200s", name, s)
				}
			}
		}
	}
}
