package creative

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Long strings (skim.go) take a shorter road through the walk; every answer
// must come out as the whole walk and encoding/json would read it.
func TestLongImageStringsAreReadAsTheWholeWalkWouldReadThem(t *testing.T) {
	img := bytes.Repeat([]byte("\x89PNG\r\n\x1a\n long image/+ "), 1000) // 18 KB, base64 with '/' and '+'
	enc := base64.StdEncoding.EncodeToString(img)
	raw := base64.RawStdEncoding.EncodeToString(img[:len(img)-1])
	long := strings.Repeat("ab", skimMin)
	// One character escaped in a window of closingQuote's that ends before
	// the string does.
	big := bytes.Repeat(img, 3)
	bigEnc := base64.StdEncoding.EncodeToString(big)
	late := scanWindow + 1
	lateEscape := bigEnc[:late] + fmt.Sprintf(`\u%04x`, bigEnc[late]) + bigEnc[late+1:]
	wide := strings.Repeat("ab", scanWindow) // past a window
	for _, tc := range []struct {
		name, body string
		want       [][]byte // nil: an error
	}{
		{"an object with base64", `{"success":true,"data":{"base64":"` + enc + `"}}`, [][]byte{img}},
		{"two of them, and a long unrelated member", `{"x":"` + long + `","success":true,"data":[{"base64":"` + enc + `"},{"base64":"` + raw + `"}]}`, [][]byte{img, img[:len(img)-1]}},
		{"slashes escaped, as PHP writes them", `{"success":true,"data":"` + strings.ReplaceAll(enc, "/", `\/`) + `"}`, [][]byte{img}},
		{"one character escaped, past the first window", `{"success":true,"data":"` + lateEscape + `"}`, [][]byte{big}},
		{"a quote and a backslash escaped past the first window", `{"x":"` + wide + `\"\\","success":true,"data":"` + enc + `"}`, [][]byte{img}},
		{"a data URL", `{"success":true,"data":"data:image/png;base64,` + enc + `"}`, [][]byte{img}},
		{"a long member name", `{"` + long + `":1,"success":true,"data":"` + enc + `"}`, [][]byte{img}},
		{"a short string that looks like a placeholder", `{"p":"` + placeholder + `0","success":true,"data":"` + enc + `"}`, [][]byte{img}},
		{"a placeholder's text after a long string, where a decoder reads it", `{"success":true,"data":["` + enc + `","` + placeholder + `0"]}`, nil},
		{"a long image after more of other members than a lazy walk reads", `{"x":[` + strings.Repeat("12345,", lazyMax/6) + `0],"success":true,"data":"` + enc + `"}`, [][]byte{img}},
		{"a long image after a data URL's", `{"success":true,"data":["data:image/png;base64,` + bigEnc + `","` + enc + `"]}`, [][]byte{big, img}},
		{"a raw line break in the base64", `{"success":true,"data":"` + enc[:4096] + "\n" + enc[4096:] + `"}`, nil},
		{"a control character in a long member no decoder reads", `{"x":"` + long + "\x01" + `","success":true,"data":"` + enc + `"}`, nil},
		{"invalid UTF-8 in a long member no decoder reads", `{"x":"` + long + "\xff" + `","success":true,"data":"` + enc + `"}`, nil},
		{"two long member names alike", `{"` + long + `":1,"` + long + `":2,"success":true,"data":"` + enc + `"}`, nil},
		{"a long string, then broken JSON", `{"success":true,"data":"` + enc + `",]`, nil},
		{"a long string whose base64 is broken", `{"success":true,"data":"` + enc[:5000] + "*" + enc[5001:] + `"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, refErr := refImages([]byte(tc.body))
			got, err := gate([]byte(tc.body), images(10))
			if tc.want == nil {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrUnexpectedResponse)
				if !strings.Contains(tc.name, "base64 is broken") && !strings.Contains(tc.name, "UTF-8") && !strings.Contains(tc.name, "names alike") {
					assert.Error(t, refErr, "encoding/json refuses it too")
				}
				// The whole walk refuses it too.
				bd := &bodyDecoder{}
				assert.Error(t, bd.walk([]byte(tc.body), func(d *bodyDecoder) error {
					_, err := dataImages(d, 10)
					return err
				}))
				return
			}
			require.NoError(t, err)
			require.NoError(t, refErr)
			require.Len(t, got, len(tc.want))
			for i := range got {
				assert.Equal(t, tc.want[i], got[i].Data)
				assert.Equal(t, ref[i], got[i].Data)
			}
		})
	}
	t.Run("a long message of a failure is the message", func(t *testing.T) {
		_, err := gate([]byte(`{"success":false,"message":"`+long+`"}`), images(1))
		var ae *APIError
		require.ErrorAs(t, err, &ae)
		assert.False(t, errors.Is(err, ErrUnexpectedResponse))
		assert.True(t, strings.HasPrefix(ae.Message, "abab"), ae.Message[:20])
	})
	t.Run("a failure's message that reads as a placeholder is its own text", func(t *testing.T) {
		_, err := gate([]byte(`{"success":false,"data":"`+enc+`","message":"`+placeholder+`0"}`), images(1))
		var ae *APIError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, "\x00#0", ae.Message)
	})
	t.Run("an error after the walk speaks of the body", func(t *testing.T) {
		_, err := gate([]byte(`{"success":true,"data":{"base64":"`+enc+`"}} trailing`), images(1))
		require.ErrorIs(t, err, ErrUnexpectedResponse)
		assert.Contains(t, err.Error(), "more follows the envelope")
	})
}
