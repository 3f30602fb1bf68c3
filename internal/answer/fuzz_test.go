package answer

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/creativegen/creative-go/internal/media"
)

// The check's verdict on a file does not hang on how its bytes are split
// into writes, and whatever passes reaches the writer behind unchanged.
func FuzzCheck(f *testing.F) {
	for _, b := range [][]byte{pngFile(f), jpegFile(f), gifFile(f), mp4File(true), mp4File(false), media.Music("f", 0.05), media.Speech("hi", "v")} {
		for _, k := range []Kind{Image, Audio, Video} {
			f.Add(byte(k), b, uint64(len(b)))
			f.Add(byte(k), b[:len(b)*2/3], uint64(7))
		}
	}
	f.Fuzz(func(t *testing.T, k byte, b []byte, seed uint64) {
		kind := Kind(k % 4)
		var whole bytes.Buffer
		want := Bytes(kind, b)
		c := New(kind, &whole)
		_, _ = c.Write(b)
		_ = c.Close()
		var split bytes.Buffer
		s := New(kind, &split)
		r := rand.New(rand.NewPCG(seed, 0))
		var err error
		for rest := b; len(rest) > 0 && err == nil; {
			n := min(len(rest), 1+r.IntN(64))
			_, err = s.Write(rest[:n])
			rest = rest[n:]
		}
		if err == nil {
			err = s.Close()
		}
		if (err == nil) != (want == nil) {
			t.Fatalf("whole: %v; split: %v", want, err)
		}
		var we, se *Error
		if errors.As(want, &we) != errors.As(err, &se) || we != nil && (we.Cut != se.Cut || we.Type != se.Type) {
			t.Fatalf("whole: %v; split: %v", want, err)
		}
		if want == nil && (!bytes.Equal(whole.Bytes(), b) || !bytes.Equal(split.Bytes(), b)) {
			t.Fatal("a file that passed was changed on its way")
		}
	})
}
