package cassette_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
	"github.com/creativegen/creative-go/ids"
)

// open opens a cassette for a test, whatever CREATIVE_RECORD_MODE says,
// downloading linked files through srv's client when srv is given.
func open(t *testing.T, dir string, mode cassette.Mode, srv *creativetest.Server) *cassette.Cassette {
	t.Helper()
	o := &cassette.Options{IgnoreEnv: true, NoPacing: true}
	if srv != nil {
		o.HTTPClient = srv.HTTPClient()
	}
	c, err := cassette.Open(dir, mode, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// offline returns a client that reaches no network: its transport fails
// the test and counts every request that gets through.
func offline(t *testing.T, cas *cassette.Cassette, sent *atomic.Int64) *creative.Client {
	t.Helper()
	hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		sent.Add(1)
		t.Errorf("a request reached the network in replay: %s %s", r.Method, r.URL)
		return nil, fmt.Errorf("the network is unreachable")
	})}
	c, err := creative.New(creative.WithBaseURL("https://creative.invalid"), creative.WithAccessKey(cassette.AccessKey()),
		creative.WithHTTPClient(hc), creative.WithMaxRetries(0), cas.Option())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// script is what a test of the service would do: one call of each kind
// of answer (images, a linked file and its download, a speech stream, a
// written text, an upload). It returns a summary of every result.
func script(ctx context.Context, c *creative.Client, prompt string) (string, error) {
	var out strings.Builder
	imgs, err := c.TextToImage(ctx, creative.TextToImageRequest{Prompt: prompt, NumberOfResults: 2})
	if err != nil {
		return "", err
	}
	for _, im := range imgs {
		fmt.Fprintf(&out, "image %s %s\n", im.ContentType(), sum(im.Data))
	}
	music, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "jazz " + prompt, Duration: 2})
	if err != nil {
		return "", err
	}
	var file bytes.Buffer
	if _, err := c.Download(ctx, music, &file); err != nil {
		return "", err
	}
	fmt.Fprintf(&out, "music %s %s\n", music, sum(file.Bytes()))
	a, err := c.TextToSpeech(ctx, creative.TextToSpeechRequest{Prompt: "hello " + prompt, VoiceID: ids.VoiceFemale1})
	if err != nil {
		return "", err
	}
	speech, err := io.ReadAll(a)
	a.Close()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&out, "speech %s %s\n", a.ContentType, sum(speech))
	letter, err := c.CoverLetter(ctx, creative.CoverLetterRequest{JobRole: "baker", JobSkills: "bread", Language: "English", Tone: "formal"})
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&out, "letter %s\n", sum([]byte(letter.Text())))
	enhanced, err := c.EnhanceAudio(ctx, creative.EnhanceAudioRequest{Audio: creative.FileFromBytes("speech.mp3", speech), TypeID: ids.EnhancePodcast})
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&out, "enhanced %s\n", enhanced)
	return out.String(), nil
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:8])
}

// files returns the cassette's files and their contents.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func names(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type atomicCount struct{ n atomic.Int64 }

// wav is a short silent WAV file.
func wav() []byte {
	const samples = 800
	b := []byte("RIFF")
	le := func(v uint32, n int) {
		for i := range n {
			b = append(b, byte(v>>(8*i)))
		}
	}
	le(36+samples*2, 4)
	b = append(b, "WAVEfmt "...)
	le(16, 4)
	le(1, 2)
	le(1, 2)
	le(8000, 4)
	le(16000, 4)
	le(2, 2)
	le(16, 2)
	b = append(b, "data"...)
	le(samples*2, 4)
	return append(b, make([]byte, samples*2)...)
}
