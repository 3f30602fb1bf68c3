package cassette

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/creativegen/creative-go/internal/redact"
)

// scrub hides every form wherever it lies against the 1 MiB windows it
// reads (inside one, across the edge of two, at the very end), in flat
// memory, and leaves every other byte as it was: the same as
// bytes.ReplaceAll over the whole body.
func TestScrubHidesAFormAcrossWindows(t *testing.T) {
	const key = "ck_live_0123456789abcdefghij"
	red := redact.New([]string{key})
	overlap := red.KeyLen()
	rnd := rand.New(rand.NewPCG(1, 2))
	base := make([]byte, 3<<20)
	for i := range base {
		base[i] = byte('A' + rnd.IntN(26)) // no x, no key
	}
	// Every place across the end of the first window's part (which the
	// second window starts with) and across the end of the first window,
	// and a few others.
	places := []int{0, 100, 2<<20 - 7, 3<<20 - len(key)}
	for _, edge := range []int{1 << 20, 1<<20 + overlap} { // a window's first byte past its part, and its last
		for at := edge - len(key) - 1; at <= edge+1; at++ {
			places = append(places, at)
		}
	}
	for _, at := range places {
		body := bytes.Clone(base)
		copy(body[at:], key)
		want := bytes.ReplaceAll(body, []byte(key), []byte(strings.Repeat("x", len(key))))
		var out bytes.Buffer
		if err := scrub(&out, bytes.NewReader(body), red); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out.Bytes(), []byte(key)) {
			t.Errorf("the key at %d is still there", at)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("the key at %d: %d bytes out, differing from bytes.ReplaceAll's %d", at, out.Len(), len(want))
		}
	}
}
