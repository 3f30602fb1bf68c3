package cassette_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
	"github.com/creativegen/creative-go/ids"
)

// hiddenForms are forms of k the redactor knows but that are no literal
// text to look for: every byte percent-escaped, every character a JSON
// \u escape, and base64 wrapped over lines as MIME writes it.
func hiddenForms(k string) map[string]string {
	var pct, u strings.Builder
	for i := 0; i < len(k); i++ {
		fmt.Fprintf(&pct, "%%%02X", k[i])
		fmt.Fprintf(&u, `\u%04x`, k[i])
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("y", 50) + k))
	return map[string]string{"percent-escaped": pct.String(), "\\u-escaped": u.String(), "MIME base64": b64[:76] + "\r\n" + b64[76:]}
}

// A body the recording writes over a window at a time, rather than
// redacting it in memory (a text past 64 MiB, a stream of speech), loses
// the key in every form the redactor knows: escaped and wrapped over
// lines too, not only its literal forms.
func TestTheKeyIsInNoLongOrStreamedBodyInAnyForm(t *testing.T) {
	t.Setenv(cassette.EnvMode, "")
	t.Setenv(creative.EnvAccessKey, "")
	ctx := context.Background()
	hidden := hiddenForms(plantedKey)
	var all strings.Builder
	for _, f := range hidden {
		all.WriteString(" " + f + " ")
	}
	srv := creativetest.Start(t, creativetest.WithAccessKey(plantedKey))
	long := !raceDetector
	srv.Handle("text/writer-tool", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain") // text, past what is redacted in memory
		_, _ = io.WriteString(w, strings.Repeat("lorem ipsum ", 65<<20/12)+all.String()+strings.Repeat("dolor ", 100))
	})
	srv.Handle("audio/text-to-speech", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/mpeg")
		_, _ = io.WriteString(w, "ID3\x03\x00\x00\x00\x00\x00\x00"+all.String()+strings.Repeat("\xff\xfb", 100))
	})
	dir := t.TempDir()
	rec := open(t, dir, cassette.Record, srv)
	c := srv.Client(rec.Option(), creative.WithMaxRetries(0))
	if long {
		_, _ = c.CoverLetter(ctx, creative.CoverLetterRequest{JobRole: "baker", JobSkills: "bread", Language: "English", Tone: "formal"})
	}
	a, err := c.TextToSpeech(ctx, creative.TextToSpeechRequest{Prompt: "say it", VoiceID: ids.VoiceFemale1})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, a)
	a.Close()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	bodies, _ := filepath.Glob(filepath.Join(dir, "bodies", "*"))
	if want := map[bool]int{true: 2, false: 1}[long]; len(bodies) != want {
		t.Fatalf("the cassette holds %d bodies, want %d: %v", len(bodies), want, bodies)
	}
	for _, p := range bodies {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for name, f := range hidden {
			if strings.Contains(string(b), f) {
				t.Errorf("%s (%d bytes) holds the key %s", filepath.Base(p), len(b), name)
			}
		}
	}
}

// Check finds the key, in every form the redactor knows, in a text file
// (wrapped over lines, on none of them whole) and in a binary one
// (escaped), as a recording written before it knew them may hold it.
func TestCheckFindsTheKeyInEveryFormTheRedactorKnows(t *testing.T) {
	t.Setenv(creative.EnvAccessKey, "")
	for name, form := range hiddenForms(plantedKey) {
		for kind, body := range map[string]string{"text": "a line\n" + form + "\nanother\n", "binary": "\x00\x01ID3" + form + "\x00"} {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "bodies"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "bodies", "a.bin"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := cassette.Check(dir, &cassette.CheckOptions{Keys: []string{plantedKey}}); err == nil {
				t.Errorf("%s, in a %s file: Check found nothing", name, kind)
			}
		}
	}
}
