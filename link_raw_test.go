package creative

import (
	"bytes"
	"net/url"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A link is the text its JSON string stands for, whether it is read as its
// bytes between the quotes (no escape) or unquoted: the same link a
// token's String gives, refused where that link is no absolute http(s) URL
// or holds the key, in an error that holds no form of the key.
func TestALinkIsTheTextOfItsJSONStringWhateverItsEscapes(t *testing.T) {
	const key = "gate-key-1234"
	long := "https://f.example/" + strings.Repeat("a", 100<<10)
	links := []string{
		`"https://f.example/a.wav"`,
		`"https:\/\/f.example\/a.wav"`,
		`"https://f.example/\u0041.wav"`,
		`"https://f.example/a\u0000.wav"`,
		`"https://f.example/\ud83d\ude00.wav"`,
		`"https://f.example/\ud800.wav"`,
		`"https://f.example/\udc00\ud800.wav"`,
		`"https://f.example/\q.wav"`,
		`"https://f.example/\u00zz.wav"`,
		"\"https://f.example/\xff.wav\"",
		"\"https://f.example/\xc3.wav\"",
		"\"https://f.example/\xed\xa0\x80.wav\"",
		"\"https://f.example/é.wav\"",
		"\"https://f.example/a\t.wav\"",
		`"https://f.example/a\t.wav"`,
		`"https://f.example/a\\b.wav"`,
		`"https://f.example/a\"b.wav"`,
		`"https://f.example/a\u2028.wav"`,
		`"` + long + `"`,
		`"` + long + `\/"`,
		`"https://f.example/?k=` + key + `"`,
		`"https://f.example/?k=GATE-KEY-1234"`,
		`"https://f.example/?k=gate\u002dkey-1234"`,
		`"https://f.example/?k=\u0067ate-key-1234"`,
		`"https://f.example/?k=\u0047ATE-KEY-1234"`,
		`"https://f.example/?k=%67ate-key-1234"`,
		`"https://f.example/?k=gate%2Dkey%2D1234"`,
		`"https://f.example/?k=gate\\u002dkey-1234"`,
		`"https:\/\/` + key + `.example\/a.wav"`,
		`"https://f.example/` + key + `"`,
		`"https://f.example/gate-key-123` + `\u0034"`,
		`"\u0068ttps://f.example/?k=` + key + `"`,
		`"https://f.example/?k=gate&#45;key-1234"`,
		`""`,
		`"\u0000"`,
	}
	red := newRedactor([]string{key})
	for _, raw := range links {
		name := raw[:min(len(raw), 60)]
		t.Run(name, func(t *testing.T) {
			tok, refErr := jsontext.NewDecoder(bytes.NewReader([]byte(raw))).ReadToken()
			want := ""
			if refErr == nil {
				want = tok.String()
			}
			u, perr := url.Parse(want)
			ok := refErr == nil && perr == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") && !red.holds(want)
			for _, body := range []string{`{"success":true,"data":` + raw + `}`, `{"success":true,"data":["https://f.example/0.wav",` + raw + `]}`, "{\"success\":true,\"data\": [ \"https://f.example/0.wav\" ,\n\t" + raw + " \r\n] }"} {
				got, err := gate([]byte(body), dataURLs)
				if ok {
					require.NoError(t, err)
					assert.Equal(t, URL(want), got[len(got)-1])
					continue
				}
				require.ErrorIs(t, err, ErrUnexpectedResponse)
				for where, text := range errorTexts(err) {
					assert.Empty(t, leak(text, key), where)
					assert.False(t, red.holds(text), "%s: %q", where, text)
				}
			}
		})
	}
}

// stringOf gives the text a token's String gives, for every JSON string
// the decoder accepts, with its escapes or without.
func FuzzStringOfIsTheTokensText(f *testing.F) {
	for _, s := range []string{`a`, `\/`, `\u0041`, `\u0000`, `\ud83d\ude00`, `\ud800`, "\xff", `\\`, `\"`, "é", `\u00e9`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		raw := append(append([]byte{'"'}, text...), '"')
		v, err := jsontext.NewDecoder(bytes.NewReader(raw)).ReadValue()
		tok, tokErr := jsontext.NewDecoder(bytes.NewReader(raw)).ReadToken()
		if (err == nil) != (tokErr == nil) {
			t.Fatalf("%q: ReadValue says %v, ReadToken %v", raw, err, tokErr)
		}
		if err != nil {
			return
		}
		if got, want := stringOf(v), tok.String(); got != want {
			t.Fatalf("%q: stringOf = %q, the token's text %q", raw, got, want)
		}
	})
}
