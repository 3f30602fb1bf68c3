package creative

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

// notUTF8 holds a byte that is not UTF-8: encoding/json would send it as
// U+FFFD, a text the user did not write.
const notUTF8 = "a fox in \xff the snow"

func TestInputsThatCannotBeSentAsGivenFailBeforeAByteIsSent(t *testing.T) {
	ctx := context.Background()
	cover := func(in any) WriterToolRequest {
		return WriterToolRequest{Inputs: []any{in}, Language: "English", Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "formal"}
	}
	tests := []struct {
		name  string
		call  func(c *Client) error
		field string
		rule  string
		cause any // a pointer to an error type the error must hold, or nil
	}{
		{"a text-to-image prompt that is not UTF-8", func(c *Client) error {
			_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: notUTF8, NumberOfResults: 1})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"a text-to-music prompt that is not UTF-8", func(c *Client) error {
			_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: notUTF8})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"a text-to-speech prompt that is not UTF-8", func(c *Client) error {
			_, err := c.TextToSpeech(ctx, TextToSpeechRequest{Prompt: notUTF8, VoiceID: ids.VoiceFemale1})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"a logo prompt that is not UTF-8", func(c *Client) error {
			_, err := c.GenerateLogo(ctx, GenerateLogoRequest{Prompt: notUTF8})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"a QR prompt that is not UTF-8", func(c *Client) error {
			_, err := c.GenerateQR(ctx, GenerateQRRequest{URL: "https://example.com", Prompt: notUTF8})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"an infinite-zoom prompt that is not UTF-8", func(c *Client) error {
			_, err := c.InfiniteZoom(ctx, InfiniteZoomRequest{Prompt: notUTF8})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"a change-background prompt that is not UTF-8 (a form field)", func(c *Client) error {
			_, err := c.ChangeBackground(ctx, ChangeBackgroundRequest{Image: FileFromBytes("a.png", pngBytes), Prompt: notUTF8})
			return err
		}, "prompt", "must be valid UTF-8 text", nil},
		{"a cover letter's job role that is not UTF-8", func(c *Client) error {
			_, err := c.CoverLetter(ctx, CoverLetterRequest{JobRole: notUTF8, JobSkills: "Go", Language: "English", Tone: "formal"})
			return err
		}, "inputs[0].jobRole", "must be valid UTF-8 text", nil},
		{"a writer-tool tone that is not UTF-8", func(c *Client) error {
			req := cover(CoverLetterInput{"a", "b"})
			req.Tone = notUTF8
			_, err := c.WriterTool(ctx, req)
			return err
		}, "tone", "must be valid UTF-8 text", nil},
		{"a writer-tool input map holding text that is not UTF-8", func(c *Client) error {
			_, err := c.WriterTool(ctx, cover(map[string]any{"jobRole": "a", "jobSkills": "b", "notes": notUTF8}))
			return err
		}, "inputs[0]", "must hold only valid UTF-8 text", nil},
		{"a writer-tool input key that is not UTF-8", func(c *Client) error {
			_, err := c.WriterTool(ctx, cover(map[string]string{"jobRole": "a", "jobSkills": "b", notUTF8: "c"}))
			return err
		}, "inputs[0]", "must hold only valid UTF-8 text", nil},
		{"a URL that is not UTF-8", func(c *Client) error {
			_, err := c.UpScale(ctx, UpScaleRequest{URL: "https://example.com/\xff.png"})
			return err
		}, "url", "must be valid UTF-8 text", nil},
		{"a URL with a port out of range", func(c *Client) error {
			_, err := c.UpScale(ctx, UpScaleRequest{URL: "https://example.com:99999999/a.png"})
			return err
		}, "url", "must have a port from 1 to 65535", nil},
		{"a URL with port 65536", func(c *Client) error {
			_, err := c.RemoveBackground(ctx, RemoveBackgroundRequest{URL: "http://example.com:65536/a.png"})
			return err
		}, "url", "must have a port from 1 to 65535", nil},
		{"a URL with port 0", func(c *Client) error {
			_, err := c.GenerateQR(ctx, GenerateQRRequest{URL: "https://example.com:0/", Prompt: "p"})
			return err
		}, "url", "must have a port from 1 to 65535", nil},
		{"a URL with a port and no host", func(c *Client) error {
			_, err := c.ColorImage(ctx, ColorImageRequest{URL: "https://:443/a.png"})
			return err
		}, "url", "must be an absolute http or https URL", nil},
		{"a writer-tool input holding a channel", func(c *Client) error {
			_, err := c.WriterTool(ctx, WriterToolRequest{Inputs: []any{map[string]any{"c": make(chan int)}}, Language: "en", Number: 1, UseCase: "Other", Action: "a", Tone: "t"})
			return err
		}, "inputs[0]", "cannot be encoded as JSON", new(*json.UnsupportedTypeError)},
		{"a writer-tool input that is a function", func(c *Client) error {
			_, err := c.WriterTool(ctx, WriterToolRequest{Inputs: []any{func() {}}, Language: "en", Number: 1, UseCase: "Other", Action: "a", Tone: "t"})
			return err
		}, "inputs[0]", "cannot be encoded as JSON", new(*json.UnsupportedTypeError)},
		{"a writer-tool input holding NaN", func(c *Client) error {
			_, err := c.WriterTool(ctx, WriterToolRequest{Inputs: []any{map[string]any{"score": math.NaN()}}, Language: "en", Number: 1, UseCase: "Other", Action: "a", Tone: "t"})
			return err
		}, "inputs[0]", "cannot be encoded as JSON", new(*json.UnsupportedValueError)},
		{"a cover letter map without jobSkills", func(c *Client) error {
			_, err := c.WriterTool(ctx, cover(map[string]string{"jobRole": "Backend engineer"}))
			return err
		}, "inputs[0].jobSkills", "is required", nil},
		{"a cover letter map whose jobRole is a number", func(c *Client) error {
			_, err := c.WriterTool(ctx, cover(map[string]any{"jobRole": 7, "jobSkills": "Go"}))
			return err
		}, "inputs[0].jobRole", "must be a string", nil},
		{"a nil *CoverLetterInput", func(c *Client) error {
			_, err := c.WriterTool(ctx, cover((*CoverLetterInput)(nil)))
			return err
		}, "inputs[0]", "must not be null", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &requestCounter{}
			c := newTestClient(t, "https://api.example.com", WithHTTPClient(&http.Client{Transport: rt}))
			err := tt.call(c)
			var v *ValidationError
			require.ErrorAs(t, err, &v, "%v", err)
			assert.Equal(t, tt.field, v.Field)
			assert.Contains(t, v.Rule, tt.rule)
			assert.ErrorIs(t, err, ErrInvalidRequest)
			if tt.cause != nil {
				assert.ErrorAs(t, err, tt.cause)
			}
			assert.Equal(t, int64(0), rt.n.Load(), "nothing is sent")
		})
	}
}

// URLs that are well formed pass, ports included, and so does text with a
// real U+FFFD in it.
func TestWellFormedURLsAndTextPass(t *testing.T) {
	ts := newTestServer(t, replyJSON(200, okImage))
	c := newTestClient(t, ts.URL)
	for _, u := range []string{"https://example.com:65535/a.png", "http://example.com:1/a.png", "https://example.com:8443/a%20b.png?x=1", "https://[::1]:443/a.png", "https://example.com/é.png"} {
		_, err := c.UpScale(context.Background(), UpScaleRequest{URL: u})
		assert.NoError(t, err, u)
	}
	_, err := c.GenerateQR(context.Background(), GenerateQRRequest{URL: "https://example.com", Prompt: "a sign that reads \uFFFD"})
	assert.NoError(t, err)
}

// A map[string]string with the cover-letter keys is accepted like the
// typed input, and goes on the wire as the same JSON.
func TestACoverLetterMapIsSentLikeTheTypedInput(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		replyJSON(200, `{"success":true,"data":{"language":"English","useCase":"CoverLetter","word_count":2,"text":{"choices":[{"text":"Dear team","index":0,"word_count":2}]}}}`)(w, r)
	})
	c := newTestClient(t, ts.URL)
	for _, in := range []any{
		CoverLetterInput{JobRole: "Backend engineer", JobSkills: "Go, SQL"},
		&CoverLetterInput{JobRole: "Backend engineer", JobSkills: "Go, SQL"},
		map[string]string{"jobRole": "Backend engineer", "jobSkills": "Go, SQL"},
		map[string]any{"jobRole": "Backend engineer", "jobSkills": "Go, SQL"},
	} {
		_, err := c.WriterTool(context.Background(), WriterToolRequest{Inputs: []any{in}, Language: "English", Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "formal"})
		require.NoError(t, err, "%T", in)
	}
	require.Len(t, bodies, 4)
	assert.JSONEq(t, `{"inputs":[{"jobRole":"Backend engineer","jobSkills":"Go, SQL"}],"language":"English","number":1,"useCase":"CoverLetter","action":"generate_writenow","tone":"formal"}`, bodies[0])
	for _, b := range bodies[1:] {
		assert.Equal(t, bodies[0], b, "the same bytes on the wire")
	}
}

func TestValidHeaderValue(t *testing.T) {
	for s, want := range map[string]bool{
		"":                        true,
		"my-app/1.2 (+https://x)": true,
		"tab\tinside":             true,
		"caf\xc3\xa9":             true, // obs-text passes, as net/http sends it
		"nul\x00inside":           false,
		"line\nbreak":             false,
		"carriage\rreturn":        false,
		"bell\a":                  false,
		"del\x7f":                 false,
		"\x1b[31mred":             false,
	} {
		assert.Equal(t, want, validHeaderValue(s), "%q", s)
	}
}

// The error of an input that cannot be encoded unwraps to encoding/json's.
func TestAnInputThatCannotBeEncodedUnwrapsToTheEncodingError(t *testing.T) {
	c := newTestClient(t, "https://api.example.com", WithHTTPClient(&http.Client{Transport: &requestCounter{}}))
	_, err := c.WriterTool(context.Background(), WriterToolRequest{Inputs: []any{math.Inf(1)}, Language: "en", Number: 1, UseCase: "Other", Action: "a", Tone: "t"})
	var uv *json.UnsupportedValueError
	require.True(t, errors.As(err, &uv), "%v", err)
}
