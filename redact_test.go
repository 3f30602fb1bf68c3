package creative

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The redactor on its own: every form an echo may give a key is removed,
// and what is not a key is left as it was. The servers that echo keys are in
// hostile_key_test.go.

func TestTheRedactorRemovesEveryFormOfAKey(t *testing.T) {
	const key = `k&<>"'/+=~ -LEAK-1234`
	jsonEscaped := strings.NewReplacer("&", `\u0026`, "<", `\u003c`, ">", `\u003e`, `"`, `\"`).Replace(key)
	forms := map[string]string{
		"plain":                        key,
		"query-escaped":                url.QueryEscape(key),
		"path-escaped":                 url.PathEscape(key),
		"path-escaped, lower-case hex": lowerHex(url.PathEscape(key)),
		"Go-quoted":                    strconv.Quote(key)[1 : len(strconv.Quote(key))-1],
		"JSON pointer":                 strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1"),
		"JSON with \\u escapes":        jsonEscaped,
		"JSON with escaped slashes":    strings.ReplaceAll(jsonEscaped, "/", `\/`),
		"HTML, Go's escaper":           html.EscapeString(key),
		"HTML, named quotes":           strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(key),
		"HTML, hex references":         strings.NewReplacer("&", "&#x26;", "<", "&#x3C;", ">", "&#x3e;", `"`, "&#x22;", "'", "&#x27;").Replace(key),
		"HTML, every byte a reference": everyByte(key, "&#%d;"),
		"JSON-escaped HTML":            strings.ReplaceAll(html.EscapeString(key), "&", `\u0026`),
		"mixed: half plain, half \\u":  key[:8] + everyByte(key[8:], `\u%04x`),
	}
	r := newRedactor([]string{key})
	for name, form := range forms {
		t.Run(name, func(t *testing.T) {
			text := "before " + form + " after"
			got := r.redact(text)
			assert.Equal(t, "before "+redacted+" after", got)
		})
	}
}

// everyByte writes each byte of s with format.
func everyByte(s, format string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}

func TestTheRedactorLeavesOtherTextAlone(t *testing.T) {
	r := newRedactor([]string{"secret-key-1"}, []string{"client-key-2"})
	for _, text := range []string{
		"", "100% done", `a \"quoted\" word`, "fish &amp; chips &#39;", `\u0026 \x41 %zz &;`,
		"secret-key-", "&#115;ecret-key", strings.Repeat("&", 1000),
	} {
		assert.Equal(t, text, r.redact(text))
	}
	assert.Equal(t, "a [redacted] b [redacted]", r.redact("a secret-key-1 b client-key-2"), "both keys go")
	short := newRedactor([]string{"sho"})
	assert.Equal(t, "too short", short.redact("too short"), "keys under 4 bytes are not looked for")
}

// A cut never splits a key that a whole text would lose: keep redacts a
// window a key's longest form past the limit, then cuts on a rune boundary.
func TestKeepRedactsBeforeItCuts(t *testing.T) {
	const key = `hk&<>"'-1234567890`
	r := newRedactor([]string{key})
	for _, form := range []string{key, html.EscapeString(key), strings.ReplaceAll(html.EscapeString(key), "&", `\u0026`)} {
		for cut := 1; cut < len(form); cut++ {
			body := strings.Repeat("x", (100-cut)%2) + strings.Repeat("é", (100-cut)/2) + form + strings.Repeat("x", 200)
			got := string(r.keep([]byte(body), 100))
			require.NotContains(t, got, "1234567890"[:6], "cut %d of %q", cut, form)
			require.True(t, utf8.ValidString(got))
			require.LessOrEqual(t, len(got), 100)
		}
	}
	long := strings.Repeat("m", 5000) + key
	msg := r.message(long)
	assert.Contains(t, msg, "(5018 bytes in all)")
	assert.NotContains(t, msg, "1234567890")
}

func TestRedactErrKeepsTheChainWithoutTheKey(t *testing.T) {
	const key = "chain-key-1234"
	r := newRedactor([]string{key})
	cause := errors.New("io: read/write on closed pipe")
	err := fmt.Errorf("sending %s: %w", html.EscapeString(key), cause)
	ue := &url.Error{Op: "Post", URL: "https://h/?k=" + url.QueryEscape(key), Err: err}
	got := r.redactErr(ue)
	assert.NotContains(t, got.Error(), key)
	assert.ErrorIs(t, got, cause, "the cause below the key is kept as it is")
	var out *url.Error
	require.ErrorAs(t, got, &out)
	assert.Equal(t, "https://h/?k="+redacted, out.URL)
	plain := errors.New("no key here")
	assert.Same(t, plain, r.redactErr(plain), "an error without a key is returned as it is")
}

// Calls that send the Client's key share its redactor: many at once, each
// refused with the key echoed back, each error free of it (the race
// detector watches the redactor's first use).
func TestConcurrentCallsShareTheRedactorSafely(t *testing.T) {
	const key = "shared-redactor-key-0123456789"
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		replyJSON(400, `{"success":false,"message":"bad key `+r.Header.Get("x-access-key")+`"}`)(w, r)
	})
	c := newTestClient(t, ts.URL, WithAccessKey(key))
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"})
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.Error(t, err)
		assert.NotContains(t, err.Error(), key)
		assert.Contains(t, err.Error(), "bad key")
	}
}

// lowerHex writes the %XX escapes of s in lower case.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = bytes.ToLower(b[i+1 : i+2])[0], bytes.ToLower(b[i+2 : i+3])[0]
		}
	}
	return string(b)
}
