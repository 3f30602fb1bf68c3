package creative

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestErrorsAreTypedAndClassified(t *testing.T) {
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = 'x'
	}
	tests := []struct {
		name     string
		status   int
		body     string
		ctype    string
		sentinel error
		message  string
	}{
		{"a 400 envelope is an invalid request with the service's message", 400, `{"success":false,"message":"prompt is too long"}`, "application/json", ErrInvalidRequest, "prompt is too long"},
		{"a 401 is unauthorized", 401, `{"success":false,"message":"bad key"}`, "application/json", ErrUnauthorized, "bad key"},
		{"a 403 is unauthorized", 403, `forbidden`, "text/plain", ErrUnauthorized, "forbidden"},
		{"a 404 says what came", 404, `<html>nope</html>`, "text/html", nil, "body is not the JSON envelope (text/html)"},
		{"a 200 with success false carries the message", 200, `{"success":false,"message":"quota used up"}`, "application/json", nil, "quota used up"},
		{"a 200 HTML page is unexpected", 200, `<html><body>maintenance</body></html>`, "text/html", ErrUnexpectedResponse, "maintenance"},
		{"a 200 with broken JSON is unexpected", 200, `{"success":tru`, "application/json", ErrUnexpectedResponse, "not the JSON envelope"},
		{"a 200 without data is unexpected", 200, `{"success":true,"message":"ok"}`, "application/json", ErrUnexpectedResponse, "carries no data"},
		{"a 200 without success is unexpected", 200, `{"data":"x"}`, "application/json", ErrUnexpectedResponse, "no success field"},
		{"a 200 with data of the wrong shape is unexpected", 200, `{"success":true,"message":"ok","data":42}`, "application/json", ErrUnexpectedResponse, "data is a number, want a non-empty URL string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			c := newTestClient(t, ts.URL)
			u, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
			assert.Empty(t, u, "no zero value is presented as success")
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, "audio/text-to-music", apiErr.Operation)
			assert.Equal(t, tt.status, apiErr.StatusCode)
			assert.Equal(t, 1, apiErr.Attempts)
			assert.Contains(t, apiErr.Message, tt.message)
			if tt.sentinel != nil {
				assert.ErrorIs(t, err, tt.sentinel)
			}
			for _, other := range []error{ErrInvalidRequest, ErrUnauthorized, ErrRateLimited, ErrServer, ErrUnexpectedResponse} {
				if other != tt.sentinel {
					assert.False(t, errors.Is(err, other), "must not match %v", other)
				}
			}
		})
	}

	t.Run("the kept body is bounded to 64 KiB", func(t *testing.T) {
		ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(502)
			_, _ = w.Write(big)
		})
		c := newTestClient(t, ts.URL, WithMaxRetries(0))
		_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Len(t, apiErr.Body, 64<<10)
		assert.ErrorIs(t, err, ErrServer)
	})
}

func TestErrorMessagesReadAsTheStyleSays(t *testing.T) {
	e := &APIError{Operation: "image/generate-qr", StatusCode: 502, Attempts: 3, Message: "bad gateway"}
	assert.Equal(t, "creative: image/generate-qr: HTTP 502 after 3 attempts: bad gateway", e.Error())
	v := &ValidationError{Operation: "image/text-to-image", Field: "numberOfResults", Rule: "must be between 1 and 10", Value: "11"}
	assert.Equal(t, "creative: image/text-to-image: numberOfResults must be between 1 and 10, got 11", v.Error())
	n := &NetworkError{Operation: "audio/enhance", Attempts: 3, Err: io.ErrUnexpectedEOF}
	assert.Equal(t, "creative: audio/enhance: 3 attempts: unexpected EOF", n.Error())
	assert.ErrorIs(t, n, io.ErrUnexpectedEOF)
}
