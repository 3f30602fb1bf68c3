package answer

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// chunks writes b to w in pieces of n bytes, as a stream arrives.
func inChunks(b []byte, n int) func(io.Writer) (int64, error) {
	return func(w io.Writer) (int64, error) {
		var total int64
		for len(b) > 0 {
			k := min(n, len(b))
			m, err := w.Write(b[:k])
			total += int64(m)
			if err != nil {
				return total, err
			}
			b = b[k:]
		}
		return total, nil
	}
}

func TestKeepHandsOnEveryByteOfARefusedAnswer(t *testing.T) {
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>`)
	for _, n := range []int{1, 5, 16, 1 << 20} {
		var got bytes.Buffer
		var told *Error
		_, err := Keep("image/text-to-image", &got, inChunks(svg, n), func(e *Error) {
			if got.Len() != 0 {
				t.Errorf("chunks of %d: reject told after %d bytes reached the writer", n, got.Len())
			}
			told = e
		})
		var ae *Error
		if !errors.As(err, &ae) || ae != told || ae.Cut {
			t.Fatalf("chunks of %d: err %v, told %v", n, err, told)
		}
		if !bytes.Equal(got.Bytes(), svg) {
			t.Fatalf("chunks of %d: kept %q, want every byte", n, got.Bytes())
		}
	}
}

func TestKeepKeepsAnAnswerTooShortToTellItsType(t *testing.T) {
	var got bytes.Buffer
	rejected := false
	_, err := Keep("audio/text-to-music", &got, inChunks([]byte("oops"), 2), func(*Error) { rejected = true })
	if _, ok := errors.AsType[*Error](err); !ok || !rejected || got.String() != "oops" {
		t.Fatalf("err %v, rejected %v, kept %q", err, rejected, got.String())
	}
}

func TestKeepPassesAnAcceptedAnswerAsFillDoes(t *testing.T) {
	png := pngFile(t)
	var got bytes.Buffer
	_, err := Keep("image/text-to-image", &got, inChunks(png, 7), func(*Error) { t.Error("an accepted answer was refused") })
	if err != nil || !bytes.Equal(got.Bytes(), png) {
		t.Fatalf("err %v, %d of %d bytes", err, got.Len(), len(png))
	}
	got.Reset()
	_, err = Keep("image/text-to-image", &got, inChunks(png[:len(png)-20], 7), func(*Error) { t.Error("a cut answer is refused at its end, not its head") })
	if ae, ok := errors.AsType[*Error](err); !ok || !ae.Cut || got.Len() != len(png)-20 {
		t.Fatalf("cut: err %v, %d bytes", err, got.Len())
	}
}
