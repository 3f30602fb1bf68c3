package page

import (
	"bytes"
	"fmt"
	"testing"
	"testing/iotest"
)

// Stamped says no to a stamped page cut short, changed or added to
// anywhere after its top, however large (here some 64 KiB reads long),
// and read in pieces of any size.
func TestAttackStampedSaysNoToAPageChangedBelowItsTop(t *testing.T) {
	var b bytes.Buffer
	entries := func(yield func(Entry) bool) {
		for i := range 3000 {
			if !yield(Entry{Job: fmt.Sprintf("%032x", i), Line: i + 1, Op: "text-to-image", State: "done",
				Fields: map[string]any{"prompt": fmt.Sprintf("a cat number %d", i)}}) {
				return
			}
		}
	}
	if err := WriteStamped(&b, "batch", "v 1", entries); err != nil {
		t.Fatal(err)
	}
	p := b.Bytes()
	if len(p) < 3*64<<10 {
		t.Fatalf("the page is %d bytes, too short to cross reads", len(p))
	}
	if !Stamped(bytes.NewReader(p), "v 1") || !Stamped(iotest.OneByteReader(bytes.NewReader(p)), "v 1") ||
		!Stamped(iotest.DataErrReader(bytes.NewReader(p)), "v 1") {
		t.Fatal("the page as written is not taken for stamped")
	}
	flip := func(i int) []byte {
		c := bytes.Clone(p)
		c[i] ^= 1
		return c
	}
	for what, c := range map[string][]byte{
		"cut at the end":    p[:len(p)-1],
		"cut in the middle": p[:len(p)/2],
		"cut to its top":    p[:len(top("v 1"))],
		"a byte changed":    flip(len(p) / 2),
		"its end changed":   flip(len(p) - 2),
		"added to":          append(bytes.Clone(p), '\n'),
	} {
		if Stamped(bytes.NewReader(c), "v 1") {
			t.Errorf("a page %s is taken for stamped", what)
		}
	}
}
