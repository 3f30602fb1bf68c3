package creativetest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/media"
)

func newServer(t *testing.T, opts ...creativetest.Option) *creativetest.Server {
	t.Helper()
	s := creativetest.NewServer(opts...)
	t.Cleanup(s.Close)
	return s
}

// closeAtOnce closes s, in a synctest bubble, and checks that Close waited
// for nothing: no time passed on the bubble's clock. (Had it waited for
// something that never ends, the bubble would fail as deadlocked.)
func closeAtOnce(t *testing.T, s *creativetest.Server) {
	t.Helper()
	start := time.Now()
	s.Close()
	assert.Zero(t, time.Since(start), "Close waited")
}

func TestOperationsAreListedInTheSpecsOrder(t *testing.T) {
	assert.Equal(t, []string{
		creativetest.OpWriterTool, creativetest.OpTextToMusic, creativetest.OpTextToImage,
		creativetest.OpGenerateLogo, creativetest.OpGenerateQR, creativetest.OpUpScale,
		creativetest.OpEnhanceAudio, creativetest.OpInfiniteZoom, creativetest.OpReImagine,
		creativetest.OpSplitAudio, creativetest.OpRemoveBackground, creativetest.OpColorImage,
		creativetest.OpEnhanceImage, creativetest.OpRemoveVideoBackground, creativetest.OpTextToSpeech,
		creativetest.OpChangeBackground,
	}, creativetest.Operations())
	assert.Equal(t, "image/enhance", creativetest.OpEnhanceImage)
}

// Close ends what would wait for a long time or for good: each case runs in
// a synctest bubble, the Server in memory.
func TestCloseEndsWhatIsInFlight(t *testing.T) {
	t.Run("a handler waiting on its request's context returns", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := creativetest.StartInMemory(t)
			entered := make(chan struct{})
			s.Handle(creativetest.OpTextToMusic, func(w http.ResponseWriter, r *http.Request) {
				close(entered)
				<-r.Context().Done()
			})
			errc := make(chan error, 1)
			go func() {
				_, err := doPost(context.Background(), s, creativetest.OpTextToMusic, `{"prompt":"p"}`)
				errc <- err
			}()
			<-entered
			closeAtOnce(t, s)
			<-errc
		})
	})
	t.Run("a fault's delay ends without a made-up answer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := creativetest.StartInMemory(t)
			s.Fail(creativetest.OpTextToMusic, creativetest.Fault{Delay: time.Hour, Status: 503})
			wrote := make(chan struct{})
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				WroteRequest: func(httptrace.WroteRequestInfo) { close(wrote) },
			})
			errc := make(chan error, 1)
			go func() {
				resp, err := doPost(ctx, s, creativetest.OpTextToMusic, `{"prompt":"p"}`)
				if err == nil {
					err = fmt.Errorf("got an answer: %s", resp.Status)
				}
				errc <- err
			}()
			<-wrote
			closeAtOnce(t, s)
			err := <-errc
			assert.NotContains(t, err.Error(), "got an answer")
		})
	})
	t.Run("a second Close returns", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := creativetest.StartInMemory(t)
			s.Close()
			closeAtOnce(t, s)
		})
	})
}

// doPost posts body to op's path with the Server's key, through a client
// that reaches s wherever it listens.
func doPost(ctx context.Context, s *creativetest.Server, op, body string) (*http.Response, error) {
	area, name, _ := strings.Cut(op, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/"+area+"/v1/"+name, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-access-key", s.AccessKey)
	resp, err := s.HTTPClient().Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

// The latency ends when the caller goes away, not at Close: in a synctest
// bubble, the Server in memory, the hour of latency would otherwise pass.
func TestTheLatencyEndsWhenTheCallerGoesAway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := creativetest.StartInMemory(t, creativetest.WithLatency(time.Hour))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := doPost(ctx, s, creativetest.OpTextToMusic, `{"prompt":"p"}`)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		synctest.Wait() // the Server sees the caller gone
		require.Len(t, s.Requests(), 1, "the call ended on the Server's side too")
		assert.Equal(t, 0, s.Requests()[0].Status, "no answer was given")
		assert.Equal(t, 50*time.Millisecond, time.Since(start), "at the caller's deadline")
		closeAtOnce(t, s)
	})
}

func TestFailedAndHandledCallsAreRecordedWithTheirBodies(t *testing.T) {
	s := newServer(t)
	img := pngOf(8, 8)
	sum := sha256.Sum256(img)
	upload := func() {
		ct, body := form(map[string]string{"prompt": "beach"}, "image", "cat.png", img)
		send(t, s, creativetest.OpChangeBackground, ct, body, s.AccessKey)
	}

	s.Fail(creativetest.OpChangeBackground, creativetest.Fault{Status: 503})
	upload()
	var seen []byte
	s.Handle(creativetest.OpChangeBackground, func(w http.ResponseWriter, r *http.Request) {
		mr, err := r.MultipartReader()
		if err == nil {
			for p, err := mr.NextPart(); err == nil; p, err = mr.NextPart() {
				if p.FormName() == "image" {
					seen, _ = io.ReadAll(p)
				}
			}
		}
		w.WriteHeader(http.StatusTeapot)
	})
	upload()
	var seenJSON string
	s.Handle(creativetest.OpTextToMusic, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seenJSON = string(b)
	})
	post(t, s, creativetest.OpTextToMusic, `{"prompt":"jazz"}`)

	reqs := s.Requests()
	require.Len(t, reqs, 3)
	for i, r := range reqs[:2] {
		require.Len(t, r.Parts, 2, "call %d", i)
		assert.Equal(t, "beach", r.Parts[0].Value)
		assert.Equal(t, hex.EncodeToString(sum[:]), r.Parts[1].SHA256, "call %d", i)
		assert.Equal(t, int64(len(img)), r.Parts[1].Size, "call %d", i)
	}
	assert.Equal(t, []int{503, http.StatusTeapot, 200}, []int{reqs[0].Status, reqs[1].Status, reqs[2].Status})
	assert.Equal(t, img, seen, "the handler reads the whole upload")
	assert.Equal(t, `{"prompt":"jazz"}`, seenJSON, "the handler reads the whole JSON body")
	assert.Equal(t, `{"prompt":"jazz"}`, string(reqs[2].JSON))
}

func TestRequestsHandsOutCopies(t *testing.T) {
	s := newServer(t)
	post(t, s, creativetest.OpTextToMusic, `{"prompt":"jazz"}`)
	r := s.Requests()[0]
	r.Header.Set("Content-Type", "changed")
	r.JSON[0] = 'X'
	again := s.Requests()[0]
	assert.Equal(t, "application/json", again.Header.Get("Content-Type"))
	assert.Equal(t, `{"prompt":"jazz"}`, string(again.JSON))
}

func TestOddRequestsAreRefusedAndRecorded(t *testing.T) {
	s := newServer(t)
	tests := []struct {
		name, path, method, ctype, body string
		status                          int
		message                         string
	}{
		{"a path that is no operation", "/image/v1/nothing", http.MethodPost, "application/json", `{}`, 404, "no operation at /image/v1/nothing"},
		{"an operation's path with more after it", "/image/v1/text-to-image/x", http.MethodPost, "application/json", `{}`, 404, "no operation at"},
		{"a DELETE", "/image/v1/text-to-image", http.MethodDelete, "", "", 405, "image/text-to-image takes POST, not DELETE"},
		{"two JSON values", "/audio/v1/text-to-music", http.MethodPost, "application/json", `{"prompt":"a"}{"prompt":"b"}`, 400, "body: more than one JSON value"},
		{"a JSON array", "/audio/v1/text-to-music", http.MethodPost, "application/json", `[{"prompt":"a"}]`, 400, "body: not a JSON object"},
		{"text/plain JSON", "/audio/v1/text-to-music", http.MethodPost, "text/plain", `{"prompt":"a"}`, 400, `Content-Type: audio/text-to-music takes application/json, got "text/plain"`},
		{"a form without a boundary", "/audio/v1/split-audio", http.MethodPost, "multipart/form-data", `x`, 400, "Content-Type: multipart/form-data needs a boundary parameter"},
		{"a broken form", "/audio/v1/split-audio", http.MethodPost, "multipart/form-data; boundary=zz", `--zz\r\nno end`, 400, "body: not a well-formed multipart form"},
		{"a POST to a file", "/files/x.wav", http.MethodPost, "", "", 405, "files take GET or HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, s.URL+tt.path, strings.NewReader(tt.body))
			require.NoError(t, err)
			req.Header.Set("x-access-key", s.AccessKey)
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			var env struct {
				Success *bool
				Message string
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			require.NotNil(t, env.Success)
			assert.False(t, *env.Success)
			assert.Contains(t, env.Message, tt.message)
		})
	}
	reqs := s.Requests()
	require.Len(t, reqs, len(tests)-1, "file calls are not recorded")
	assert.Equal(t, "", reqs[0].Operation)
	assert.Equal(t, 404, reqs[0].Status)
	assert.Equal(t, `{"prompt":"a"}`, string(reqs[5].JSON), "the body is recorded whatever the Content-Type")
}

func TestTheKeyIsCheckedBeforeAnythingElse(t *testing.T) {
	s := newServer(t)
	s.Fail(creativetest.OpTextToMusic, creativetest.Fault{Status: 503})
	resp, env := send(t, s, creativetest.OpTextToMusic, "application/json", strings.NewReader(`{"prompt":"p"}`), "")
	assert.Equal(t, 401, resp.StatusCode)
	assert.Equal(t, "x-access-key: missing", env["message"])
	resp, env = send(t, s, creativetest.OpTextToMusic, "application/json", strings.NewReader(`{"prompt":"p"}`), "nope")
	assert.Equal(t, 401, resp.StatusCode)
	assert.Equal(t, "x-access-key: not a valid key", env["message"])
	resp, _ = post(t, s, creativetest.OpTextToMusic, `{"prompt":"p"}`)
	assert.Equal(t, 503, resp.StatusCode, "refused calls do not use up a fault")
}

func TestMoreFieldRules(t *testing.T) {
	s := newServer(t)
	tests := []struct{ name, op, body, want string }{
		{"a zero duration", creativetest.OpTextToMusic, `{"prompt":"p","duration":0}`, "duration: must be above 0, got 0"},
		{"a duration of 301", creativetest.OpTextToMusic, `{"prompt":"p","duration":301}`, "duration: must be at most 300, got 301"},
		{"a null prompt", creativetest.OpTextToMusic, `{"prompt":null}`, "prompt: is required"},
		{"an empty prompt", creativetest.OpTextToMusic, `{"prompt":""}`, "prompt: is required"},
		{"numberOfResults as a string", creativetest.OpTextToImage, `{"prompt":"p","numberOfResults":"3"}`, "numberOfResults: must be a number, got a string"},
		{"a scale of 0", creativetest.OpUpScale, `{"url":"https://x.example/a.png","scale":0}`, "scale: must be above 0, got 0"},
		{"a boolean voice", creativetest.OpTextToSpeech, `{"prompt":"p","voiceId":true}`, "voiceId: must be a string, got a boolean"},
		{"a malformed lighting id", creativetest.OpTextToImage, `{"prompt":"p","numberOfResults":1,"lightingId":"6644B0C5EC3658A8E38D9538"}`, `lightingId: must be an id of 24 lower-case hexadecimal characters, got "6644B0C5EC3658A8E38D9538"`},
		{"an unknown size under dimensionsId", creativetest.OpTextToImage, `{"prompt":"p","numberOfResults":1,"dimensionsId":"6644b0c5ec3658a8e38d9599"}`, `dimensionsId: unknown id, got "6644b0c5ec3658a8e38d9599"`},
		{"writer inputs as an object", creativetest.OpWriterTool, `{"inputs":{},"language":"en","number":1,"useCase":"CoverLetter","action":"a","tone":"t"}`, "inputs: must be an array, got an object"},
		{"empty writer inputs", creativetest.OpWriterTool, `{"inputs":[],"language":"en","number":1,"useCase":"CoverLetter","action":"a","tone":"t"}`, "inputs: must hold at least one input"},
		{"a cover letter input that is a string", creativetest.OpWriterTool, `{"inputs":["x"],"language":"en","number":1,"useCase":"CoverLetter","action":"a","tone":"t"}`, "inputs[0]: must be a CoverLetterInput with jobRole and jobSkills for useCase CoverLetter, got string"},
		{"a numeric job role", creativetest.OpWriterTool, `{"inputs":[{"jobRole":1,"jobSkills":"s"}],"language":"en","number":1,"useCase":"CoverLetter","action":"a","tone":"t"}`, "inputs[0].jobRole: must be a string, got 1"},
		{"six letters", creativetest.OpWriterTool, `{"inputs":[{"jobRole":"r","jobSkills":"s"}],"language":"en","number":6,"useCase":"CoverLetter","action":"a","tone":"t"}`, "number: must be at most 5, got 6"},
		{"21 zoom steps", creativetest.OpInfiniteZoom, `{"prompt":"p","numberOfIteration":21}`, "numberOfIteration: must be at most 20, got 21"},
		{"no images", creativetest.OpTextToImage, `{"prompt":"p","numberOfResults":0}`, "numberOfResults: must be above 0, got 0"},
		{"a malformed size under dimensionsId", creativetest.OpTextToImage, `{"prompt":"p","numberOfResults":1,"dimensionsId":"square"}`, `dimensionsId: must be an id of 24 lower-case hexadecimal characters, got "square"`},
		{"a cover letter without its action", creativetest.OpWriterTool, `{"inputs":[{"jobRole":"r","jobSkills":"s"}],"language":"en","number":1,"useCase":"CoverLetter","tone":"t"}`, "action: is required"},
		{"no tone", creativetest.OpWriterTool, `{"inputs":[{"jobRole":"r","jobSkills":"s"}],"language":"en","number":1,"useCase":"CoverLetter","action":"a"}`, "tone: is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, env := post(t, s, tt.op, tt.body)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			assert.Equal(t, tt.want, env["message"])
		})
	}
}

// The fake refuses a value with the words of the SDK's own validation of
// the same request, and takes what that validation takes.
func TestTheFakeRefusesWithTheSDKsWords(t *testing.T) {
	s := newServer(t)
	voice := string(ids.VoiceMale1)
	tests := []struct {
		name, op, body string
		req            interface{ Validate() error }
	}{
		{"11 images", creativetest.OpTextToImage, `{"prompt":"p","numberOfResults":11}`,
			creative.TextToImageRequest{Prompt: "p", NumberOfResults: 11}},
		{"a negative count of logos", creativetest.OpGenerateLogo, `{"prompt":"p","numberOfResults":-2}`,
			creative.GenerateLogoRequest{Prompt: "p", NumberOfResults: -2}},
		{"a link without a host", creativetest.OpGenerateQR, `{"url":"https:///x","prompt":"p"}`,
			creative.GenerateQRRequest{URL: "https:///x", Prompt: "p"}},
		{"a link with port 0", creativetest.OpColorImage, `{"url":"http://example.com:0/a.png"}`,
			creative.ColorImageRequest{URL: "http://example.com:0/a.png"}},
		{"a negative scale", creativetest.OpUpScale, `{"url":"https://x.example/a.png","scale":-1.5}`,
			creative.UpScaleRequest{URL: "https://x.example/a.png", Scale: -1.5}},
		{"a voice that is a label", creativetest.OpTextToSpeech, `{"prompt":"p","voiceId":"female 1"}`,
			creative.TextToSpeechRequest{Prompt: "p", VoiceID: "female 1"}},
		{"an empty tone", creativetest.OpWriterTool, `{"inputs":["x"],"language":"en","number":1,"useCase":"Blog","action":"a","tone":""}`,
			creative.WriterToolRequest{Inputs: []any{"x"}, Language: "en", Number: 1, UseCase: "Blog", Action: "a"}},
		{"a prompt of spaces", creativetest.OpTextToSpeech, `{"prompt":"  ","voiceId":"` + voice + `"}`,
			creative.TextToSpeechRequest{Prompt: "  ", VoiceID: ids.VoiceMale1}},
		{"negative zoom steps", creativetest.OpInfiniteZoom, `{"prompt":"p","numberOfIteration":-1}`,
			creative.InfiniteZoomRequest{Prompt: "p", NumberOfIteration: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ve *creative.ValidationError
			require.ErrorAs(t, tt.req.Validate(), &ve)
			resp, env := post(t, s, tt.op, tt.body)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			want := ve.Field + ": " + ve.Rule
			if ve.Value != "" {
				want += ", got " + ve.Value
			}
			assert.Equal(t, want, env["message"])
		})
	}
}

func TestOtherWriterUseCasesTakeAnyInputs(t *testing.T) {
	s := newServer(t)
	resp, env := post(t, s, creativetest.OpWriterTool, `{"inputs":["a topic",{"k":1}],"language":"English","number":1,"useCase":"BlogIdea","action":"a","tone":"t"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, env)
	data := env["data"].(map[string]any)
	assert.Equal(t, "BlogIdea", data["useCase"])
	choice := data["text"].(map[string]any)["choices"].([]any)[0].(map[string]any)
	assert.Contains(t, choice["text"], "a topic")
	assert.EqualValues(t, len(strings.Fields(choice["text"].(string))), choice["word_count"])
}

func TestFormFieldsMustBeOfTheirKind(t *testing.T) {
	s := newServer(t)
	ct, body := form(map[string]string{"image": "not a file"}, "prompt", "p.txt", []byte("beach"))
	resp, env := send(t, s, creativetest.OpChangeBackground, ct, body, s.AccessKey)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "image: must be a file part, not a text field", env["message"])

	ct, body = form(nil, "image", "a.png", pngOf(4, 4))
	resp, env = send(t, s, creativetest.OpChangeBackground, ct, body, s.AccessKey)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "prompt: is required", env["message"])

	ct, body = form(map[string]string{"prompt": "beach"}, "image", "a.gif", gifOf(4, 4))
	resp, env = send(t, s, creativetest.OpChangeBackground, ct, body, s.AccessKey)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "image: must be a PNG, JPEG or WebP image, got image/gif", env["message"], "GIF is not allowed")
}

func gifOf(w, h int) []byte {
	var b bytes.Buffer
	_ = gif.Encode(&b, image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black}), nil)
	return b.Bytes()
}

func TestLinksAreFetchedOnlyFromLoopback(t *testing.T) {
	s := newServer(t)
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(pngOf(10, 6))
		case "/away":
			http.Redirect(w, r, "http://192.0.2.1/a.png", http.StatusFound)
		case "/text":
			_, _ = io.WriteString(w, "not an image")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(src.Close)

	t.Run("an image on a loopback host is fetched", func(t *testing.T) {
		resp, env := post(t, s, creativetest.OpUpScale, `{"url":"`+src.URL+`/a.png","scale":3}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, env)
		img := decodeB64PNG(t, env["data"].(map[string]any)["base64"].(string))
		assert.Equal(t, image.Pt(30, 18), img.Bounds().Size())
	})
	t.Run("a link elsewhere gets the stand-in", func(t *testing.T) {
		resp, env := post(t, s, creativetest.OpUpScale, `{"url":"https://images.example/a.png"}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, env)
		img := decodeB64PNG(t, env["data"].(map[string]any)["base64"].(string))
		assert.Equal(t, image.Pt(512, 512), img.Bounds().Size(), "the 256 px stand-in, doubled by default")
	})
	t.Run("a redirect away from loopback is not followed", func(t *testing.T) {
		resp, env := post(t, s, creativetest.OpEnhanceImage, `{"url":"`+src.URL+`/away"}`)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Contains(t, env["message"], "url: cannot fetch it")
		assert.Contains(t, env["message"], "only to loopback addresses")
	})
	t.Run("a link that is not an image is refused", func(t *testing.T) {
		resp, env := post(t, s, creativetest.OpColorImage, `{"url":"`+src.URL+`/text"}`)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Equal(t, "url: the linked file is not a PNG, JPEG, WebP or GIF image", env["message"])
	})
	t.Run("a link that answers 404 is refused", func(t *testing.T) {
		resp, env := post(t, s, creativetest.OpRemoveVideoBackground, `{"url":"`+src.URL+`/gone.mp4"}`)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Equal(t, "url: fetching it answered HTTP 404", env["message"])
	})
	t.Run("the fake's own files are read", func(t *testing.T) {
		_, env := post(t, s, creativetest.OpInfiniteZoom, `{"prompt":"galaxy","numberOfIteration":1}`)
		zoom := env["data"].(string)
		first, err := gif.Decode(bytes.NewReader(get(t, zoom)))
		require.NoError(t, err)
		resp, env := post(t, s, creativetest.OpUpScale, `{"url":"`+zoom+`","scale":0.5}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, env)
		img := decodeB64PNG(t, env["data"].(map[string]any)["base64"].(string))
		assert.Equal(t, first.Bounds().Size().Div(2), img.Bounds().Size())
		assert.NotEqual(t, media.StandIn(zoom), img, "not the stand-in")

		resp, env = post(t, s, creativetest.OpRemoveVideoBackground, `{"url":"`+s.URL+`/files/missing.gif"}`)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Contains(t, env["message"], "url: no such file on the fake")
	})
}

func get(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}

func TestTextToImageDrawsTheAspectOfEitherSizeField(t *testing.T) {
	s := newServer(t)
	for _, field := range []string{"imageSizeId", "dimensionsId"} {
		for id, want := range map[string]image.Point{"6644b0c5ec3658a8e38d951b": {341, 512}, "6644b0c5ec3658a8e38d951d": {512, 341}} {
			t.Run(field+" "+id, func(t *testing.T) {
				resp, env := post(t, s, creativetest.OpTextToImage, `{"prompt":"p","numberOfResults":1,"`+field+`":"`+id+`"}`)
				require.Equal(t, http.StatusOK, resp.StatusCode, env)
				img := decodeB64PNG(t, env["data"].([]any)[0].(map[string]any)["base64"].(string))
				assert.Equal(t, want, img.Bounds().Size())
			})
		}
	}
	resp, env := post(t, s, creativetest.OpTextToImage, `{"prompt":"p","numberOfResults":1,"imageSizeId":"6644b0c5ec3658a8e38d951b","dimensionsId":"6644b0c5ec3658a8e38d951b"}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "both fields agreeing: %v", env)
}

func TestLogosAreAnObjectForOneAndAListForMore(t *testing.T) {
	s := newServer(t)
	_, env := post(t, s, creativetest.OpGenerateLogo, `{"prompt":"p","numberOfResults":1}`)
	assert.IsType(t, map[string]any{}, env["data"])
	_, env = post(t, s, creativetest.OpGenerateLogo, `{"prompt":"p","numberOfResults":3}`)
	require.IsType(t, []any{}, env["data"])
	assert.Len(t, env["data"], 3)
}

func TestOldFilesAreForgotten(t *testing.T) {
	s := newServer(t)
	var first string
	for i := range 257 {
		_, env := post(t, s, creativetest.OpTextToMusic, fmt.Sprintf(`{"prompt":"tune","duration":%g}`, 0.01+float64(i)/1000))
		if i == 0 {
			first = env["data"].(string)
			resp, err := http.Head(first)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
	}
	resp, err := http.Get(first)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "the oldest of 257 files is gone")
}

func TestAFaultsRawBodyAndStatus200(t *testing.T) {
	s := newServer(t)
	s.Fail(creativetest.OpTextToMusic, creativetest.Fault{Status: 200, Body: "not json", ContentType: "text/plain"})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/audio/v1/text-to-music", strings.NewReader(`{"prompt":"p"}`))
	req.Header.Set("x-access-key", s.AccessKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "text/plain", resp.Header.Get("Content-Type"))
	assert.Equal(t, "not json", string(b))
}
