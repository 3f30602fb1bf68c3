package creative

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowImages is the encoding/json path that fastImages must agree with:
// the envelope check of callJSON, then decodeImages.
func slowImages(body []byte) ([]Image, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, err
	}
	if env.Success == nil || !*env.Success {
		return nil, errors.New("not a success")
	}
	if len(env.Data) == 0 || string(env.Data) == "null" {
		return nil, errors.New("no data")
	}
	return decodeImages(env.Data)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestFastImagesReadsTheShapesTheSpecAllows(t *testing.T) {
	one, two := b64("first image bytes"), b64("second image, longer than the first")
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"an object", `{"success":true,"message":"ok","data":{"base64":"` + one + `"}}`, []string{"first image bytes"}},
		{"a list", `{"success":true,"message":"ok","data":[{"base64":"` + one + `"},{"base64":"` + two + `"}]}`, []string{"first image bytes", "second image, longer than the first"}},
		{"a bare string", `{"success":true,"message":"ok","data":"` + two + `"}`, []string{"second image, longer than the first"}},
		{"keys in any order with space", " {\n \"data\" : [ { \"x\" : [1, 2.5e3, null, {\"y\": \"\\u00e9\"}] , \"base64\" : \"" + one + "\" } ] ,\"message\":null, \"success\" : true } \n", []string{"first image bytes"}},
		{"escaped slashes", `{"success":true,"data":{"base64":"` + strings.ReplaceAll(b64("??>>??>>"), "/", `\/`) + `"}}`, []string{"??>>??>>"}},
		{"unpadded", `{"success":true,"data":"` + strings.TrimRight(one, "=") + `"}`, []string{"first image bytes"}},
		{"a data URL", `{"success":true,"data":{"base64":"data:image/png;base64,` + one + `"}}`, []string{"first image bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ims, ok := fastImages([]byte(tt.body))
			require.True(t, ok)
			require.Len(t, ims, len(tt.want))
			for i, w := range tt.want {
				assert.Equal(t, w, string(ims[i].Data))
			}
			slow, err := slowImages([]byte(tt.body))
			require.NoError(t, err)
			assert.Equal(t, slow, ims)
		})
	}
}

func TestFastImagesLeavesWhatItDoesNotKnowToEncodingJSON(t *testing.T) {
	one := b64("image")
	for name, body := range map[string]string{
		"success false":                `{"success":false,"message":"no","data":{"base64":"` + one + `"}}`,
		"no success":                   `{"data":{"base64":"` + one + `"}}`,
		"no data":                      `{"success":true}`,
		"null data":                    `{"success":true,"data":null}`,
		"a key in another case":        `{"Success":true,"data":{"base64":"` + one + `"}}`,
		"BASE64":                       `{"success":true,"data":{"BASE64":"` + one + `"}}`,
		"an escaped key":               `{"success":true,"d\u0061ta":{"base64":"` + one + `"}}`,
		"a duplicate data":             `{"success":true,"data":{"base64":"` + one + `"},"data":"x"}`,
		"a message that is a number":   `{"success":true,"message":5,"data":{"base64":"` + one + `"}}`,
		"an escape other than slash":   `{"success":true,"data":{"base64":"` + one[:4] + `\n` + one[4:] + `"}}`,
		"invalid base64":               `{"success":true,"data":{"base64":"!!!!"}}`,
		"misplaced padding":            `{"success":true,"data":{"base64":"ab=c"}}`,
		"trailing garbage":             `{"success":true,"data":{"base64":"` + one + `"}} x`,
		"a trailing comma":             `{"success":true,"data":{"base64":"` + one + `"},}`,
		"an empty list":                `{"success":true,"data":[]}`,
		"a number for data":            `{"success":true,"data":7}`,
		"an object without base64":     `{"success":true,"data":{"url":"x"}}`,
		"a control character":          "{\"success\":true,\"message\":\"a\x01b\",\"data\":\"" + one + "\"}",
		"a bad number elsewhere":       `{"success":true,"n":01,"data":"` + one + `"}`,
		"an empty string":              `{"success":true,"data":""}`,
		"a second image invalid":       `{"success":true,"data":[{"base64":"` + one + `"},{"base64":"%%%%"}]}`,
		"an escaped first, bad second": `{"success":true,"data":[{"base64":"` + strings.ReplaceAll(b64("??>>"), "/", `\/`) + `"},{"base64":"%%"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			body := []byte(body)
			before := append([]byte(nil), body...)
			_, ok := fastImages(body)
			assert.False(t, ok)
			assert.Equal(t, before, body, "a refused body is left intact for encoding/json")
		})
	}
}

func TestFastImagesDecodesLargeImagesInPlace(t *testing.T) {
	var want [][]byte
	var b strings.Builder
	b.WriteString(`{"success":true,"message":"ok","data":[`)
	for i := 0; i < 3; i++ {
		img := bytes.Repeat([]byte{byte(i), 0xfb, 0x10, byte(i * 7)}, 300_001)
		want = append(want, img)
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"base64":"` + base64.StdEncoding.EncodeToString(img) + `"}`)
	}
	b.WriteString("]}")
	body := []byte(b.String())
	allocs := testing.AllocsPerRun(1, func() {
		cp := append([]byte(nil), body...)
		ims, ok := fastImages(cp)
		if !ok || len(ims) != 3 {
			t.Fatal("not decoded")
		}
	})
	ims, ok := fastImages(append([]byte(nil), body...))
	require.True(t, ok)
	for i := range want {
		assert.Equal(t, want[i], ims[i].Data)
	}
	assert.LessOrEqual(t, allocs, 4.0, "the copy, the span list and the image list")
}

func FuzzFastImages(f *testing.F) {
	one := b64("\x89PNG fuzz seed")
	for _, seed := range []string{
		`{"success":true,"message":"ok","data":{"base64":"` + one + `"}}`,
		`{"success":true,"message":"ok","data":[{"base64":"` + one + `"},{"base64":"` + b64("x") + `"}]}`,
		`{"success":true,"data":"` + one + `"}`,
		`{"data":{"id":[1,{"a":null}],"base64":"` + strings.ReplaceAll(b64("??>>"), "/", `\/`) + `"},"success":true}`,
		`{"success":true,"data":{"base64":"data:image/png;base64,` + one + `"}}`,
		`{"success":true,"data":{"base64":"YQ"}}`,
		`{"success":true,"data":{"base64":"YQ=="}}`,
		`{"success":false,"message":"no"}`,
		`{"success":true,"data":{"Base64":"YQ=="}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		slow, slowErr := slowImages(body)
		cp := append([]byte(nil), body...)
		fast, ok := fastImages(cp)
		if !ok {
			if !bytes.Equal(cp, body) {
				t.Fatalf("a refused body was changed")
			}
			return
		}
		if slowErr != nil {
			t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", slowErr, body)
		}
		if len(fast) != len(slow) {
			t.Fatalf("fast path found %d images, encoding/json %d", len(fast), len(slow))
		}
		for i := range fast {
			if !bytes.Equal(fast[i].Data, slow[i].Data) {
				t.Fatalf("image %d differs: %q vs %q", i, fast[i].Data, slow[i].Data)
			}
		}
	})
}
