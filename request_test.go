package creative

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

// Request types marshal with the wire's field names, so that a request
// logged as JSON reads as the service's documentation does.

func TestTextToImageRequestMarshalsWithTheWireNames(t *testing.T) {
	b, err := json.Marshal(TextToImageRequest{
		Prompt:          "a fox",
		NumberOfResults: 2,
		ImageSizeID:     ids.Size3x2,
		StyleID:         ids.StyleAnime,
		CameraID:        ids.CameraCloseUp,
		ColorID:         ids.ColorVibrant,
		LightingID:      ids.LightingGoldenHour,
	})
	require.NoError(t, err)
	assert.JSONEq(t, `{
		"prompt": "a fox",
		"numberOfResults": 2,
		"imageSizeId": "`+string(ids.Size3x2)+`",
		"styleId": "`+string(ids.StyleAnime)+`",
		"cameraId": "`+string(ids.CameraCloseUp)+`",
		"colorId": "`+string(ids.ColorVibrant)+`",
		"lightingId": "`+string(ids.LightingGoldenHour)+`"
	}`, string(b))

	b, err = json.Marshal(TextToImageRequest{Prompt: "a fox", NumberOfResults: 1})
	require.NoError(t, err)
	assert.Equal(t, `{"prompt":"a fox","numberOfResults":1}`, string(b), "unset ids are left out")
}

func TestEveryJSONRequestTypeHasATagOnEveryField(t *testing.T) {
	for _, v := range []any{
		TextToImageRequest{}, GenerateLogoRequest{}, GenerateQRRequest{}, UpScaleRequest{},
		RemoveBackgroundRequest{}, ColorImageRequest{}, EnhanceImageRequest{},
		TextToMusicRequest{}, TextToSpeechRequest{}, WriterToolRequest{},
		InfiniteZoomRequest{}, RemoveVideoBackgroundRequest{},
	} {
		typ := reflect.TypeOf(v)
		for f := range typ.Fields() {
			if f.IsExported() {
				assert.NotEmpty(t, f.Tag.Get("json"), "%s.%s", typ.Name(), f.Name)
			}
		}
	}
}

func TestWithHeader(t *testing.T) {
	for _, p := range placements {
		t.Run(p.name+": sent on every attempt", func(t *testing.T) {
			ss := newStampServer(t, replies(503, 200))
			c, call := p.put(t, ss.testServer, WithHeader("x-tenant", "acme"), WithHeader("X-Tenant", "beta"), WithHeader("Accept-Language", "de"))
			require.NoError(t, music(context.Background(), c, call...))
			for i := 1; i <= 2; i++ {
				assert.Equal(t, []string{"acme", "beta"}, ss.header(i).Values("X-Tenant"), "attempt %d", i)
				assert.Equal(t, "de", ss.header(i).Get("Accept-Language"))
				assert.Equal(t, testKey, ss.header(i).Get("X-Access-Key"))
			}
		})
	}
	t.Run("a call's headers add to the client's, for that call only", func(t *testing.T) {
		ss := newStampServer(t, replies(200))
		c := newTestClient(t, ss.URL, WithHeader("X-App", "shop"))
		require.NoError(t, music(context.Background(), c, WithHeader("X-Job", "42")))
		require.NoError(t, music(context.Background(), c))
		assert.Equal(t, "shop", ss.header(1).Get("X-App"))
		assert.Equal(t, "42", ss.header(1).Get("X-Job"))
		assert.Equal(t, "shop", ss.header(2).Get("X-App"))
		assert.Empty(t, ss.header(2).Values("X-Job"))
	})

	refused := []struct {
		name, key, value, want string
	}{
		{"x-access-key", "x-access-key", "other", "X-Access-Key is set by the client"},
		{"Content-Type", "Content-Type", "text/plain", "Content-Type is set by the client"},
		{"content-length in lower case", "content-length", "5", "Content-Length is set by the client"},
		{"User-Agent", "USER-AGENT", "bot", "User-Agent is set by the client"},
		{"Accept, which the client sets per operation", "accept", "text/plain", "Accept is set by the client"},
		{"a line break in the value", "X-A", "a\r\nX-Injected: 1", "control character"},
		{"a NUL in the value", "X-A", "a\x00b", "control character"},
		{"a space in the name", "X A", "v", "not a valid header name"},
		{"a colon in the name", "X-A:", "v", "not a valid header name"},
		{"an empty name", "", "v", "not a valid header name"},
	}
	for _, tt := range refused {
		t.Run("refused by New: "+tt.name, func(t *testing.T) {
			_, err := New(WithBaseURL("https://api.example.com"), WithAccessKey("k"), WithHeader(tt.key, tt.value))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
		t.Run("refused by a call before anything is sent: "+tt.name, func(t *testing.T) {
			ss := newStampServer(t, replies(200))
			err := music(context.Background(), newTestClient(t, ss.URL), WithHeader(tt.key, tt.value))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, 0, ss.count())
		})
	}
}

func TestWithUserAgent(t *testing.T) {
	base := fmt.Sprintf("creative-go/%s (%s)", Version, runtime.Version())
	ss := newStampServer(t, replies(200))
	c := newTestClient(t, ss.URL, WithUserAgent("shop/3"))
	require.NoError(t, music(context.Background(), c))
	require.NoError(t, music(context.Background(), c, WithUserAgent("job/42")))
	assert.Equal(t, base+" shop/3", ss.header(1).Get("User-Agent"))
	assert.Equal(t, base+" shop/3 job/42", ss.header(2).Get("User-Agent"), "a call's is appended to the client's")

	for _, bad := range []string{"shop/3\r\nX-Injected: 1", "shop\n", "shop\x00", "shop\x7f"} {
		_, err := New(WithBaseURL("https://api.example.com"), WithAccessKey("k"), WithUserAgent(bad))
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "control characters")
		assert.Error(t, music(context.Background(), c, WithUserAgent(bad)), "%q on a call", bad)
	}
	assert.Equal(t, 2, ss.count(), "the refused calls sent nothing")
}

func TestTheWireCarriesEveryHeaderAndTheExactJSON(t *testing.T) {
	c, mt := mockClient(t, "https://api.example.com", WithUserAgent("my-app/2"))
	var got *http.Request
	var body []byte
	mt.RegisterResponder(http.MethodPost, "https://api.example.com/audio/v1/text-to-music",
		func(r *http.Request) (*http.Response, error) {
			got = r
			body, _ = io.ReadAll(r.Body)
			return httpmock.NewStringResponse(200, `{"success":true,"message":"ok","data":"https://files.example.com/a.wav"}`), nil
		})

	u, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "jazz", Duration: 12})
	require.NoError(t, err)
	assert.Equal(t, URL("https://files.example.com/a.wav"), u)
	assert.Equal(t, http.MethodPost, got.Method)
	assert.Equal(t, `{"prompt":"jazz","duration":12}`, string(body))
	assert.Equal(t, int64(len(body)), got.ContentLength)
	assert.Equal(t, testKey, got.Header.Get("x-access-key"))
	assert.Equal(t, "application/json", got.Header.Get("Content-Type"))
	assert.ElementsMatch(t, []string{"Content-Type", headerAccessKey, "User-Agent"}, slices.Collect(maps.Keys(got.Header)),
		"the spec's headers and the User-Agent: no Accept, since an operation answers JSON whatever it is asked")
	assert.Equal(t, fmt.Sprintf("creative-go/%s (%s) my-app/2", Version, runtime.Version()), got.Header.Get("User-Agent"))

	_, err = c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "jazz"})
	require.NoError(t, err)
	assert.Equal(t, `{"prompt":"jazz"}`, string(body), "an unset duration is left to the service's default")
}

func TestAMultipartUploadHasItsPartsAndAnExactContentLength(t *testing.T) {
	wav := append([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), make([]byte, 100)...)
	type part struct{ name, filename, ctype, content string }
	var parts []part
	var contentLength int64
	var read int64
	var accept []string
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		contentLength = r.ContentLength
		accept = r.Header.Values("Accept")
		mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if !assert.NoError(t, err) || !assert.Equal(t, "multipart/form-data", mt) {
			return
		}
		cr := &countingReader{r: r.Body}
		mr := multipart.NewReader(cr, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			parts = append(parts, part{p.FormName(), p.FileName(), p.Header.Get("Content-Type"), string(b)})
		}
		_, _ = io.Copy(io.Discard, cr)
		read = cr.n
		replyJSON(200, `{"success":true,"message":"ok","data":"http://127.0.0.1/x.wav"}`)(w, r)
	})
	c := newTestClient(t, ts.URL)
	_, err := c.EnhanceAudio(context.Background(), EnhanceAudioRequest{Audio: FileFromBytes("talk.mp3", wav), TypeID: "664f30c0ba9c162a962f75b6"})
	require.NoError(t, err)
	assert.Equal(t, []part{
		{"typeId", "", "", "664f30c0ba9c162a962f75b6"},
		{"audio", "talk.mp3", "audio/wav", string(wav)},
	}, parts, "the type comes from the bytes, not the name")
	assert.Equal(t, read, contentLength)
	assert.Empty(t, accept, "an upload's answer is the JSON envelope whatever it asks for")
}

func TestPathsJoinTheBaseURLWithoutDoubledOrDroppedSlashes(t *testing.T) {
	tests := []struct{ base, want string }{
		{"https://api.example.com", "https://api.example.com/video/v1/infinite-zoom"},
		{"https://api.example.com/", "https://api.example.com/video/v1/infinite-zoom"},
		{"https://gw.example.com/creative", "https://gw.example.com/creative/video/v1/infinite-zoom"},
		{"https://gw.example.com/creative/", "https://gw.example.com/creative/video/v1/infinite-zoom"},
		{"https://gw.example.com:8443/a/b//", "https://gw.example.com:8443/a/b/video/v1/infinite-zoom"},
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			c, mt := mockClient(t, tt.base)
			mt.RegisterResponder(http.MethodPost, tt.want, httpmock.NewStringResponder(200, `{"success":true,"message":"ok","data":"https://f.example/z.gif"}`))
			_, err := c.InfiniteZoom(context.Background(), InfiniteZoomRequest{Prompt: "p"})
			require.NoError(t, err)
			assert.Equal(t, 1, mt.GetCallCountInfo()["POST "+tt.want])
		})
	}
}

// Calls of one Client at once each send their own headers: those of a
// call's options and middleware go with that call alone, and the calls
// without options, which share the Client's header, send it whole.
func TestCallsAtOnceEachSendTheirOwnHeaders(t *testing.T) {
	ss := newStampServer(t, func(_ int, w http.ResponseWriter, r *http.Request) { replyJSON(200, musicOK)(w, r) })
	c := newTestClient(t, ss.URL)
	const workers, calls = 8, 4
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range calls {
				var opts []Option
				if g%2 == 1 {
					job := fmt.Sprintf("%d-%d", g, i)
					opts = []Option{WithHeader("X-Job", job), WithMiddleware(func(req *http.Request, next MiddlewareNext) (*http.Response, error) {
						req.Header.Set("X-Mw", job)
						req.Header.Set("User-Agent", "changed/"+job)
						return next(req)
					})}
				}
				assert.NoError(t, music(context.Background(), c, opts...))
			}
		})
	}
	wg.Wait()
	require.Equal(t, workers*calls, ss.count())
	ua := fmt.Sprintf("creative-go/%s (%s)", Version, runtime.Version())
	plain := 0
	for i := 1; i <= ss.count(); i++ {
		h := ss.header(i)
		assert.Equal(t, testKey, h.Get(headerAccessKey))
		assert.Equal(t, "application/json", h.Get("Content-Type"))
		if job := h.Get("X-Job"); job != "" {
			assert.Equal(t, job, h.Get("X-Mw"))
			assert.Equal(t, "changed/"+job, h.Get("User-Agent"))
			continue
		}
		plain++
		assert.Empty(t, h.Values("X-Mw"), "request %d", i)
		assert.Equal(t, ua, h.Get("User-Agent"), "request %d", i)
	}
	assert.Equal(t, workers*calls/2, plain)
}
