package creativetest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/ids"
)

// post sends a JSON body to op with the server's key and decodes the answer.
func post(t *testing.T, s *creativetest.Server, op, body string) (*http.Response, map[string]any) {
	t.Helper()
	return send(t, s, op, "application/json", strings.NewReader(body), s.AccessKey)
}

func send(t *testing.T, s *creativetest.Server, op, ctype string, body io.Reader, key string) (*http.Response, map[string]any) {
	t.Helper()
	area, name, _ := strings.Cut(op, "/")
	req, err := http.NewRequest(http.MethodPost, s.URL+"/"+area+"/v1/"+name, body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", ctype)
	if key != "" {
		req.Header.Set("x-access-key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var env map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &env), string(raw))
	} else {
		env = map[string]any{"raw": string(raw)}
	}
	return resp, env
}

// form builds a multipart body with text fields and one file part.
func form(fields map[string]string, fileField, fileName string, file []byte) (string, *bytes.Buffer) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	if fileField != "" {
		fw, _ := w.CreateFormFile(fileField, fileName)
		_, _ = fw.Write(file)
	}
	_ = w.Close()
	return w.FormDataContentType(), &b
}

func pngOf(w, h int) []byte {
	var b bytes.Buffer
	_ = png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)))
	return b.Bytes()
}

func wav() []byte {
	b := []byte("RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x22\x56\x00\x00\x44\xac\x00\x00\x02\x00\x10\x00data\x10\x00\x00\x00")
	for i := 0; i < 8; i++ {
		b = append(b, byte(i*30), byte(i))
	}
	return b
}

func TestEveryOperationAnswersASpecShapedSuccess(t *testing.T) {
	s := creativetest.NewServer()
	defer s.Close()
	voice, style := string(ids.VoiceFemale1), string(ids.StyleAnime)
	json := map[string]struct{ body, shape string }{
		"text/writer-tool":        {`{"inputs":[{"jobRole":"Engineer","jobSkills":"Go"}],"language":"English","number":2,"useCase":"CoverLetter","action":"generate_writenow","tone":"formal"}`, "writer"},
		"audio/text-to-music":     {`{"prompt":"jazz","duration":2}`, "url"},
		"audio/text-to-speech":    {`{"prompt":"hi","voiceId":"` + voice + `"}`, "audio"},
		"image/text-to-image":     {`{"prompt":"fox","numberOfResults":3,"styleId":"` + style + `"}`, "images3"},
		"image/generate-logo":     {`{"prompt":"bakery"}`, "image"},
		"image/generate-qr":       {`{"url":"https://example.com","prompt":"flowers"}`, "image"},
		"image/up-scale":          {`{"url":"https://x.example/a.png","scale":1.5}`, "image"},
		"image/remove-background": {`{"url":"https://x.example/a.png"}`, "image"},
		"image/color-image":       {`{"url":"https://x.example/a.png"}`, "image"},
		"image/enhance":           {`{"url":"https://x.example/a.png"}`, "image"},
		"video/infinite-zoom":     {`{"prompt":"galaxy"}`, "url"},
		"video/remove-background": {`{"url":"https://x.example/a.mp4"}`, "url"},
	}
	for op, tt := range json {
		t.Run(op, func(t *testing.T) {
			resp, env := post(t, s, op, tt.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, env)
			checkShape(t, s, tt.shape, resp, env)
		})
	}
	forms := map[string]struct {
		fields      map[string]string
		field, name string
		file        []byte
		shape       string
	}{
		"audio/enhance":           {map[string]string{"typeId": string(ids.EnhancePodcast)}, "audio", "a.wav", wav(), "url"},
		"audio/split-audio":       {nil, "audio", "a.wav", wav(), "urls2"},
		"image/re-imagine":        {nil, "image", "a.png", pngOf(32, 16), "image"},
		"image/change-background": {map[string]string{"prompt": "beach"}, "image", "a.png", pngOf(32, 16), "image"},
	}
	for op, tt := range forms {
		t.Run(op, func(t *testing.T) {
			ct, body := form(tt.fields, tt.field, tt.name, tt.file)
			resp, env := send(t, s, op, ct, body, s.AccessKey)
			require.Equal(t, http.StatusOK, resp.StatusCode, env)
			checkShape(t, s, tt.shape, resp, env)
		})
	}
	assert.Len(t, s.Requests(), 16)
}

func checkShape(t *testing.T, s *creativetest.Server, shape string, resp *http.Response, env map[string]any) {
	t.Helper()
	if shape == "audio" {
		assert.Equal(t, "audio/mpeg", resp.Header.Get("Content-Type"))
		raw := []byte(env["raw"].(string))
		require.Greater(t, len(raw), 4)
		assert.Equal(t, []byte{0xff, 0xfb}, raw[:2], "an MPEG-1 Layer III frame header")
		return
	}
	assert.Equal(t, true, env["success"])
	assert.NotEmpty(t, env["message"])
	data := env["data"]
	switch shape {
	case "writer":
		obj := data.(map[string]any)
		assert.Equal(t, "English", obj["language"])
		assert.Len(t, obj["text"].(map[string]any)["choices"], 2)
	case "url":
		fetchFile(t, data.(string))
	case "urls2":
		list := data.([]any)
		require.Len(t, list, 2)
		for _, u := range list {
			fetchFile(t, u.(string))
		}
	case "image":
		decodeB64PNG(t, data.(map[string]any)["base64"].(string))
	case "images3":
		list := data.([]any)
		require.Len(t, list, 3)
		for _, o := range list {
			decodeB64PNG(t, o.(map[string]any)["base64"].(string))
		}
	}
}

func fetchFile(t *testing.T, u string) {
	t.Helper()
	resp, err := http.Get(u) // no key
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, fmt.Sprint(len(body)), resp.Header.Get("Content-Length"))
	switch {
	case strings.HasSuffix(u, ".wav"):
		assert.Equal(t, "audio/wav", resp.Header.Get("Content-Type"))
		assert.Equal(t, "WAVE", string(body[8:12]))
	case strings.HasSuffix(u, ".gif"):
		assert.Equal(t, "image/gif", resp.Header.Get("Content-Type"))
		assert.Equal(t, "GIF89a", string(body[:6]))
	default:
		t.Errorf("unexpected file %s", u)
	}
}

func decodeB64PNG(t *testing.T, b64 string) image.Image {
	t.Helper()
	raw, err := base64Decode(b64)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	return img
}

func TestBadRequestsGetThe400EnvelopeNamingTheField(t *testing.T) {
	s := creativetest.NewServer()
	defer s.Close()
	tests := []struct {
		name, op, body, want string
	}{
		{"a missing prompt", "audio/text-to-music", `{}`, "prompt: is required"},
		{"a prompt of the wrong type", "audio/text-to-music", `{"prompt":5}`, "prompt: must be a string, got a number"},
		{"a duration as a string", "audio/text-to-music", `{"prompt":"p","duration":"8"}`, "duration: must be a number, got a string"},
		{"a negative duration", "audio/text-to-music", `{"prompt":"p","duration":-1}`, "duration: must be a positive number, got -1"},
		{"11 images", "image/text-to-image", `{"prompt":"p","numberOfResults":11}`, "numberOfResults: must be between 1 and 10"},
		{"a fractional count", "image/text-to-image", `{"prompt":"p","numberOfResults":1.5}`, "numberOfResults: must be a whole number"},
		{"a missing count", "image/text-to-image", `{"prompt":"p"}`, "numberOfResults: is required"},
		{"an unknown style", "image/text-to-image", `{"prompt":"p","numberOfResults":1,"styleId":"6644b0c5ec3658a8e38dffff"}`, "styleId: unknown id"},
		{"a malformed camera", "image/text-to-image", `{"prompt":"p","numberOfResults":1,"cameraId":"close-up"}`, "cameraId: must be an id"},
		{"sizes that disagree", "image/text-to-image", `{"prompt":"p","numberOfResults":1,"imageSizeId":"6644b0c5ec3658a8e38d951b","dimensionsId":"6644b0c5ec3658a8e38d951c"}`, `dimensionsId: must be the same as imageSizeId ("6644b0c5ec3658a8e38d951b"), got "6644b0c5ec3658a8e38d951c"`},
		{"5 logos", "image/generate-logo", `{"prompt":"p","numberOfResults":5}`, "numberOfResults: must be between 1 and 4"},
		{"a QR without a url", "image/generate-qr", `{"prompt":"p"}`, "url: is required"},
		{"a QR url that is not http", "image/generate-qr", `{"url":"mailto:a@b.c","prompt":"p"}`, "url: must be an absolute http or https URL"},
		{"an unknown voice", "audio/text-to-speech", `{"prompt":"p","voiceId":"000000000000000000000000"}`, "voiceId: unknown id"},
		{"a scale of 100", "image/up-scale", `{"url":"https://x.example/a.png","scale":100}`, "scale: must be at most 8, got 100"},
		{"zero iterations", "video/infinite-zoom", `{"prompt":"p","numberOfIteration":0}`, "numberOfIteration: must be above 0, got 0"},
		{"writer-tool without inputs", "text/writer-tool", `{"language":"en","number":1,"useCase":"CoverLetter","action":"a","tone":"t"}`, "inputs: is required"},
		{"a cover letter input without skills", "text/writer-tool", `{"inputs":[{"jobRole":"r"}],"language":"en","number":1,"useCase":"CoverLetter","action":"a","tone":"t"}`, "inputs[0].jobSkills: is required"},
		{"not JSON", "audio/text-to-music", `prompt=p`, "body: not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, env := post(t, s, tt.op, tt.body)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			assert.Equal(t, false, env["success"])
			assert.Contains(t, env["message"], tt.want)
		})
	}
}

func TestFormsAreHeldToTheSpec(t *testing.T) {
	s := creativetest.NewServer()
	defer s.Close()
	tests := []struct {
		name, op    string
		fields      map[string]string
		field, file string
		content     []byte
		want        string
	}{
		{"text named .png", "image/re-imagine", nil, "image", "a.png", []byte("hello"), "image: must be a PNG, JPEG or WebP image"},
		{"a 1025 pixel wide image", "image/re-imagine", nil, "image", "a.png", pngOf(1025, 4), "image: must be at most 1024x1024 pixels, got 1025x4"},
		{"no image part", "image/re-imagine", nil, "", "", nil, "image: is required"},
		{"an empty upload", "audio/split-audio", nil, "audio", "a.wav", []byte{}, "audio: is empty"},
		{"no prompt", "image/change-background", nil, "image", "a.png", pngOf(4, 4), "prompt: is required"},
		{"an unknown enhancement type", "audio/enhance", map[string]string{"typeId": "664f30c0ba9c162a962f0000"}, "audio", "a.wav", wav(), "typeId: unknown id"},
		{"audio that is not audio", "audio/enhance", map[string]string{"typeId": string(ids.EnhanceMusic)}, "audio", "a.wav", []byte("text"), "audio: must be a WAV or MP3 file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct, body := form(tt.fields, tt.field, tt.file, tt.content)
			resp, env := send(t, s, tt.op, ct, body, s.AccessKey)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			assert.Contains(t, env["message"], tt.want)
		})
	}
	t.Run("JSON sent to a form operation", func(t *testing.T) {
		resp, env := post(t, s, "image/re-imagine", `{"image":"x"}`)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Contains(t, env["message"], "takes multipart/form-data")
	})
	t.Run("a form sent to a JSON operation", func(t *testing.T) {
		ct, body := form(map[string]string{"prompt": "p"}, "", "", nil)
		resp, env := send(t, s, "audio/text-to-music", ct, body, s.AccessKey)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Contains(t, env["message"], "takes application/json")
	})
	t.Run("an upload above the limit", func(t *testing.T) {
		small := creativetest.NewServer(creativetest.WithMaxUpload(1000))
		defer small.Close()
		ct, body := form(nil, "audio", "a.wav", bytes.Repeat([]byte{1}, 2000))
		resp, env := send(t, small, "audio/split-audio", ct, body, small.AccessKey)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Contains(t, env["message"], "larger than the 1000 bytes allowed")
	})
}

func TestKeyMethodAndPathAreChecked(t *testing.T) {
	s := creativetest.NewServer(creativetest.WithAccessKey("sesame"))
	defer s.Close()
	resp, env := send(t, s, "audio/text-to-music", "application/json", strings.NewReader(`{"prompt":"p"}`), "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, false, env["success"])
	resp, _ = send(t, s, "audio/text-to-music", "application/json", strings.NewReader(`{"prompt":"p"}`), "wrong")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	r, err := http.Get(s.URL + "/audio/v1/text-to-music")
	require.NoError(t, err)
	r.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, r.StatusCode)
	r, err = http.Post(s.URL+"/audio/v2/text-to-music", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	r.Body.Close()
	assert.Equal(t, http.StatusNotFound, r.StatusCode)
	r, err = http.Get(s.URL + "/files/nothing.wav")
	require.NoError(t, err)
	r.Body.Close()
	assert.Equal(t, http.StatusNotFound, r.StatusCode)
}

func TestRequestsAreRecordedWithoutTheKey(t *testing.T) {
	s := creativetest.NewServer()
	defer s.Close()
	post(t, s, "image/generate-qr", `{"url":"https://example.com","prompt":"p"}`)
	ct, body := form(map[string]string{"prompt": "beach"}, "image", "cat.png", pngOf(8, 8))
	send(t, s, "image/change-background", ct, body, s.AccessKey)
	post(t, s, "image/generate-qr", `{"prompt":"p"}`)

	reqs := s.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "image/generate-qr", reqs[0].Operation)
	assert.Equal(t, `{"url":"https://example.com","prompt":"p"}`, string(reqs[0].JSON))
	assert.Equal(t, "application/json", reqs[0].ContentType)
	assert.Equal(t, http.StatusOK, reqs[0].Status)
	assert.Empty(t, reqs[0].Header.Get("x-access-key"))
	require.Len(t, reqs[1].Parts, 2)
	assert.Equal(t, creativetest.Part{Name: "prompt", Value: "beach", Size: 5, SHA256: reqs[1].Parts[0].SHA256}, reqs[1].Parts[0])
	assert.Equal(t, "cat.png", reqs[1].Parts[1].FileName)
	assert.Equal(t, int64(len(pngOf(8, 8))), reqs[1].Parts[1].Size)
	assert.Equal(t, http.StatusBadRequest, reqs[2].Status)
	assert.Equal(t, 2, s.Count("image/generate-qr"))
	s.Reset()
	assert.Empty(t, s.Requests())
}

func TestFaultsFailTheNextCallsThenLetThemThrough(t *testing.T) {
	s := creativetest.NewServer()
	defer s.Close()
	s.Fail("audio/text-to-music", creativetest.Fault{Times: 2, Status: 503, Message: "busy", RetryAfter: "3"})
	s.Fail("audio/text-to-music", creativetest.Fault{Status: 502, Body: "<html>bad gateway</html>"})
	want := []struct {
		status int
		retry  string
		text   string
	}{{503, "3", "busy"}, {503, "3", "busy"}, {502, "", "bad gateway"}, {200, "", "success"}}
	for i, w := range want {
		resp, env := post(t, s, "audio/text-to-music", `{"prompt":"p"}`)
		assert.Equal(t, w.status, resp.StatusCode, "call %d", i)
		assert.Equal(t, w.retry, resp.Header.Get("Retry-After"), "call %d", i)
		assert.Contains(t, fmt.Sprint(env), w.text, "call %d", i)
	}
}

func TestADroppedConnectionGivesNoAnswer(t *testing.T) {
	s := creativetest.NewServer()
	defer s.Close()
	s.Fail("image/generate-qr", creativetest.Fault{Drop: true})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/image/v1/generate-qr", strings.NewReader(`{}`))
	req.Header.Set("x-access-key", s.AccessKey)
	_, err := http.DefaultClient.Do(req)
	assert.Error(t, err)
	assert.Equal(t, 0, s.Requests()[0].Status)
}

// In a synctest bubble, the Server in memory: the minute of delay would
// pass on the bubble's clock if the caller's going away did not end it.
func TestADelayEndsWhenTheClientGoesAway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := creativetest.StartInMemory(t)
		s.Fail("image/generate-qr", creativetest.Fault{Delay: time.Minute, Status: 500})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/image/v1/generate-qr", strings.NewReader(`{}`))
		req.Header.Set("x-access-key", s.AccessKey)
		start := time.Now()
		_, err := s.HTTPClient().Do(req)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "the client gave up at its deadline")
		synctest.Wait() // the Server sees the client gone
		require.Len(t, s.Requests(), 1, "the delay ended then, without an answer")
		assert.Equal(t, 0, s.Requests()[0].Status)
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
	})
}

func TestHandleReplacesAnOperation(t *testing.T) {
	s := creativetest.NewServer()
	defer s.Close()
	s.Handle("audio/text-to-music", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"success":true,"message":"mine","data":"https://mine.example/x.wav"}`)
	})
	_, env := post(t, s, "audio/text-to-music", `{"prompt":"p"}`)
	assert.Equal(t, "https://mine.example/x.wav", env["data"])
	s.Handle("audio/text-to-music", nil)
	_, env = post(t, s, "audio/text-to-music", `{"prompt":"p"}`)
	assert.True(t, strings.HasPrefix(env["data"].(string), s.URL+"/files/"))
	assert.Panics(t, func() { s.Handle("audio/nope", nil) })
	assert.Panics(t, func() { s.Fail("audio/nope", creativetest.Fault{}) })
}

func TestTheServerIsSafeForConcurrentUse(t *testing.T) {
	s := creativetest.NewServer()
	defer s.Close()
	s.Fail("image/generate-qr", creativetest.Fault{Times: 10, Status: 503})
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(s.URL+"/image/v1/generate-qr", "application/json", strings.NewReader(`{}`))
			if err == nil {
				resp.Body.Close()
			}
			_ = s.Requests()
		}()
	}
	wg.Wait()
	assert.Equal(t, 20, s.Count("image/generate-qr"))
}

func TestOperationsListsTheSixteen(t *testing.T) {
	assert.Len(t, creativetest.Operations(), 16)
}

func base64Decode(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }
