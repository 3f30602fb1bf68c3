package cassette_test

import (
	"context"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
	"github.com/creativegen/creative-go/ids"
)

// plantedKey holds characters every escape changes.
const plantedKey = "ck_live/Ab+Cd&Ef=Gh~12345"

// echoes are the forms a server may echo the key in.
func echoes(k string) []string {
	j := strconv.Quote(k)
	h := hex.EncodeToString([]byte(k))
	return []string{k, url.QueryEscape(k), url.PathEscape(k), html.EscapeString(k), j[1 : len(j)-1],
		strings.ReplaceAll(k, "&", `\u0026`), strings.ReplaceAll(k, "/", `\/`), strings.ReplaceAll(k, "&", "&amp;"),
		h, strings.ToUpper(h), base32.StdEncoding.EncodeToString([]byte(k)), strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(k)))}
}

func TestTheKeyIsInNoCassetteWhereverItHides(t *testing.T) {
	t.Setenv(cassette.EnvMode, "")
	t.Setenv(creative.EnvAccessKey, "")
	ctx := context.Background()
	srv := creativetest.Start(t, creativetest.WithAccessKey(plantedKey))
	all := strings.Join(echoes(plantedKey), " | ")
	// The writer echoes the key in every form, in its text, a header and
	// its request id.
	srv.Handle("text/writer-tool", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo", plantedKey)
		w.Header().Set("X-Echo-Hex", strings.ToUpper(hex.EncodeToString([]byte(plantedKey))))
		w.Header().Set("X-Echo-Base32", base32.StdEncoding.EncodeToString([]byte(plantedKey)))
		w.Header().Set("X-Request-Id", "req-"+url.QueryEscape(plantedKey))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"success":true,"message":%q,"data":{"language":"English","useCase":"CoverLetter","word_count":1,"text":{"choices":[{"text":%q,"index":0,"word_count":1}]}}}`, all, all)
	})
	// Music links to a real file with the key in its query, and to one
	// that cannot be fetched, the key escaped in its path.
	srv.Handle("audio/split-audio", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		real := srv.URL + "/files/missing.wav?token=" + url.QueryEscape(plantedKey)
		gone := "https://files.invalid/" + url.PathEscape(plantedKey) + "/x.wav"
		fmt.Fprintf(w, `{"success":true,"message":"ok","data":[%q,%q]}`, real, gone)
	})
	// A refusal echoes it in its message; speech holds it in its bytes.
	srv.Handle("image/generate-qr", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"success":false,"message":"bad key %s"}`, html.EscapeString(all))
	})
	srv.Handle("audio/text-to-speech", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/mpeg")
		_, _ = io.WriteString(w, "ID3\x03\x00\x00\x00\x00\x00\x00"+plantedKey+url.QueryEscape(plantedKey)+hex.EncodeToString([]byte(plantedKey))+base32.StdEncoding.EncodeToString([]byte(plantedKey))+strings.Repeat("\xff\xfb", 100))
	})
	dir := t.TempDir()
	rec := open(t, dir, cassette.Record, srv)
	c := srv.Client(rec.Option(), creative.WithMaxRetries(0), creative.WithHeader("X-Api-Token", plantedKey))
	// The key in the request's fields too.
	_, _ = c.CoverLetter(ctx, creative.CoverLetterRequest{JobRole: "key " + plantedKey, JobSkills: url.QueryEscape(plantedKey), Language: "English", Tone: "formal"})
	_, _ = c.SplitAudio(ctx, creative.SplitAudioRequest{Audio: creative.FileFromBytes("a.wav", wav())})
	_, _ = c.GenerateQR(ctx, creative.GenerateQRRequest{URL: "https://example.com/?k=" + url.QueryEscape(plantedKey), Prompt: plantedKey})
	if a, err := c.TextToSpeech(ctx, creative.TextToSpeechRequest{Prompt: "say " + plantedKey, VoiceID: ids.VoiceFemale1}); err == nil {
		_, _ = io.Copy(io.Discard, a)
		a.Close()
	} else {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	got := files(t, dir)
	if len(got) < 5 {
		t.Fatalf("the cassette holds %d files: %v", len(got), names(got))
	}
	for name, body := range got {
		for _, form := range echoes(plantedKey) {
			if strings.Contains(body, form) {
				t.Errorf("%s holds the key as %q", name, form)
			}
		}
	}
	if err := cassette.Check(dir, &cassette.CheckOptions{Keys: []string{plantedKey}}); err != nil {
		t.Errorf("Check found the key in a redacted cassette: %v", err)
	}
	// The recording still replays: redaction broke no match, the key
	// being known to the replay too.
	t.Setenv(creative.EnvAccessKey, plantedKey)
	var sent atomicCount
	rep := open(t, dir, cassette.Replay, nil)
	rc := offline(t, rep, &sent.n)
	if _, err := rc.CoverLetter(ctx, creative.CoverLetterRequest{JobRole: "key " + plantedKey, JobSkills: url.QueryEscape(plantedKey), Language: "English", Tone: "formal"}); err != nil {
		t.Errorf("replaying the letter whose fields held the key: %v", err)
	}
}

func TestCheckFailsOnACassetteThatHoldsTheKey(t *testing.T) {
	t.Setenv(creative.EnvAccessKey, "")
	write := func(t *testing.T, name, text string) string {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "bodies"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	index := `{"op":"text/writer-tool","request":{"prompt":"%s"},"status":200}` + "\n"
	for _, tc := range []struct {
		name, file, text string
		o                *cassette.CheckOptions
	}{
		{"the key as it is", "cassette.jsonl", fmt.Sprintf(index, plantedKey), &cassette.CheckOptions{Keys: []string{plantedKey}}},
		{"the key URL-escaped", "cassette.jsonl", fmt.Sprintf(index, url.QueryEscape(plantedKey)), &cassette.CheckOptions{Keys: []string{plantedKey}}},
		{"the key JSON-escaped", "bodies/a.json", `{"message":"` + strings.ReplaceAll(plantedKey, "&", `\u0026`) + `"}`, &cassette.CheckOptions{Keys: []string{plantedKey}}},
		{"the key in a binary body", "bodies/a.mp3", "ID3\x00\x00" + plantedKey, &cassette.CheckOptions{Keys: []string{plantedKey}}},
		{"the key in hex", "cassette.jsonl", fmt.Sprintf(index, hex.EncodeToString([]byte(plantedKey))), &cassette.CheckOptions{Keys: []string{plantedKey}}},
		{"the key in upper-case hex, in a header", "cassette.jsonl", `{"op":"x","request":{},"status":200,"header":{"X-Echo":["` + strings.ToUpper(hex.EncodeToString([]byte(plantedKey))) + `"]}}` + "\n", &cassette.CheckOptions{Keys: []string{plantedKey}}},
		{"the key in base32", "bodies/a.json", `{"message":"` + base32.StdEncoding.EncodeToString([]byte(plantedKey)) + `"}`, &cassette.CheckOptions{Keys: []string{plantedKey}}},
		{"the key in lower-case base32hex, in a binary body", "bodies/a.mp3", "ID3\x00\x00" + strings.ToLower(base32.HexEncoding.EncodeToString([]byte("ab"+plantedKey))), &cassette.CheckOptions{Keys: []string{plantedKey}}},
		{"the key in hex, in a binary body", "bodies/b.mp3", "ID3\x00\x00" + hex.EncodeToString([]byte(plantedKey)), &cassette.CheckOptions{Keys: []string{plantedKey}}},
		{"a key header, no key known", "cassette.jsonl", `{"op":"x","request":{},"status":200,"header":{"X-Access-Key":["s3cr3tvalue123"]}}` + "\n", nil},
		{"an api_key field, no key known", "bodies/a.json", `{"api_key": "abc123def456"}`, nil},
		{"a token in a link, no key known", "cassette.jsonl", `{"op":"download","request":{"url":"https://files.example.com/a.wav?token=abc123"},"status":200}` + "\n", nil},
		{"a bearer token, no key known", "bodies/a.txt", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abc", nil},
		{"the key's pattern", "bodies/a.txt", "echo ck_live_0123456789abcdef", &cassette.CheckOptions{Patterns: []*regexp.Regexp{regexp.MustCompile(`ck_live_[0-9a-f]{16}`)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := write(t, tc.file, tc.text)
			err := cassette.Check(dir, tc.o)
			var ce *cassette.CheckError
			if !errors.As(err, &ce) || len(ce.Findings) == 0 {
				t.Fatalf("Check = %v, want a *CheckError", err)
			}
			if strings.Contains(err.Error(), plantedKey) || strings.Contains(err.Error(), "s3cr3tvalue123") {
				t.Errorf("the finding shows the secret: %v", err)
			}
		})
	}
	clean := write(t, "cassette.jsonl", `{"op":"text/writer-tool","request":{"prompt":"[redacted]"},"status":200,"header":{"X-Access-Key":["[redacted]"]}}`+"\n")
	if err := cassette.Check(clean, &cassette.CheckOptions{Keys: []string{plantedKey}}); err != nil {
		t.Errorf("Check of a clean cassette: %v", err)
	}
}
