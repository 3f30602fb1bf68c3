package creative

// The key, everywhere: servers that echo the access key in every place they
// can, and a check that no text a user can get from the error, or from the
// Debug log, holds it in any form or in part.

import (
	"bytes"
	"context"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

// ownKey is a key given to one call, with the characters of base64 that
// URL escaping changes.
const ownKey = "pc+Zm9vYmFy/LEAK=Q2hlY2s="

// htmlKey is a key given to one call, with every character HTML escapes.
const htmlKey = `hk&<>"'-HTMLLEAKCHECK-1f9e`

// keyCase is a server that echoes the key it is given (or knows from
// earlier calls) somewhere, and a call to it.
type keyCase struct {
	name  string
	serve func(k string) http.HandlerFunc
	call  func(ctx context.Context, c *Client, base string, opts []Option) error
}

func musicWith(ctx context.Context, c *Client, _ string, opts []Option) error {
	_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"}, opts...)
	return err
}

func imageWith(ctx context.Context, c *Client, _ string, opts []Option) error {
	_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p", NumberOfResults: 1}, opts...)
	return err
}

// straddle returns text of n bytes with k's first half before byte n and
// the rest after it.
func straddle(n int, k string) string {
	return strings.Repeat("x", n-len(k)/2) + k + strings.Repeat("x", 64)
}

func keyCases() []keyCase {
	esc := func(k string) string { return url.PathEscape(k) + "?k=" + url.QueryEscape(k) }
	redirect := func(status int, loc func(k string) string) func(string) http.HandlerFunc {
		return func(k string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Location", loc(k))
				w.WriteHeader(status)
			}
		}
	}
	reply := func(status int, ctype string, body func(k string) string, header ...string) func(string) http.HandlerFunc {
		return func(k string) http.HandlerFunc {
			h := make([]string, len(header))
			for i, v := range header {
				h[i] = strings.ReplaceAll(v, "KEY", k)
			}
			return answer(status, ctype, body(k), h...)(nil)
		}
	}
	message := func(m string) string { return `{"success":false,"message":` + jsonString(m) + `}` }
	return []keyCase{
		{"a 400 envelope whose message holds the key, plainly and with escaped slashes",
			reply(400, "application/json", func(k string) string {
				return `{"success":false,"message":"key ` + k + ` or ` + strings.ReplaceAll(k, "/", `\/`) + ` is not valid"}`
			}), musicWith},
		{"a 400 envelope whose message holds the key in hex, lower and upper case, and in base32 of both alphabets",
			reply(400, "application/json", func(k string) string {
				h := hex.EncodeToString([]byte(k))
				return message("key " + h + " or " + strings.ToUpper(h) + " or " + base32.StdEncoding.EncodeToString([]byte(k)) +
					" or " + strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte("xy"+k))))
			}, "X-Echo", "KEY"), musicWith},
		{"a 502 whose headers hold the key in hex and base32",
			func(k string) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("X-Request-Id", strings.ToUpper(hex.EncodeToString([]byte(k))))
					w.Header().Set("X-Echo", base32.StdEncoding.EncodeToString([]byte(k)))
					w.Header().Set("Content-Type", "text/plain; k="+base32.HexEncoding.EncodeToString([]byte(k)))
					w.WriteHeader(502)
				}
			}, musicWith},
		{"a 200 with success false whose message holds the key",
			reply(200, "application/json", func(k string) string { return message("denied for " + k) }), musicWith},
		{"a 502 HTML page with the key in its body, Content-Type and headers",
			reply(502, `text/html; charset="KEY"`, func(k string) string { return "<html>bad gateway for " + k + "</html>" },
				"X-Request-Id", "KEY", "Set-Cookie", "s=KEY", "Link", "<https://x.example/KEY>", "X-Echo", "KEY"), musicWith},
		{"a 400 envelope whose message holds the key HTML-escaped",
			reply(400, "application/json", func(k string) string { return message("bad key <b>" + html.EscapeString(k) + "</b>") }), musicWith},
		{"a 502 HTML page with the key escaped by two kinds of template",
			reply(502, "text/html", func(k string) string {
				py := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#x27;").Replace(k)
				return "<html><p>" + html.EscapeString(k) + "</p><p title=\"" + py + "\">gateway</p></html>"
			}), musicWith},
		{"a 302 to a URL whose path and query hold the key",
			redirect(http.StatusFound, func(k string) string { return "/r/" + esc(k) }), musicWith},
		{"a redirect loop through a URL holding the key",
			redirect(http.StatusTemporaryRedirect, func(k string) string { return "/loop/" + esc(k) }), musicWith},
		{"a redirect to an unparsable Location holding the key",
			redirect(http.StatusTemporaryRedirect, func(k string) string { return "http://%zz/" + esc(k) }), musicWith},
		{"a redirect to an ftp URL holding the key",
			redirect(http.StatusTemporaryRedirect, func(k string) string { return "ftp://127.0.0.1/" + esc(k) }), musicWith},
		{"a 200 whose data is a javascript: URL holding the key",
			reply(200, "application/json", func(k string) string { return envelopeOf(jsonString("javascript:" + k)) }), musicWith},
		{"a 200 whose data is a relative URL with the key across its 200th byte",
			reply(200, "application/json", func(k string) string { return envelopeOf(jsonString("/" + straddle(200, k))) }), musicWith},
		{"a 200 of text with the key across the 120th byte",
			reply(200, "text/plain", func(k string) string { return straddle(120, k) }), musicWith},
		{"a 200 of broken JSON with the key across the 1 KiB kept",
			reply(200, "application/json", func(k string) string { return `{"success":true,"data":"` + straddle(1024-24, k) + `",]` }), imageWith},
		{"a 200 of JSON whose member is named by the key, then broken",
			reply(200, "application/json", func(k string) string { return `{"success":true,` + jsonString(k) + `:}` }), musicWith},
		{"a 400 of text with the key across 64 KiB",
			reply(400, "text/plain", func(k string) string { return straddle(maxErrorBody, k) }), musicWith},
		{"a 400 whose message has the key across 1 KiB",
			reply(400, "application/json", func(k string) string { return message(straddle(maxMessage, k)) }), musicWith},
		{"a 429 with the key in its headers and message",
			reply(429, "application/json", func(k string) string { return message("slow down, " + k) },
				"Retry-After", "99999", "X-Ratelimit-Key", "KEY"), musicWith},
		{"a gzip-encoded 400 holding the key",
			func(k string) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Encoding", "gzip")
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(400)
					_, _ = w.Write(gzipMember([]byte(message("bad key " + k))))
				}
			}, musicWith},
		{"speech: an envelope holding the key, sent as audio/mpeg",
			reply(200, "audio/mpeg", func(k string) string { return `{"success":true,"message":` + jsonString(k) + `,"data":"x"}` }),
			func(ctx context.Context, c *Client, base string, opts []Option) error {
				_, err := c.TextToSpeech(ctx, TextToSpeechRequest{Prompt: "p", VoiceID: ids.VoiceFemale1}, opts...)
				return err
			}},
		{"speech: HTML holding the key, as audio/mpeg with the key as a parameter",
			reply(200, "audio/mpeg; key=KEY", func(k string) string { return "<html>" + k + "</html>" }),
			func(ctx context.Context, c *Client, base string, opts []Option) error {
				_, err := c.TextToSpeech(ctx, TextToSpeechRequest{Prompt: "p", VoiceID: ids.VoiceFemale1}, opts...)
				return err
			}},
		{"a 200 whose data is an https URL holding the key, plainly and escaped",
			reply(200, "application/json", func(k string) string {
				return envelopeOf(jsonString("https://cdn.example/" + url.PathEscape(k) + "/a.wav?k=" + url.QueryEscape(k) + "&raw=" + k))
			}), musicWith},
		{"a Download answered with a 404 that echoes the key",
			func(k string) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("X-Echo", "/files/"+esc(k))
					http.Error(w, "no file at /files/"+esc(k)+" ("+k+")", 404)
				}
			},
			func(ctx context.Context, c *Client, base string, opts []Option) error {
				_, err := c.Download(ctx, URL(base+"/files/a.bin"), io.Discard, opts...)
				return err
			}},
		{"a Download redirected in a loop through URLs holding the key",
			redirect(http.StatusFound, func(k string) string { return "/dl/" + esc(k) }),
			func(ctx context.Context, c *Client, base string, opts []Option) error {
				_, err := c.Download(ctx, URL(base+"/files/a.bin"), io.Discard, opts...)
				return err
			}},
	}
}

func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestHostileServersNeverLeakTheKey(t *testing.T) {
	modes := []struct {
		name string
		opts []Option // the call's
		keys []string // what the server echoes, and what must not leak
	}{
		{"the Client's key", nil, []string{testKey}},
		// The server knows the Client's key from earlier calls, and echoes it
		// too.
		{"a call's own key", []Option{WithAccessKey(ownKey)}, []string{ownKey, testKey}},
		// A key with the characters HTML escapes, which a page echoes as
		// character references.
		{"a key holding HTML's special characters", []Option{WithAccessKey(htmlKey)}, []string{htmlKey, testKey}},
	}
	refused := "http://" + refusedAddr(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			echo := strings.Join(m.keys, " ")
			check := func(t *testing.T, err error) {
				t.Helper()
				require.Error(t, err)
				t.Logf("error: %.200s", err.Error())
				for where, text := range errorTexts(err) {
					if l := leak(text, m.keys...); l != "" {
						t.Errorf("%s holds %s: %.300q", where, l, text)
					}
				}
				for _, text := range causes(err) {
					if l := leak(text, m.keys...); l != "" {
						t.Errorf("a cause holds %s: %.300q", l, text)
					}
				}
			}
			for _, kc := range keyCases() {
				t.Run(kc.name, func(t *testing.T) {
					ts := newTestServer(t, kc.serve(echo))
					c := newTestClient(t, ts.URL, WithLogger(logger), WithMaxRetries(1))
					ctx, cancel := context.WithTimeout(context.Background(), safety)
					defer cancel()
					check(t, kc.call(ctx, c, ts.URL, m.opts))
				})
			}
			t.Run("a Download redirected to a URL holding the key, not followed", func(t *testing.T) {
				ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, refused+"/files/"+url.PathEscape(m.keys[0])+"?k="+url.QueryEscape(m.keys[0]), http.StatusTemporaryRedirect)
				})
				c := newTestClient(t, ts.URL, WithLogger(logger), WithMaxRetries(1))
				_, err := c.Download(context.Background(), URL(ts.URL+"/files/a.bin"), io.Discard, m.opts...)
				check(t, err)
				assert.ErrorIs(t, err, ErrUnexpectedResponse)
				assert.Contains(t, err.Error(), "/files/[redacted]?k=[redacted]")
			})
			t.Run("a Download URL holding the key, refused before it is sent", func(t *testing.T) {
				ts := newTestServer(t, answer(200, "audio/wav", "RIFF")(nil))
				c := newTestClient(t, ts.URL, WithLogger(logger))
				_, err := c.Download(context.Background(), URL(ts.URL+"/files/"+url.PathEscape(m.keys[0])+"?k="+url.QueryEscape(m.keys[0])), io.Discard, m.opts...)
				check(t, err)
				var ve *ValidationError
				assert.ErrorAs(t, err, &ve)
				assert.Zero(t, ts.hits.Load(), "requests sent")
			})
			t.Run("a Download URL that is not http(s), holding the key", func(t *testing.T) {
				c := newTestClient(t, refused, WithLogger(logger))
				_, err := c.Download(context.Background(), URL("ftp://127.0.0.1/"+m.keys[0]), io.Discard, m.opts...)
				check(t, err)
			})
			require.NotEmpty(t, logs.String())
			for _, line := range strings.Split(logs.String(), "\n") {
				if l := leak(line, m.keys...); l != "" {
					t.Errorf("a log line holds %s: %.300q", l, line)
				}
			}
		})
	}
}
