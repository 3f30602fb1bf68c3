package creative

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gate runs body through the answer gate as a 200 of an operation whose
// data decoder is data, with the access key "gate-key-1234".
func gate[T any](body []byte, data func(*bodyDecoder) (T, error)) (T, error) {
	rs := &response{
		Response: &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: &http.Request{}},
		cl:     &call{op: "test/op", s: &settings{maxBytes: DefaultMaxResponseBytes}, keys: []string{"gate-key-1234"}, redactor: newRedactor([]string{"gate-key-1234"})},
		cancel: func() {},
	}
	var v T
	err := rs.decodeEnvelope(inPlace[T](), func(d *bodyDecoder) (err error) {
		v, err = data(d)
		return err
	})
	return v, err
}

// refImages is the reference the one decoder must agree with: encoding/json
// over the envelope (names matched exactly), then the three shapes, then
// base64 as encoding/base64 reads it.
func refImages(body []byte) ([][]byte, error) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, err
	}
	var ok bool
	if json.Unmarshal(env["success"], &ok) != nil || !ok {
		return nil, errors.New("not a success")
	}
	data := bytes.TrimSpace(env["data"])
	var strs []string
	var s string
	var obj map[string]json.RawMessage
	var list []json.RawMessage
	switch {
	case json.Unmarshal(data, &s) == nil:
		strs = []string{s}
	case json.Unmarshal(data, &obj) == nil && obj != nil:
		if json.Unmarshal(obj["base64"], &s) != nil {
			return nil, errors.New("no base64")
		}
		strs = []string{s}
	case json.Unmarshal(data, &list) == nil && len(list) > 0:
		for _, el := range list {
			var o map[string]json.RawMessage
			switch {
			case json.Unmarshal(el, &s) == nil:
			case json.Unmarshal(el, &o) == nil && o != nil && json.Unmarshal(o["base64"], &s) == nil:
			default:
				return nil, errors.New("bad element")
			}
			strs = append(strs, s)
		}
	default:
		return nil, errors.New("bad shape")
	}
	var out [][]byte
	for _, s := range strs {
		if strings.HasPrefix(s, "data:") {
			i := strings.Index(s, ";base64,")
			if i < 0 {
				return nil, errors.New("bad data URL")
			}
			s = s[i+len(";base64,"):]
		}
		enc := base64.StdEncoding
		if (len(s)-strings.Count(s, "\n")-strings.Count(s, "\r"))%4 != 0 {
			enc = base64.RawStdEncoding
		}
		b, err := enc.DecodeString(s)
		if err != nil || len(b) == 0 {
			return nil, errors.New("bad base64")
		}
		out = append(out, b)
	}
	return out, nil
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// wrap breaks s into lines of n characters with sep, as MIME encoders do.
func wrap(s string, n int, sep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i += n {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(s[i:min(len(s), i+n)])
	}
	return b.String()
}

func TestImagesAreReadInEveryShapeTheSpecAllowsAndServicesSend(t *testing.T) {
	one, two := b64("first image bytes"), b64("second image, longer than the first")
	long := b64(strings.Repeat("a long image that wraps over many lines ", 20))
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"an object", `{"success":true,"message":"ok","data":{"base64":"` + one + `"}}`, []string{"first image bytes"}},
		{"a list", `{"success":true,"message":"ok","data":[{"base64":"` + one + `"},{"base64":"` + two + `"}]}`, []string{"first image bytes", "second image, longer than the first"}},
		{"a bare string", `{"success":true,"message":"ok","data":"` + two + `"}`, []string{"second image, longer than the first"}},
		{"a list of bare strings", `{"success":true,"data":["` + one + `","` + two + `"]}`, []string{"first image bytes", "second image, longer than the first"}},
		{"keys in any order with space", " {\n \"data\" : [ { \"x\" : [1, 2.5e3, null, {\"y\": \"\\u00e9\"}] , \"base64\" : \"" + one + "\" } ] ,\"message\":null, \"success\" : true } \n", []string{"first image bytes"}},
		{"escaped slashes", `{"success":true,"data":{"base64":"` + strings.ReplaceAll(b64("??>>??>>"), "/", `\/`) + `"}}`, []string{"??>>??>>"}},
		{"unpadded", `{"success":true,"data":"` + strings.TrimRight(one, "=") + `"}`, []string{"first image bytes"}},
		{"a data URL", `{"success":true,"data":{"base64":"data:image/png;base64,` + one + `"}}`, []string{"first image bytes"}},
		{"wrapped at 76 with \\n", `{"success":true,"data":"` + wrap(long, 76, `\n`) + `"}`, []string{strings.Repeat("a long image that wraps over many lines ", 20)}},
		{"wrapped at 64 with \\r\\n", `{"success":true,"data":"` + wrap(long, 64, `\r\n`) + `"}`, []string{strings.Repeat("a long image that wraps over many lines ", 20)}},
		{"wrapped and unpadded", `{"success":true,"data":"` + wrap(strings.TrimRight(one, "="), 5, `\n`) + `"}`, []string{"first image bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ims, err := gate([]byte(tt.body), images(10))
			require.NoError(t, err)
			require.Len(t, ims, len(tt.want))
			for i, w := range tt.want {
				assert.Equal(t, w, string(ims[i].Data))
			}
			ref, err := refImages([]byte(tt.body))
			require.NoError(t, err)
			for i := range ref {
				assert.Equal(t, ref[i], ims[i].Data)
			}
		})
	}
}

func TestURLResultsMustBeAbsoluteHTTPURLs(t *testing.T) {
	for _, u := range []string{"javascript:alert(1)", "file:///etc/passwd", "data:text/plain,hi", "/relative/a.wav", "a.wav", "ftp://h/a.wav", "https://"} {
		t.Run(u, func(t *testing.T) {
			_, err := gate([]byte(`{"success":true,"data":"`+u+`"}`), dataURLOf)
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
			_, err = gate([]byte(`{"success":true,"data":["https://f.example/1.wav","`+u+`"]}`), dataURLs)
			assert.ErrorIs(t, err, ErrUnexpectedResponse)
		})
	}
	got, err := gate([]byte(`{"success":true,"data":"https://f.example/a.wav"}`), dataURLOf)
	require.NoError(t, err)
	assert.Equal(t, URL("https://f.example/a.wav"), got)
	list, err := gate([]byte(`{"success":true,"data":"https://f.example/a.wav"}`), dataURLs)
	require.NoError(t, err)
	assert.Equal(t, []URL{"https://f.example/a.wav"}, list, "a lone URL is a list of one")
}

// A URL written with JSON escapes (a "\/" for each slash, as PHP's
// encoder writes it, or a \u escape) is the URL they stand for, checked as
// that URL.
func TestAURLWithJSONEscapesIsTheURLTheyStandFor(t *testing.T) {
	got, err := gate([]byte(`{"success":true,"data":"https:\/\/f.example\/a\u002ewav"}`), dataURLOf)
	require.NoError(t, err)
	assert.Equal(t, URL("https://f.example/a.wav"), got)
	list, err := gate([]byte(`{"success":true,"data":["https:\/\/f.example\/1.wav","https://f.example/2.wav"]}`), dataURLs)
	require.NoError(t, err)
	assert.Equal(t, []URL{"https://f.example/1.wav", "https://f.example/2.wav"}, list)
	_, err = gate([]byte(`{"success":true,"data":"javascript:\/\/alert(1)"}`), dataURLOf)
	assert.ErrorIs(t, err, ErrUnexpectedResponse)
	_, err = gate([]byte(`{"success":true,"data":"https:\/\/f.example\/a.wav\ud800"}`), dataURLOf)
	assert.ErrorIs(t, err, ErrUnexpectedResponse, "a lone surrogate is no text")
}

// A short image beside a long one is read from the skeleton the walk
// reads (skim.go), a buffer the next answer's walk reuses: the image keeps
// its bytes after other answers are read.
func TestAShortImageBesideALongOneKeepsItsBytesAfterOtherAnswers(t *testing.T) {
	long := strings.Repeat("a long image ", skimMin/8)
	answer := func(short string) []byte {
		return []byte(`{"success":true,"message":"ok","data":[{"base64":"` + b64(short) + `"},{"base64":"` + b64(long) + `"},{"base64":"` + b64(short+" again") + `"}]}`)
	}
	first, err := gate(answer("the first answer's short image"), images(3))
	require.NoError(t, err)
	for i := range 20 {
		_, err := gate(answer(fmt.Sprintf("answer %d's other short image", i)), images(3))
		require.NoError(t, err)
	}
	assert.Equal(t, "the first answer's short image", string(first[0].Data))
	assert.Equal(t, long, string(first[1].Data))
	assert.Equal(t, "the first answer's short image again", string(first[2].Data))
}

func TestLargeImagesAreDecodedInPlaceInTheBody(t *testing.T) {
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
	ims, err := gate(body, images(3))
	require.NoError(t, err)
	for i := range want {
		assert.Equal(t, want[i], ims[i].Data)
	}
	var decoded int
	for _, im := range want {
		decoded += len(im)
	}
	bytesPer := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := gate(body, images(3)); err != nil {
				b.Fatal(err)
			}
		}
	})
	perByte := float64(bytesPer.AllocedBytesPerOp()) / float64(decoded)
	assert.Less(t, perByte, 1.40, "the body once (4/3 of the images) and little else; got %.3f bytes per decoded byte", perByte)
}

// An image as a data URL, which the skim leaves in the skeleton, is
// decoded in place in the body too: the walk gives up reading a skeleton
// made as it goes, which would copy the megabytes into its decoder's
// buffer, and reads the body as it came.
func TestADataURLImageIsDecodedInPlaceInTheBody(t *testing.T) {
	img := bytes.Repeat([]byte{0x89, 0x50, 0x4e, 0x47, 0xfb, 0x10}, 200_001)
	body := []byte(`{"success":true,"message":"ok","data":[{"base64":"data:image/png;base64,` + base64.StdEncoding.EncodeToString(img) + `"}]}`)
	ims, err := gate(bytes.Clone(body), images(1))
	require.NoError(t, err)
	require.Equal(t, img, ims[0].Data)
	per := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			in := bytes.Clone(body)
			b.StartTimer()
			if _, err := gate(in, images(1)); err != nil {
				b.Fatal(err)
			}
		}
	})
	perByte := float64(per.AllocedBytesPerOp()-int64(len(body))) / float64(len(img))
	assert.Less(t, perByte, 0.10, "little beyond the body; got %.3f bytes per decoded byte", perByte)
}

func FuzzImages(f *testing.F) {
	one := b64("\x89PNG fuzz seed")
	for _, seed := range []string{
		`{"success":true,"message":"ok","data":{"base64":"` + one + `"}}`,
		`{"success":true,"message":"ok","data":[{"base64":"` + one + `"},{"base64":"` + b64("x") + `"}]}`,
		`{"success":true,"data":"` + one + `"}`,
		`{"data":{"id":[1,{"a":null}],"base64":"` + strings.ReplaceAll(b64("??>>"), "/", `\/`) + `"},"success":true}`,
		`{"success":true,"data":{"base64":"data:image/png;base64,` + one + `"}}`,
		`{"success":true,"data":{"base64":"YQ"}}`,
		`{"success":true,"data":{"base64":"YQ=="}}`,
		`{"success":true,"data":"` + wrap(one, 4, `\r\n`) + `"}`,
		`{"success":false,"message":"no"}`,
		`{"success":true,"data":{"Base64":"YQ=="}}`,
		// Long enough to be skimmed (skim.go).
		`{"success":true,"data":[{"base64":"` + b64(strings.Repeat("long image ", 600)) + `"}]}`,
		`{"x":"` + strings.Repeat("z", skimMin) + `","success":true,"data":"` + b64(strings.Repeat("\xff", 4000)) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ref, refErr := refImages(body)
		got, err := gate(bytes.Clone(body), images(100))
		if err != nil {
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if refErr != nil {
			t.Fatalf("the decoder accepted what encoding/json refuses (%v): %q", refErr, body)
		}
		if len(got) != len(ref) {
			t.Fatalf("decoded %d images, encoding/json %d", len(got), len(ref))
		}
		for i := range got {
			if !bytes.Equal(got[i].Data, ref[i]) {
				t.Fatalf("image %d differs: %q vs %q", i, got[i].Data, ref[i])
			}
		}
	})
}

// FuzzPlainHTTPURL holds dataURL's shortcut to url.Parse: every string it
// takes for a plain http(s) URL, url.Parse takes for an absolute http(s)
// URL with a host, as dataURL asks of every URL.
func FuzzPlainHTTPURL(f *testing.F) {
	for _, s := range []string{
		"https://files.example.com/a.wav", "http://127.0.0.1:8080/x?y=1#z", "https://h", "https://h:",
		"https://h:80", "https://:80/", "https://h/a b", "https://h/%zz", "https://h/%41", "https://u@h/",
		"https://h?x/y", "https://h#f/x", "HTTPS://h/", "https://[::1]/", "https://h:8a/", "https://h/\x7f",
		"https://h/é", "https://h.-_/x", "https://h//x@y:z", "ftp://h/", "https:/h", "https:///x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !plainHTTPURL(s) {
			return
		}
		u, err := url.Parse(s)
		require.NoError(t, err, "%q", s)
		assert.NotEmpty(t, u.Host, "%q", s)
		assert.Contains(t, []string{"http", "https"}, u.Scheme, "%q", s)
	})
}

// TestPlainHTTPURL: the URLs an answer usually holds take the shortcut;
// any other is left to url.Parse.
func TestPlainHTTPURL(t *testing.T) {
	for _, s := range []string{"https://files.example.com/a.wav", "http://127.0.0.1:8080/x?y=1#z", "https://h", "https://cdn-1.example.com:443/a/b.mp4?sig=AbC_-~.!$&'()*+,;=:@"} {
		assert.True(t, plainHTTPURL(s), s)
	}
	for _, s := range []string{"", "https://", "https://:80/", "https://h/%41", "https://u@h/", "HTTPS://h/", "https://[::1]/",
		"https://h:8a/", "https://h/a b", "https://h/\x7f", "https://h/é", "https://h_x/", "https://h?x", "ftp://h/", "https:/h", "https:///x"} {
		assert.False(t, plainHTTPURL(s), s)
	}
}
