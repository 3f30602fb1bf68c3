package creative

import (
	"bufio"
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

// keyIn says where text holds testKey in a form a reader could take back:
// as leak does (plain, escaped, or a piece of 12 bytes), in any case, or
// in base64 at any offset.
func keyIn(text string) string {
	if l := leak(text, testKey); l != "" {
		return l
	}
	if strings.Contains(strings.ToLower(text), strings.ToLower(testKey)) {
		return "the key, case changed"
	}
	for pad := 0; pad < 3; pad++ {
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			src := append(make([]byte, pad), testKey...)
			e := enc.EncodeToString(src)
			core := e[(pad*8+5)/6 : len(src)*8/6]
			if strings.Contains(text, core) {
				return "the key in base64"
			}
		}
	}
	return ""
}

// responseTexts are every text a caller can read from a captured response
// and the answers before it (Request.Response), with every verb.
func responseTexts(resp *http.Response) map[string]string {
	out := map[string]string{}
	for i := 0; resp != nil && i < 12; i++ {
		at := fmt.Sprintf("response %d ", i)
		out[at+"%+v"] = fmt.Sprintf("%+v", *resp)
		out[at+"%#v"] = fmt.Sprintf("%#v", *resp)
		out[at+"Status"] = resp.Status
		out[at+"Header"] = fmt.Sprintf("%#v", resp.Header)
		out[at+"Trailer"] = fmt.Sprintf("%#v", resp.Trailer)
		if resp.Request == nil {
			break
		}
		out[at+"Request"] = fmt.Sprintf("%+v", *resp.Request)
		out[at+"Request.Header"] = fmt.Sprintf("%#v", resp.Request.Header)
		resp = resp.Request.Response
	}
	return out
}

// A server that echoes the key anywhere in its answer (the status line, a
// header's name or value, a trailer; plain, upper-cased, in base64,
// escaped) gets it back to no caller: neither in the captured response
// and the answers before it, nor in an error.
func TestAnEchoedKeyReachesNoCaller(t *testing.T) {
	forms := map[string]string{
		"plain":      testKey,
		"upper-case": strings.ToUpper(testKey),
		"base64":     base64.RawURLEncoding.EncodeToString([]byte("u:" + testKey)),
		"escaped":    url.QueryEscape(testKey),
	}
	places := []struct {
		name string
		raw  func(status, echo string) string
	}{
		{"status line", func(status, echo string) string {
			return "HTTP/1.1 " + status + " " + echo + "\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
		}},
		{"header name", func(status, echo string) string {
			return "HTTP/1.1 " + status + " OK\r\nContent-Type: application/json\r\nX-" + echo + ": 1\r\nContent-Length: %d\r\n\r\n%s"
		}},
		{"header value", func(status, echo string) string {
			return "HTTP/1.1 " + status + " OK\r\nContent-Type: application/json\r\nX-Echo: " + echo + "\r\nContent-Length: %d\r\n\r\n%s"
		}},
		{"trailer", func(status, echo string) string {
			return "HTTP/1.1 " + status + " OK\r\nContent-Type: application/json\r\nTrailer: X-Echo\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\nX-Echo: " + echo + "\r\nX-" + echo + ": 1\r\n\r\n"
		}},
	}
	for fname, echo := range forms {
		for _, p := range places {
			for _, status := range []string{"200", "500"} {
				t.Run(p.name+"/"+fname+"/"+status, func(t *testing.T) {
					body := musicOK
					if status == "500" {
						body = `{"success":false,"message":"no"}`
					}
					srv := newRawServer(t, func(conn net.Conn, _ <-chan struct{}) {
						br := bufio.NewReader(conn)
						if readRequest(br) != nil {
							return
						}
						_, _ = fmt.Fprintf(conn, p.raw(status, echo), len(body), body)
					})
					c := newTestClient(t, "http://"+srv.addr(), WithMaxRetries(0))
					var resp *http.Response
					err := music(context.Background(), c, WithResponseInto(&resp))
					if status == "200" {
						require.NoError(t, err)
					} else {
						require.Error(t, err)
						for where, text := range errorTexts(err) {
							assert.Empty(t, keyIn(text), "%s: %q", where, text)
						}
						var ae *APIError
						require.True(t, errors.As(err, &ae))
						assert.Empty(t, keyIn(fmt.Sprintf("%#v", ae.Header)))
					}
					require.NotNil(t, resp)
					for where, text := range responseTexts(resp) {
						assert.Empty(t, keyIn(text), "%s: %q", where, text)
					}
				})
			}
		}
	}
}

// After a same-origin redirect, the captured response reaches the answer
// of the redirect and its request: neither holds the key.
func TestTheCapturedResponseChainHoldsNoKey(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo", r.Header.Get(headerAccessKey))
		if r.URL.Path != "/moved" {
			http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
			return
		}
		replyJSON(200, musicOK)(w, r)
	})
	c := ts.client(t)
	var resp *http.Response
	require.NoError(t, music(context.Background(), c, WithResponseInto(&resp)))
	require.NotNil(t, resp.Request)
	require.NotNil(t, resp.Request.Response, "the redirect's answer is reachable")
	require.NotNil(t, resp.Request.Response.Request)
	for where, text := range responseTexts(resp) {
		assert.Empty(t, keyIn(text), "%s: %q", where, text)
	}
}

// New never quotes the key, even when the two environment variables are
// swapped or the base URL holds it in its query.
func TestNewQuotesNoKeyAboutTheEnvironment(t *testing.T) {
	t.Setenv(EnvBaseURL, testKey)
	t.Setenv(EnvAccessKey, "https://api.example")
	_, err := New()
	require.Error(t, err)
	assert.Empty(t, keyIn(err.Error()), err.Error())
	assert.Contains(t, err.Error(), EnvBaseURL)

	t.Setenv(EnvBaseURL, "https://api.example/?key="+testKey)
	t.Setenv(EnvAccessKey, testKey)
	_, err = New()
	require.Error(t, err)
	assert.Empty(t, keyIn(err.Error()), err.Error())

	t.Setenv(EnvBaseURL, "https://api.example/"+strings.ToUpper(testKey)+"?q")
	_, err = New()
	require.Error(t, err)
	assert.Empty(t, keyIn(err.Error()), err.Error())
}

// Every text a successful answer fills in a result passes the redactor:
// a speech answer's Content-Type (Audio.ContentType, and so every verb
// that prints the *Audio) and the writer's texts, the key echoed in each
// form the redactor knows.
func TestTheTextsOfASuccessfulAnswerHoldNoKey(t *testing.T) {
	forms := map[string]string{
		"plain":          testKey,
		"hex":            hex.EncodeToString([]byte(testKey)),
		"upper-case hex": strings.ToUpper(hex.EncodeToString([]byte(testKey))),
		"base32":         base32.StdEncoding.EncodeToString([]byte(testKey)),
		"base32hex":      strings.ToLower(base32.HexEncoding.EncodeToString([]byte(testKey))),
		"base64":         base64.StdEncoding.EncodeToString([]byte("u:" + testKey)),
	}
	for name, echo := range forms {
		t.Run("speech's Content-Type/"+name, func(t *testing.T) {
			ts := newTestServer(t, answer(200, "audio/mpeg; echo="+echo, "ID3\x04\x00\x00\x00\x00\x00\x00 mp3 frames")(nil))
			c := newTestClient(t, ts.URL)
			a, err := c.TextToSpeech(context.Background(), TextToSpeechRequest{Prompt: "p", VoiceID: ids.VoiceFemale1})
			require.NoError(t, err)
			defer a.Close()
			for _, text := range []string{a.ContentType, fmt.Sprintf("%+v", a), fmt.Sprintf("%#v", a)} {
				assert.Empty(t, keyIn(text), "%q", text)
				assert.NotContains(t, strings.ToLower(text), strings.ToLower(echo[:16]))
			}
			assert.Contains(t, a.ContentType, "[redacted]")
			assert.Equal(t, ".mp3", a.Ext())
		})
		t.Run("the writer's texts/"+name, func(t *testing.T) {
			ts := newTestServer(t, answer(200, "application/json", envelopeOf(`{"language":"en `+echo+`","useCase":"`+echo+`","word_count":3,`+
				`"text":{"choices":[{"text":"Dear `+echo+`, hello","index":0,"word_count":3}]}}`))(nil))
			c := newTestClient(t, ts.URL)
			res, err := c.WriterTool(context.Background(), WriterToolRequest{UseCase: "x", Language: "en", Action: "a", Tone: "t", Inputs: []any{"b"}})
			require.NoError(t, err)
			assert.Contains(t, res.Choices[0].Text, "Dear ")
			assert.Contains(t, res.Choices[0].Text, "[redacted]")
			assert.Empty(t, keyIn(fmt.Sprintf("%+v", *res)))
		})
	}
}

// A raw call's answer and a call's RawAnswer are texts from the network
// too: the key echoed in them, as it is or in hex, reaches the caller
// only redacted, in the bytes, in a decoded value and in the kept copy.
func TestRawAnswersHoldNoKey(t *testing.T) {
	echo := testKey + " " + strings.ToUpper(hex.EncodeToString([]byte(testKey)))
	answer := `{"success":true,"message":"ok","data":{"url":"https://f.example/a.wav","note":"` + echo + `"}}`
	ts := newTestServer(t, replyJSON(200, answer))
	c := ts.client(t)
	ctx := context.Background()

	var raw []byte
	require.NoError(t, c.Post(ctx, "/x/v2/y", nil, &raw))
	var v struct {
		Data struct {
			Note string `json:"note"`
		} `json:"data"`
	}
	require.NoError(t, c.Post(ctx, "/x/v2/y", nil, &v))
	var kept RawAnswer
	require.NoError(t, c.Post(ctx, "/x/v2/y", nil, nil, WithRawAnswerInto(&kept)))
	var keptOfCall RawAnswer
	musicEcho := newTestServer(t, replyJSON(200, `{"success":true,"message":"`+echo+`","data":"https://f.example/a.wav"}`))
	_, err := musicEcho.client(t).TextToMusic(ctx, TextToMusicRequest{Prompt: "p"}, WithRawAnswerInto(&keptOfCall))
	require.NoError(t, err)
	for where, text := range map[string]string{"[]byte": string(raw), "value": v.Data.Note, "RawAnswer of Execute": kept.RawJSON(), "RawAnswer of a call": keptOfCall.RawJSON()} {
		assert.Empty(t, keyIn(text), "%s: %q", where, text)
		assert.Contains(t, text, "[redacted]", where)
	}
}
