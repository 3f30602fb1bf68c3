package creative

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

// A 200 whose chunked body is cut (the connection closed inside a chunk,
// or before the last chunk) is an unknown outcome, for every kind of
// result: the service answered, so it did the work; the error matches
// ErrOutcomeUnknown and io.ErrUnexpectedEOF, and is never "not valid
// JSON". Each is sent once, counted at the server.
func TestACut200IsAnUnknownOutcome(t *testing.T) {
	png := base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 600)...))
	kinds := []struct {
		name  string
		ctype string
		body  string
		call  func(ctx context.Context, c *Client) error
	}{
		{"a JSON envelope (a URL)", "application/json", musicOK, func(ctx context.Context, c *Client) error { return music(ctx, c) }},
		{"base64 images", "application/json", `{"success":true,"message":"ok","data":[{"base64":"` + png + `"}]}`,
			func(ctx context.Context, c *Client) error {
				_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p", NumberOfResults: 1})
				return err
			}},
		{"a speech stream", "audio/mpeg", "ID3\x04\x00\x00\x00\x00\x00\x00" + strings.Repeat("\xff\xfb mp3 frame ", 200),
			func(ctx context.Context, c *Client) error {
				a, err := c.TextToSpeech(ctx, TextToSpeechRequest{Prompt: "p", VoiceID: ids.VoiceFemale1})
				if err != nil {
					return err
				}
				defer a.Close()
				_, err = io.Copy(io.Discard, a)
				return err
			}},
	}
	cuts := map[string]func(body string) string{
		"inside a chunk": func(body string) string {
			return fmt.Sprintf("%x\r\n%s", len(body), body[:len(body)/2])
		},
		"before the last chunk": func(body string) string {
			return fmt.Sprintf("%x\r\n%s\r\n", len(body)/2, body[:len(body)/2])
		},
	}
	for _, k := range kinds {
		for cname, cut := range cuts {
			t.Run(k.name+"/"+cname, func(t *testing.T) {
				srv := newRawServer(t, func(conn net.Conn, _ <-chan struct{}) {
					if readRequest(bufio.NewReader(conn)) != nil {
						return
					}
					_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: "+k.ctype+"\r\nTransfer-Encoding: chunked\r\n\r\n"+cut(k.body))
				})
				c := newTestClient(t, "http://"+srv.addr())
				err := k.call(context.Background(), c)
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrOutcomeUnknown)
				assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
				assert.NotContains(t, err.Error(), "not valid JSON")
				assert.EqualValues(t, 1, srv.conns.Load(), "sent once")
			})
		}
	}
}

// A JSON answer whose body ends where the connection closes (HTTP/1
// without a Content-Length or chunks) and stops inside its JSON was cut
// short: an unknown outcome, sent once, as a cut chunked answer is, never
// "not valid JSON". Whole, the same answer is read as usual.
func TestAJSONAnswerEndedByTheConnectionMidwayIsAnUnknownOutcome(t *testing.T) {
	png := base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 600)...))
	kinds := []struct {
		name string
		body string
		call func(ctx context.Context, c *Client) error
	}{
		{"a JSON envelope (a URL)", musicOK, func(ctx context.Context, c *Client) error { return music(ctx, c) }},
		{"base64 images", `{"success":true,"message":"ok","data":[{"base64":"` + png + `"}]}`,
			func(ctx context.Context, c *Client) error {
				_, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p"})
				return err
			}},
	}
	for _, k := range kinds {
		for _, keep := range []int{1, len(k.body) / 2, len(k.body) - 1, len(k.body)} {
			t.Run(fmt.Sprintf("%s/%d of %d bytes", k.name, keep, len(k.body)), func(t *testing.T) {
				srv := newRawServer(t, func(conn net.Conn, _ <-chan struct{}) {
					if readRequest(bufio.NewReader(conn)) != nil {
						return
					}
					_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"+k.body[:keep])
					_ = conn.Close()
				})
				c := newTestClient(t, "http://"+srv.addr())
				err := k.call(context.Background(), c)
				assert.EqualValues(t, 1, srv.conns.Load(), "sent once")
				if keep == len(k.body) {
					require.NoError(t, err)
					return
				}
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrOutcomeUnknown)
				assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
				assert.NotContains(t, err.Error(), "not valid JSON")
			})
		}
	}
}
