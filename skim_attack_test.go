package creative

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wholeWalk decodes body's images as the whole walk does (no skeleton):
// the reference the skim must agree with.
func wholeWalk(body []byte) ([][]byte, error) {
	var out [][]byte
	err := envelope(bytes.Clone(body), false, newRedactor([]string{"gate-key-1234"}), func(d *bodyDecoder) error {
		ims, err := dataImages(d, 100)
		for _, im := range ims {
			out = append(out, bytes.Clone(im.Data))
		}
		return err
	})
	return out, err
}

// skimWalk decodes body's images through the answer gate, skimming.
func skimWalk(body []byte) ([][]byte, error) {
	ims, err := gate(bytes.Clone(body), images(100))
	var out [][]byte
	for _, im := range ims {
		out = append(out, bytes.Clone(im.Data))
	}
	return out, err
}

// agree fails t when the skim and the whole walk read body differently.
func agree(t *testing.T, name string, body []byte) {
	t.Helper()
	want, wantErr := wholeWalk(body)
	got, err := skimWalk(body)
	if (err == nil) != (wantErr == nil) {
		t.Errorf("%s: skim error %v, whole walk error %v (body %d bytes, head %.120q)", name, err, wantErr, len(body), body)
		return
	}
	if err != nil {
		return
	}
	if len(got) != len(want) {
		t.Errorf("%s: skim decoded %d images, the whole walk %d", name, len(got), len(want))
		return
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("%s: image %d differs", name, i)
		}
	}
}

// rawB64 is the unpadded base64 of n pseudo-random bytes seeded by seed,
// its encoded length n*4/3 rounded up.
func rawB64(n int, seed byte) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*131+i/7)
	}
	return base64.RawStdEncoding.EncodeToString(b)
}

// ofLen is base64 text exactly n bytes long (n%4 != 1).
func ofLen(n int, seed byte) string {
	s := rawB64(n*3/4+1, seed)
	return s[:n]
}

// A long base64 string with one raw line break (a control character a JSON
// string may not hold) is refused by the whole walk; the skim's check of
// its decoded length must tell of it whatever the length's remainder.
func TestSkimRefusesRawLineBreakInLongBase64(t *testing.T) {
	for _, m := range []int{skimMin, skimMin + 4, skimMin + 2, skimMin + 3, 3 * skimMin} {
		for _, brk := range []string{"\n", "\r", "\r\n", "\n\n\n"} {
			s := ofLen(m, 1)
			s = s[:m/2] + brk + s[m/2:]
			body := []byte(`{"success":true,"data":"` + s + `"}`)
			_, wantErr := wholeWalk(body)
			require.Error(t, wantErr)
			_, err := skimWalk(body)
			assert.Error(t, err, "%d base64 bytes with %q inside", m, brk)
		}
	}
}

// hostileElements are the pieces the bodies of TestSkimAgreesWithTheWholeWalk are
// made of: data elements around the skim's edges.
func hostileElements() map[string]string {
	long := ofLen(skimMin, 2)
	return map[string]string{
		"long":         `"` + long + `"`,
		"longObj":      `{"base64":"` + ofLen(skimMin+8, 3) + `"}`,
		"min-1":        `"` + ofLen(skimMin-1, 4) + `"`,
		"min":          `"` + ofLen(skimMin, 5) + `"`,
		"short":        `"` + b64("short image") + `"`,
		"lookalike0":   `"\u0000#0"`,
		"lookalike1":   `"\u0000#1"`,
		"lookObj":      `{"base64":"\u0000#0"}`,
		"lookName":     `{"\u0000#0":"\u0000#0","base64":"` + ofLen(skimMin+12, 6) + `"}`,
		"dataURL":      `"data:image/png;base64,` + ofLen(skimMin+4, 7) + `"`,
		"escaped":      `"` + strings.ReplaceAll(ofLen(skimMin+16, 8), "/", `\/`) + `"`,
		"escEnd":       `"` + ofLen(scanWindow-1, 9) + `\/AAA"`,
		"escWindow":    `"` + ofLen(scanWindow, 10) + `\/AA"`,
		"escStart":     `"\/` + ofLen(scanWindow+2, 11) + `"`,
		"nested":       `{"x":[[["` + ofLen(skimMin, 12) + `"]]],"base64":"` + ofLen(skimMin, 13) + `"}`,
		"longNameDup":  `{"` + strings.Repeat("n", skimMin) + `":1,"` + strings.Repeat("n", skimMin) + `":2,"base64":"` + long + `"}`,
		"longName":     `{"` + strings.Repeat("n", skimMin) + `":1,"base64":"` + long + `"}`,
		"ctrlLong":     `"` + long[:100] + "\x01" + long[101:] + `"`,
		"badUTF8Other": `{"x":"` + strings.Repeat("\xff", skimMin) + `","base64":"` + long + `"}`,
		"lookAfter":    `{"base64":"` + long + `","x":"\u0000#0"}`,
		"twoBase64":    `{"base64":"` + long + `","base64":"` + long + `"}`,
		"num":          `12`,
		"padded":       `"` + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("p", 3073))) + `"`,
	}
}

// Every order of two hostile elements, inside hostile envelopes, reads as
// the whole walk reads it.
func TestSkimAgreesWithTheWholeWalk(t *testing.T) {
	els := hostileElements()
	longMsg := strings.Repeat("m", skimMin+5)
	envelopes := map[string]string{
		"plain":       `{"success":true,"data":%s}`,
		"msgLook":     `{"success":true,"message":"\u0000#0","data":%s}`,
		"msgLong":     `{"success":true,"message":"` + longMsg + `","data":%s}`,
		"msgLongFail": `{"success":false,"message":"` + longMsg + `","data":%s}`,
		"dataFirst":   `{"data":%s,"message":"\u0000#1","success":true}`,
		"trailing":    `{"success":true,"data":%s} x`,
		"trailingStr": `{"success":true,"data":%s}"` + longMsg + `"`,
		"padded":      `{"success":true,"pad":[` + strings.Repeat(`"ab",`, lazyMax/5+10) + `"z"],"data":%s}`,
		"padLong":     `{"success":true,"pad":[` + strings.Repeat(`"ab",`, lazyMax/5+10) + `"` + longMsg + `"],"data":%s}`,
		"padJust":     `{"success":true,"pad":"` + strings.Repeat("q", lazyMax-40) + `\n","data":%s}`,
		"deep":        `{"success":true,"x":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `,"data":%s}`,
		"unterm":      `{"success":true,"data":%s,"x":"` + longMsg + `}`,
		"dupData":     `{"success":true,"data":%s,"data":%[1]s}`,
		"escQuoteWin": `{"success":true,"x":"` + strings.Repeat("a", scanWindow-1) + `\"` + strings.Repeat("a", skimMin) + `","data":%s}`,
		"escSlashWin": `{"success":true,"x":"` + strings.Repeat("a", scanWindow-2) + `\\","y":"` + strings.Repeat("b", skimMin) + `","data":%s}`,
		"escQuoteEnd": `{"success":true,"x":"` + strings.Repeat("a", 2*scanWindow-1) + `\\\"","data":%s}`,
		"longKeyEcho": `{"success":true,"` + strings.Repeat("k", skimMin) + `":"gate-key-1234","data":%s}`,
	}
	names := make([]string, 0, len(els))
	for n := range els {
		names = append(names, n)
	}
	for en, env := range envelopes {
		for _, a := range names {
			agree(t, en+"/"+a, fmt.Appendf(nil, env, els[a]))
			for _, b := range names {
				agree(t, en+"/"+a+","+b, fmt.Appendf(nil, env, "["+els[a]+","+els[b]+"]"))
			}
		}
	}
}

// A data URL after a long raw image: the raw one is taken first, so the
// walk reads on through its decoder's buffer, and the data URL's megabytes
// must not be copied there.
func TestSkimADataURLAfterARawImageIsNotCopied(t *testing.T) {
	t.Skip("finding: once a long raw image is taken, the lazy walk no longer gives up, so a data URL, an escaped image or a long escaped message after it is copied into the decoder's buffer (grown by doubling) and cloned: about 1.8 bytes beyond the body per byte of body, where the skeleton made whole copied it once")
	for _, tc := range skimMixedBodies() {
		t.Run(tc.name, func(t *testing.T) {
			per := testing.Benchmark(func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					b.StopTimer()
					in := bytes.Clone(tc.body)
					b.StartTimer()
					if _, err := gate(in, images(2)); err != nil {
						b.Fatal(err)
					}
				}
			})
			extra := float64(per.AllocedBytesPerOp()-int64(len(tc.body))) / float64(len(tc.body))
			if strings.Contains(tc.name, "data URL") {
				assert.Less(t, extra, 0.10, "the data URL decoded in place in the body")
			}
			assert.Less(t, extra, 1.10, "at most one copy of what is not decoded in place")
		})
	}
}

// skimMixedBodies are answers whose long raw image comes before megabytes
// the skim cannot leave out.
func skimMixedBodies() []struct {
	name string
	body []byte
	raw  []byte
} {
	raw := bytes.Repeat([]byte{0x89, 0x50, 0x4e, 0x47, 0xfb, 0x10}, 200_001)
	url := bytes.Repeat([]byte{0x10, 0x20, 0x4e, 0x47, 0xfb, 0x11}, 200_001)
	head := `{"success":true,"message":"ok","data":[{"base64":"` + base64.StdEncoding.EncodeToString(raw) + `"}`
	return []struct {
		name string
		body []byte
		raw  []byte
	}{
		{"raw, data URL", []byte(head + `,{"base64":"data:image/png;base64,` + base64.StdEncoding.EncodeToString(url) + `"}]}`), raw},
		{"raw, escaped", []byte(head + `,{"base64":"` + strings.ReplaceAll(base64.StdEncoding.EncodeToString(url), "/", `\/`) + `"}]}`), raw},
		{"raw, long escaped member", []byte(head + `],"x":"` + strings.Repeat(`\"`, 600_000) + `"}`), raw},
	}
}

// A pooled decoder keeps no buffer of a body's size once its call is done.
func TestSkimPooledDecoderKeepsNoBodySizedBuffer(t *testing.T) {
	for _, tc := range skimMixedBodies() {
		ims, err := gate(bytes.Clone(tc.body), images(2))
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.raw, ims[0].Data, tc.name)
		// The pool is per P: the decoder the call put back is the one got
		// here, unless the goroutine moved, which only hides a finding.
		bd := decoders.Get().(*bodyDecoder)
		buf := reflect.ValueOf(&bd.Decoder).Elem().FieldByName("s").FieldByName("buf")
		assert.Less(t, buf.Cap(), 64<<10, "%s: a pooled decoder keeps a buffer of %d bytes", tc.name, buf.Cap())
		assert.Less(t, cap(bd.skel), 64<<10+1, tc.name)
		decoders.Put(bd)
	}
}

// Images a caller got never change, whatever other answers the pooled
// decoders read after or beside them: short ones next to long ones (read
// through the lazy walk's buffer), data URLs, escaped ones, after a
// give-up.
func TestSkimImagesNeverChangeUnderConcurrentCalls(t *testing.T) {
	els := hostileElements()
	var bodies [][]byte
	for _, list := range [][]string{
		{"short", "long", "short"},
		{"long", "short", "dataURL", "short"},
		{"short", "escaped", "min-1", "min"},
		{"lookObj", "long", "short"},
	} {
		var parts []string
		for _, n := range list {
			parts = append(parts, els[n])
		}
		data := "[" + strings.Join(parts, ",") + "]"
		bodies = append(bodies,
			[]byte(`{"success":true,"data":`+data+`}`),
			[]byte(`{"success":true,"pad":[`+strings.Repeat(`"ab",`, lazyMax/5+10)+`"z"],"data":`+data+`}`))
	}
	want := make([][][]byte, len(bodies))
	for i, b := range bodies {
		w, err := wholeWalk(b)
		if err != nil {
			// lookObj decodes to bytes of its own; a refusal is no image.
			continue
		}
		want[i] = w
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			var kept [][]Image
			var from []int
			for k := range 30 {
				i := (g + k) % len(bodies)
				ims, err := gate(bytes.Clone(bodies[i]), images(100))
				if err != nil {
					continue
				}
				kept, from = append(kept, ims), append(from, i)
			}
			for j, ims := range kept {
				w := want[from[j]]
				if !assert.Len(t, ims, len(w)) {
					continue
				}
				for n := range ims {
					assert.True(t, bytes.Equal(w[n], ims[n].Data), "body %d image %d changed after later calls", from[j], n)
				}
			}
		})
	}
	wg.Wait()
}

// A refused image answer's error and its WithRawAnswerInto copy speak of
// the body, redacted: a key the body echoes, in a long or short string, a
// name, a message, plain or escaped, never shows; the copy is well-formed
// JSON.
func TestSkimRefusedAndRawAnswersNeverShowTheKey(t *testing.T) {
	long := ofLen(skimMin+8, 21)
	esc := strings.ReplaceAll(strconv.QuoteToASCII(testKey), "t", `\u0074`)
	esc = esc[1 : len(esc)-1]
	pad := func(n int) string { return strings.Repeat("p", n) }
	bodies := map[string]string{
		"longMsgFail":     `{"success":false,"message":"` + pad(skimMin) + testKey + `","data":"` + long + `"}`,
		"longMsgFailEsc":  `{"success":false,"message":"` + pad(skimMin) + esc + `","data":"` + long + `"}`,
		"msgAtCut":        `{"success":false,"message":"` + pad(maxMessage-5) + testKey + pad(skimMin) + `","data":"` + long + `"}`,
		"msgAt4Cut":       `{"success":false,"message":"` + pad(4*maxMessage-8) + testKey + pad(skimMin) + `","data":"` + long + `"}`,
		"headCut":         `{"success":true,"x":"` + pad(1<<10-28) + testKey + `","data":12}`,
		"longName":        `{"success":true,"` + pad(skimMin) + testKey + `":1,"data":"` + long + `","` + pad(skimMin) + testKey + `":2}`,
		"longValue":       `{"success":true,"data":{"base64":"` + long + `","x":"` + pad(skimMin) + testKey + `"},"y":x}`,
		"lookalikeKey":    `{"success":true,"message":"\u0000#0` + testKey + `","data":{"base64":"\u0000#0"}}`,
		"badImageKey":     `{"success":true,"data":"` + long[:skimMin] + testKey + `"}`,
		"trailingKey":     `{"success":true,"data":"` + long + `"} "` + testKey + `"`,
		"ctrlMsgKey":      `{"success":true,"message":"` + pad(skimMin) + "\x01" + testKey + `","data":"` + long + `"}`,
		"shortImageKey":   `{"success":true,"data":["` + long + `","` + testKey + `"]}`,
		"unterminatedKey": `{"success":true,"data":"` + long + `","x":"` + testKey + pad(skimMin),
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t, replyJSON(200, body))
			c := ts.client(t)
			var raw RawAnswer
			_, err := c.TextToImage(context.Background(), TextToImageRequest{Prompt: "p"}, WithRawAnswerInto(&raw))
			_, wantErr := wholeWalk([]byte(body))
			assert.Equal(t, wantErr == nil, err == nil, "accepts as the whole walk does: %v", err)
			if err != nil {
				for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
					assert.NotContains(t, s, testKey)
					assert.NotContains(t, s, esc)
				}
				var ae *APIError
				if assert.ErrorAs(t, err, &ae) {
					assert.NotContains(t, string(ae.Body), testKey)
					assert.NotContains(t, ae.Message, testKey)
				}
			}
			j := raw.JSON()
			require.NotNil(t, j)
			assert.NotContains(t, string(j), testKey)
			assert.NotContains(t, string(j), esc)
			if json.Valid([]byte(body)) {
				assert.True(t, json.Valid(j), "the raw answer is JSON: %.300q", j)
			}
		})
	}
}

// WithRawAnswerInto's copy replaces exactly the strings the skim left
// out, wherever placeholder lookalikes stand around them.
func TestSkimRawAnswerReplacesOnlyTheLeftOutStrings(t *testing.T) {
	a, b := ofLen(skimMin, 31), ofLen(skimMin+3, 32)
	body := `{"success":true,"message":"\u0000#1","data":["\u0000#0",{"\u0000#1":"` + a + `","base64":"` + b +
		`"},"` + b64("x") + `"],"x":"\u0000#0","` + strings.Repeat("n", skimMin) + `":"\u0000#1"}`
	want := strings.NewReplacer(`"`+a+`"`, fmt.Sprintf(`"[%d bytes of base64, decoded into the result]"`, len(a)),
		`"`+b+`"`, fmt.Sprintf(`"[%d bytes of base64, decoded into the result]"`, len(b))).Replace(body)
	ts := newTestServer(t, replyJSON(200, body))
	var raw RawAnswer
	_, err := ts.client(t).TextToImage(context.Background(), TextToImageRequest{Prompt: "p"}, WithRawAnswerInto(&raw))
	_, wantErr := wholeWalk([]byte(body))
	assert.Equal(t, wantErr == nil, err == nil, "%v / %v", err, wantErr)
	assert.Equal(t, want, raw.RawJSON())
}

// A syntax error after a taken image, when the walk read the skeleton,
// names the offset in the body, as the whole walk does: not the offset in
// the skeleton, which a caller never sees.
func TestSkimSyntaxErrorSpeaksOfTheBodysOffset(t *testing.T) {
	a, b := ofLen(skimMin+8, 41), ofLen(3*skimMin, 42)
	for _, body := range []string{
		`{"success":true,"data":"` + a + `",x}`,
		`{"success":true,"x":"` + b + `","data":["` + a + `",` + "\x01" + `]}`,
		`{"success":true,"data":["` + a + `","` + b + `"] "x":1}`,
		`{"success":true,"pad":[` + strings.Repeat(`"ab",`, lazyMax/5+10) + `"` + b + `"],"data":["` + a + `"],"y":tru}`,
	} {
		_, err := gate([]byte(body), images(3))
		require.Error(t, err)
		_, whole := wholeWalk([]byte(body))
		require.Error(t, whole)
		off := regexp.MustCompile(`offset \d+`).FindString(whole.Error())
		require.NotEmpty(t, off, whole.Error())
		assert.Contains(t, err.Error(), off, "the whole walk says %q", whole)
	}
}

// A failure's message read early in a lazy walk is still itself when the
// verdict is given, after the walk's buffer was overwritten by everything
// after it.
func TestSkimFailureMessageSurvivesTheWalk(t *testing.T) {
	long := ofLen(skimMin+8, 51)
	tail := `,"x":[` + strings.Repeat(`"zz",`, 20_000) + `"z"]`
	for _, msg := range []string{`prompt refused`, `\u0000#0`, `\u0000#1 refused`, `pro\nmpt`} {
		for _, body := range []string{
			`{"message":"` + msg + `","success":false,"data":["` + long + `","` + long + `"]` + tail + `}`,
			`{"success":false,"message":"` + msg + `","data":"` + b64("short") + `"` + tail + `}`,
			`{"success":false,"message":"` + msg + `"` + tail + `,"data":"` + long + `"}`,
		} {
			var want string
			require.NoError(t, json.Unmarshal([]byte(`"`+msg+`"`), &want))
			_, err := gate([]byte(body), images(3))
			var ae *APIError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, want, ae.Message, "%.80s", body)
		}
	}
}

// Hostile bodies with a few bytes changed where the skim decides (quotes,
// backslashes, colons, line breaks, lookalikes) read as the whole walk
// reads them: the general fuzzer seldom makes strings of 4 KiB.
func TestSkimAgreesUnderMutation(t *testing.T) {
	els := hostileElements()
	names := make([]string, 0, len(els))
	for n := range els {
		names = append(names, n)
	}
	sort.Strings(names)
	bits := []string{`"`, `\`, `:`, "\n", "\x00", `]`, `,`, `\u0000#0`, `"\u0000#1"`, `\"`, `\\`, `{"base64":"`, "\xff", `":`}
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 3000 {
		a, b := els[names[rng.IntN(len(names))]], els[names[rng.IntN(len(names))]]
		body := []byte(`{"success":true,"message":"\u0000#0","data":[` + a + `,` + b + `]}`)
		for range 1 + rng.IntN(3) {
			at := rng.IntN(len(body))
			// Near the edges of strings, where the skim decides.
			if q := bytes.IndexByte(body[at:], '"'); q >= 0 && rng.IntN(2) == 0 {
				at += q + rng.IntN(3) - 1
				at = max(0, min(at, len(body)))
			}
			bit := bits[rng.IntN(len(bits))]
			if rng.IntN(2) == 0 {
				body = append(body[:at:at], append([]byte(bit), body[at:]...)...)
			} else {
				body = append(body[:at:at], append([]byte(bit), body[min(at+len(bit), len(body)):]...)...)
			}
		}
		agree(t, fmt.Sprint("mutation ", i), body)
	}
}

// Around the lazy walk's limit, wherever the first long string falls, and
// wherever a raw line break falls in a long string of any length around
// skimMin, the skim reads as the whole walk.
func TestSkimAgreesAroundItsLimits(t *testing.T) {
	short, long := `"`+b64("short image")+`"`, `"`+ofLen(skimMin, 61)+`"`
	for n := lazyMax - 80; n <= lazyMax+80; n++ {
		pad := `"pad":[` + strings.Repeat(`"ab",`, (n-30)/5) + `"` + strings.Repeat("c", (n-30)%5) + `"],`
		agree(t, fmt.Sprint("pad ", n), []byte(`{"success":true,`+pad+`"data":[`+short+`,`+long+`]}`))
		agree(t, fmt.Sprint("pad after ", n), []byte(`{"success":true,"data":[`+short+`,`+long+`],`+pad+`"x":1}`))
		agree(t, fmt.Sprint("pad between ", n), []byte(`{"success":true,"data":[`+short+`,{`+pad+`"base64":`+long+`}]}`))
	}
	for m := skimMin - 4; m <= skimMin+8; m++ {
		if m%4 == 1 {
			continue
		}
		s := ofLen(m, 62)
		for _, at := range []int{0, 1, 2, m / 2, m - 2, m - 1, m} {
			for _, brk := range []string{"\n", "\r\n", "\r", "\n\n"} {
				body := `{"success":true,"data":"` + s[:at] + brk + s[at:] + `"}`
				agree(t, fmt.Sprintf("%d bytes, %q at %d", m, brk, at), []byte(body))
			}
		}
	}
}
