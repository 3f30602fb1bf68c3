package creative

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

func TestWithJSONSetBytesOnTheWire(t *testing.T) {
	var s seen
	ts := newTestServer(t, recordAndReply(&s, 200, `{"success":true,"data":"https://f.example/a.wav"}`))
	c := ts.client(t)
	ctx := context.Background()
	_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "calm"},
		WithJSONSet("seed", 42),
		WithJSONSet("prompt", "replaced"),
		WithJSONSet("extra.mix.gain", 0.5),
		WithJSONSet(`extra.a\.b`, []string{"x"}),
		WithJSONSet("raw", json.RawMessage(`{"k": true}`)))
	require.NoError(t, err)
	_, err = c.UpScale(ctx, UpScaleRequest{URL: "https://i.example/a.png"}, WithJSONSet("scale", 4))
	require.Error(t, err) // the answer is no image; the request is what counts
	err = c.Post(ctx, "/audio/v2/hum", map[string]any{"prompt": "p"}, nil, WithJSONSet("model.name", "v2"))
	require.NoError(t, err)
	err = c.Post(ctx, "/audio/v2/hum", []byte(`{"b": [1, 2], "a": [1, 2]}`), nil, WithJSONSet("a", nil))
	require.NoError(t, err)
	err = c.Post(ctx, "/audio/v2/hum", nil, nil, WithJSONSet("only", "me"))
	require.NoError(t, err)
	reqs := s.all()
	require.Len(t, reqs, 5)
	require.Equal(t, `{"prompt":"replaced","seed":42,"extra":{"mix":{"gain":0.5},"a.b":["x"]},"raw":{"k":true}}`, string(reqs[0].body))
	require.EqualValues(t, len(reqs[0].body), reqs[0].contentLength)
	require.Equal(t, `{"url":"https://i.example/a.png","scale":4}`, string(reqs[1].body))
	require.Equal(t, `{"prompt":"p","model":{"name":"v2"}}`, string(reqs[2].body))
	require.Equal(t, `{"b":[1, 2],"a":null}`, string(reqs[3].body), "the other members keep their values' bytes")
	require.Equal(t, `{"only":"me"}`, string(reqs[4].body))
	require.Equal(t, "application/json", reqs[4].header.Get("Content-Type"))
}

func TestWithJSONSetRefusedBeforeSending(t *testing.T) {
	ts := newTestServer(t, replyJSON(200, `{"success":true,"data":"https://f.example/a.wav"}`))
	c := ts.client(t)
	ctx := context.Background()
	_, err := c.EnhanceAudio(ctx, EnhanceAudioRequest{Audio: FileFromBytes("talk.wav", wavBytes), TypeID: ids.EnhancePodcast}, WithJSONSet("x", 1))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.ErrorIs(t, err, ErrInvalidRequest)
	require.Equal(t, "audio/enhance", ve.Operation)
	require.Contains(t, err.Error(), "WithJSONSet")
	require.Contains(t, err.Error(), "multipart/form-data")

	_, err = c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"}, WithJSONSet("prompt.deeper", 1))
	require.ErrorAs(t, err, &ve)
	require.Contains(t, err.Error(), "prompt.deeper")

	err = c.Post(ctx, "/x/v2/y", strings.NewReader(`{}`), nil, WithJSONSet("x", 1))
	require.ErrorAs(t, err, &ve)

	_, err = c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"}, WithJSONSet("a..b", 1))
	require.Error(t, err)
	_, err = c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"}, WithJSONSet("f", func() {}))
	require.Error(t, err)
	_, err = New(WithBaseURL(ts.URL), WithAccessKey(testKey), WithJSONSet("x", 1))
	require.Error(t, err)

	require.Zero(t, ts.hits.Load(), "a refused WithJSONSet sent a request")
}

func TestRawAnswerUnknownFields(t *testing.T) {
	const answer = `{"success":true,"message":"ok","credits":{"left":7},` +
		`"data":{"language":"en","useCase":"CoverLetter","word_count":3,"tokens":99,` +
		`"text":{"choices":[{"text":"a b c","index":0,"word_count":3}]}}}`
	ts := newTestServer(t, replyJSON(200, answer))
	c := ts.client(t)
	var raw RawAnswer
	res, err := c.WriterTool(context.Background(), WriterToolRequest{Inputs: []any{CoverLetterInput{JobRole: "Engineer", JobSkills: "Go"}}, Language: "English", Number: 1, UseCase: UseCaseCoverLetter, Action: ActionGenerateWriteNow, Tone: "formal"},
		WithRawAnswerInto(&raw))
	require.NoError(t, err)
	require.Equal(t, "a b c", res.Choices[0].Text)
	require.Equal(t, answer, raw.RawJSON())
	extra := raw.ExtraFields()
	require.Len(t, extra, 2)
	require.Equal(t, `{"left":7}`, string(extra["credits"]))
	require.Equal(t, `99`, string(extra["data.tokens"]))
	v, ok := raw.Get("credits.left")
	require.True(t, ok)
	require.Equal(t, "7", string(v))
	_, ok = raw.Get("credits.right")
	require.False(t, ok)

	var rawExec RawAnswer
	require.NoError(t, c.Post(context.Background(), "/text/v2/new", nil, nil, WithRawAnswerInto(&rawExec)))
	require.Equal(t, answer, rawExec.RawJSON())
}

func TestRawAnswerOfImagesLeavesTheBase64Out(t *testing.T) {
	img := pngHeader(64, 64)
	img = append(img, make([]byte, 300<<10)...) // a 300 KiB image
	b64 := base64.StdEncoding.EncodeToString(img)
	answer := `{"success":true,"message":"ok","seed":5,"data":[{"base64":"` + b64 + `","nsfw":false}]}`
	ts := newTestServer(t, replyJSON(200, answer))
	c := ts.client(t)
	var raw RawAnswer
	ims, err := c.TextToImage(context.Background(), TextToImageRequest{Prompt: "p", NumberOfResults: 1}, WithRawAnswerInto(&raw))
	require.NoError(t, err)
	require.Equal(t, img, ims[0].Data)
	require.Less(t, len(raw.JSON()), 300, "the raw answer of an image call copied the base64")
	require.Equal(t, `{"success":true,"message":"ok","seed":5,"data":[{"base64":"[`+
		itoa(len(b64))+` bytes of base64, decoded into the result]","nsfw":false}]}`, raw.RawJSON())
	require.Equal(t, map[string]string{"seed": "5"}, asStrings(raw.ExtraFields()))
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func asStrings[V ~[]byte](m map[string]V) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// The raw answer is text from the network like an error's: an echo of the
// key, in any form, never reaches it, and it stays JSON.
func TestRawAnswerHoldsNoKey(t *testing.T) {
	jsonEscaped := strings.ReplaceAll(testKey, "-", `\u002d`)
	for _, tc := range []struct{ name, answer string }{
		{"in an envelope's member", `{"success":true,"message":"ok","echo":"` + testKey + `","data":{}}`},
		{"escaped for a URL", `{"success":true,"message":"ok","echo":"https://h.example/?k=` + url.QueryEscape(testKey) + `","data":{}}`},
		{"escaped for JSON", `{"success":true,"message":"ok","echo":"` + jsonEscaped + `","data":{}}`},
		{"in the data", `{"success":true,"message":"ok","data":{"seen":"key ` + testKey + ` here"}}`},
		{"as a member's name", `{"success":true,"message":"ok","data":{"` + testKey + `":1}}`},
		{"in the message", `{"success":true,"message":"` + testKey + `","data":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, replyJSON(200, tc.answer))
			c := ts.client(t)
			var raw RawAnswer
			var body []byte
			require.NoError(t, c.Post(context.Background(), "/x/v2/new", nil, &body, WithRawAnswerInto(&raw)))
			require.Empty(t, leak(string(body), testKey), "the result passes the redactor too")
			require.True(t, json.Valid(raw.JSON()), "%s", raw.RawJSON())
			var decoded any
			require.NoError(t, json.Unmarshal(raw.JSON(), &decoded))
			text, err := json.Marshal(decoded)
			require.NoError(t, err)
			require.Empty(t, leak(raw.RawJSON()+" "+string(text), testKey))
			require.Contains(t, raw.RawJSON(), redacted)
			for name, v := range raw.ExtraFields() {
				require.Empty(t, leak(name+" "+string(v), testKey))
			}
		})
	}
}

// WithJSONSet never sends what a JSON decoder refuses: a name given twice,
// a nesting past a decoder's depth, a value JSON cannot hold. Each is
// refused before anything is sent.
func TestWithJSONSetNeverSendsJSONADecoderRefuses(t *testing.T) {
	var s seen
	ts := newTestServer(t, recordAndReply(&s, 200, `{}`))
	c := ts.client(t)
	for _, tc := range []struct {
		name   string
		params any
		path   string
		value  any
	}{
		{"a name that is not UTF-8, which JSON writes as another the body holds", []byte(`{"\ufffd":1}`), "\xff", 2},
		{"a name that is not UTF-8 deeper in", nil, "a.b\xfe.c", 1},
		{"a path nested past a decoder's depth", nil, strings.Repeat("a.", 20000) + "a", 1},
		{"a path of 65 names", nil, strings.Repeat("a.", 64) + "a", 1},
		{"a name the body holds twice", []byte(`{"a":1,"a":2}`), "a", 3},
		{"through an array", []byte(`{"a":[{"b":1}]}`), "a.b", 3},
		{"through a string", []byte(`{"a":"b"}`), "a.b", 3},
		{"an empty name", nil, "a..b", 1},
		{"an empty path", nil, "", 1},
		{"NaN", nil, "a", math.NaN()},
		{"infinity", nil, "a", math.Inf(1)},
		{"a value that is no JSON", nil, "a", json.RawMessage(`{"a":`)},
		{"a value that fails to encode", nil, "a", failingJSON{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Post(context.Background(), "/x/v2/y", tc.params, nil, WithJSONSet(tc.path, tc.value))
			require.Error(t, err)
			require.Less(t, len(err.Error()), 2<<10, "the error quotes the path bounded")
		})
	}
	require.Empty(t, s.all(), "a refused WithJSONSet sent a request")

	// 64 names nest as deep as any decoder takes.
	require.NoError(t, c.Post(context.Background(), "/x/v2/y", nil, nil, WithJSONSet(strings.Repeat("a.", 63)+"a", 1)))
	reqs := s.all()
	require.Len(t, reqs, 1)
	var v any
	require.NoError(t, json.Unmarshal(reqs[0].body, &v))
}

type failingJSON struct{}

func (failingJSON) MarshalJSON() ([]byte, error) { return nil, errors.New("no") }

// WithJSONSet may replace a typed field, but never so that a request the
// field's own validation refuses goes out: the body it makes passes the
// request type's validation again, before anything is sent.
func TestWithJSONSetKeepsTheTypedFieldsValid(t *testing.T) {
	var s seen
	ts := newTestServer(t, recordAndReply(&s, 200, `{"success":true,"data":"https://f.example/a.wav"}`))
	c := ts.client(t)
	ctx := context.Background()
	music := func(opt Option) error {
		_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "calm"}, opt)
		return err
	}
	pictures := func(opt Option) error {
		_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p"}, opt)
		return err
	}
	for _, tc := range []struct {
		name  string
		call  func(opt Option) error
		path  string
		value any
	}{
		{"a required prompt emptied", music, "prompt", ""},
		{"a prompt of spaces", music, "prompt", "   "},
		{"a prompt removed", music, "prompt", nil},
		{"a negative duration", music, "duration", -5},
		{"a duration of another type", music, "duration", "8s"},
		{"a number of images past the most", pictures, "numberOfResults", 50},
		{"a number of images that is no integer", pictures, "numberOfResults", 2.5},
		{"a style id of another shape", pictures, "styleId", "anime"},
		{"a dimensions id of another shape", pictures, "dimensionsId", "3:2"},
		{"a number of images the answer is not checked against", pictures, "numberOfResults", 3},
		{"a number of logos the answer is not checked against", func(opt Option) error {
			_, err := c.GenerateLogo(ctx, GenerateLogoRequest{Prompt: "p"}, opt)
			return err
		}, "numberOfResults", 2},
		{"a link that is not http(s)", func(opt Option) error {
			_, err := c.UpScale(ctx, UpScaleRequest{URL: "https://i.example/a.png"}, opt)
			return err
		}, "url", "file:///etc/passwd"},
		{"a writer's cover letter without its role", func(opt Option) error {
			_, err := c.CoverLetter(ctx, CoverLetterRequest{JobRole: "a", JobSkills: "b", Language: "English", Tone: "formal"}, opt)
			return err
		}, "inputs", []map[string]string{{"jobSkills": "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(WithJSONSet(tc.path, tc.value))
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.ErrorIs(t, err, ErrInvalidRequest)
			require.Contains(t, err.Error(), "WithJSONSet")
		})
	}
	require.Empty(t, s.all(), "a request the typed validation refuses was sent")

	// A field the request type does not have, and a typed field replaced
	// by a valid value, go out.
	require.NoError(t, music(WithJSONSet("prompt", "replaced")))
	require.NoError(t, music(WithJSONSet("Prompt", ""))) // another name: the service matches names as spelt
	reqs := s.all()
	require.Len(t, reqs, 2)
	require.Equal(t, `{"prompt":"replaced"}`, string(reqs[0].body))
}
