package creative

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnswersThatAreNotWhatTheOperationPromisesAreUnexpectedResponses(t *testing.T) {
	one := b64("image")
	for name, body := range map[string]string{
		"no success":                 `{"data":{"base64":"` + one + `"}}`,
		"no data":                    `{"success":true}`,
		"null data":                  `{"success":true,"data":null}`,
		"a key in another case":      `{"Success":true,"data":{"base64":"` + one + `"}}`,
		"BASE64":                     `{"success":true,"data":{"BASE64":"` + one + `"}}`,
		"a duplicate data":           `{"success":true,"data":{"base64":"` + one + `"},"data":"x"}`,
		"invalid base64":             `{"success":true,"data":{"base64":"!!!!"}}`,
		"misplaced padding":          `{"success":true,"data":{"base64":"ab=c"}}`,
		"trailing garbage":           `{"success":true,"data":{"base64":"` + one + `"}} x`,
		"a trailing comma":           `{"success":true,"data":{"base64":"` + one + `"},}`,
		"an empty list":              `{"success":true,"data":[]}`,
		"a number for data":          `{"success":true,"data":7}`,
		"an object without base64":   `{"success":true,"data":{"url":"x"}}`,
		"a control character":        "{\"success\":true,\"message\":\"a\x01b\",\"data\":\"" + one + "\"}",
		"a bad number elsewhere":     `{"success":true,"n":01,"data":"` + one + `"}`,
		"an empty string":            `{"success":true,"data":""}`,
		"a second image invalid":     `{"success":true,"data":[{"base64":"` + one + `"},{"base64":"%%%%"}]}`,
		"success a string":           `{"success":"true","data":"` + one + `"}`,
		"an array, not an object":    `[{"success":true}]`,
		"HTML":                       `<html>502 Bad Gateway</html>`,
		"more images than asked for": `{"success":true,"data":[` + strings.Repeat(`"`+one+`",`, 10) + `"` + one + `"]}`,
		"a data URL without base64":  `{"success":true,"data":"data:image/png,` + one + `"}`,
		"a control char in data URL": `{"success":true,"data":"data:image\u0001png;base64,` + one + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := gate([]byte(body), images(10))
			var ae *APIError
			require.ErrorAs(t, err, &ae)
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
			assert.Equal(t, 200, ae.StatusCode)
			assert.NotEmpty(t, ae.Message)
		})
	}
}

func TestSuccessFalseIsTheServicesFailureWithItsMessage(t *testing.T) {
	_, err := gate([]byte(`{"success":false,"message":"prompt rejected for gate-key-1234"}`), dataURLOf)
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.NotErrorIs(t, err, ErrUnexpectedResponse)
	assert.Equal(t, "prompt rejected for [redacted]", ae.Message)
}

// FuzzEnvelope feeds arbitrary bodies to every result decoder: none may
// panic, and none may return a zero value without an error.
func FuzzEnvelope(f *testing.F) {
	for _, seed := range []string{
		`{"success":true,"message":"ok","data":"https://f.example/a.wav"}`,
		`{"success":true,"message":"ok","data":["https://f.example/1.wav","https://f.example/2.wav"]}`,
		`{"success":true,"message":"ok","data":{"base64":"iVBORw0KGgo="}}`,
		`{"success":true,"message":"ok","data":[{"base64":"iVBORw0KGgo="},{"base64":"iVBO"}]}`,
		`{"success":true,"message":"ok","data":"iVBORw0KGgo="}`,
		`{"success":true,"data":{"language":"en","useCase":"CoverLetter","word_count":3,"text":{"choices":[{"text":"a b c","index":0,"word_count":3}]}}}`,
		`{"success":false,"message":"no"}`,
		`{"success":true}`,
		`<html>502</html>`,
		`{"success":tru`,
		`{"success":true,"data":null}`,
		`{"success":true,"data":{"text":{"choices":[{"index":"x"}]}}}`,
	} {
		f.Add([]byte(seed))
	}
	typed := func(t *testing.T, err error) {
		if err == nil {
			return
		}
		var ae *APIError
		if !errors.As(err, &ae) {
			t.Fatalf("error of type %T", err)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		u, err := gate(bytes.Clone(body), dataURLOf)
		typed(t, err)
		if err == nil && u == "" {
			t.Fatal("empty URL without error")
		}
		us, err := gate(bytes.Clone(body), dataURLs)
		typed(t, err)
		if err == nil && len(us) == 0 {
			t.Fatal("no URLs without error")
		}
		ims, err := gate(bytes.Clone(body), images(10))
		typed(t, err)
		if err == nil && len(ims) == 0 {
			t.Fatal("no images without error")
		}
		im, err := gate(bytes.Clone(body), oneImage)
		typed(t, err)
		if err == nil && len(im.Data) == 0 {
			t.Fatal("empty image without error")
		}
		w, err := gate(bytes.Clone(body), dataWriter)
		typed(t, err)
		if err == nil && (w == nil || len(w.Choices) == 0) {
			t.Fatal("no choices without error")
		}
	})
}
