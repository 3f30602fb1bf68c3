package answer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"testing"

	"github.com/creativegen/creative-go/internal/media"
	"github.com/creativegen/creative-go/internal/ops"
)

func pngFile(t testing.TB) []byte {
	var b bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegFile(t testing.TB) []byte {
	var b bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 13)
	}
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withThumbnail puts a whole JPEG (its own SOI to EOI) in an APP1 segment
// of another, as cameras put an EXIF thumbnail.
func withThumbnail(outer, thumb []byte) []byte {
	seg := []byte{0xff, 0xe1, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(thumb)+2))
	return append(append(append([]byte{0xff, 0xd8}, seg...), thumb...), outer[2:]...)
}

func gifFile(t testing.TB) []byte {
	var b bytes.Buffer
	err := gif.EncodeAll(&b, &gif.GIF{Image: []*image.Paletted{
		image.NewPaletted(image.Rect(0, 0, 8, 8), color.Palette{color.Black, color.White}),
		image.NewPaletted(image.Rect(0, 0, 8, 8), color.Palette{color.White, color.Black}),
	}, Delay: []int{1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// box is an ISO media box of type typ around body.
func box(typ string, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	return append(append(b, typ...), body...)
}

// largeBox is box with its size in the 64-bit field.
func largeBox(typ string, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 1)
	b = binary.BigEndian.AppendUint64(append(b, typ...), uint64(16+len(body)))
	return append(b, body...)
}

func mp4File(moov bool) []byte {
	f := box("ftyp", []byte("isom\x00\x00\x02\x00isomiso2mp41"))
	f = append(f, largeBox("mdat", bytes.Repeat([]byte{0xab}, 3000))...)
	if moov {
		f = append(f, box("moov", box("mvhd", make([]byte, 100)))...)
	}
	return f
}

func TestTheKindOfEveryOperation(t *testing.T) {
	want := map[string]Kind{
		ops.WriterTool: Text, ops.TextToMusic: Audio, ops.TextToSpeech: Audio, ops.EnhanceAudio: Audio,
		ops.SplitAudio: Audio, ops.TextToImage: Image, ops.GenerateLogo: Image, ops.GenerateQR: Image,
		ops.UpScale: Image, ops.ReImagine: Image, ops.RemoveBackground: Image, ops.ColorImage: Image,
		ops.EnhanceImage: Image, ops.ChangeBackground: Image, ops.InfiniteZoom: Video, ops.RemoveVideoBackground: Video,
	}
	for _, o := range ops.All {
		k, ok := want[o.Name]
		if !ok {
			t.Errorf("%s: no kind in the test's table", o.Name)
		}
		if got := For(o.Name); got != k {
			t.Errorf("For(%s) = %v, want %v", o.Name, got, k)
		}
	}
	if For("image/not-an-op") != Text {
		t.Error("an operation not in the table accepts files")
	}
}

// Each lying answer is refused by its kind: a file of another type, a
// service's error envelope or page saved as a file, a file cut where its
// format says it goes on. Each honest one passes, whatever the sizes of the
// writes that bring it.
func TestLyingAnswersAreRefused(t *testing.T) {
	pngb, jpg, gf := pngFile(t), jpegFile(t), gifFile(t)
	wav := media.Music("tune", 0.5)
	mp3 := media.Speech("hello", "v")
	mp4 := mp4File(true)
	webp := []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")
	envelope := []byte(`{"success":false,"message":"quota exceeded"}`)
	html := []byte("<!DOCTYPE html><html><script>alert(1)</script></html>")
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"></svg>`)
	thumbed := withThumbnail(jpg, jpegFile(t))
	for _, tc := range []struct {
		name string
		kind Kind
		file []byte
		cut  bool // want a cut file's error
		ok   bool
	}{
		{"png", Image, pngb, false, true},
		{"jpeg", Image, jpg, false, true},
		{"jpeg with bytes after its end", Image, append(bytes.Clone(jpg), "trailer"...), false, true},
		{"jpeg with a thumbnail", Image, thumbed, false, true},
		{"webp", Image, webp, false, true},
		{"gif", Image, gf, false, true},
		{"wav", Audio, wav, false, true},
		{"a streamed wav that states no length", Audio, riffSized(wav, 0xffffffff), false, true},
		{"a streamed wav with SoX's length", Audio, riffSized(wav, 0x7ffff024), false, true},
		{"a wav that states 0", Audio, riffSized(wav, 0), false, true},
		{"mp3", Audio, mp3, false, true},
		{"mp4", Video, mp4, false, true},
		{"gif as video", Video, gf, false, true},

		{"envelope as image", Image, envelope, false, false},
		{"envelope as audio", Audio, envelope, false, false},
		{"envelope as video", Video, envelope, false, false},
		{"html as image", Image, html, false, false},
		{"svg as image", Image, svg, false, false},
		{"html as audio", Audio, html, false, false},
		{"html as video", Video, html, false, false},
		{"empty image", Image, nil, false, false},
		{"a few bytes", Audio, []byte("ID"), false, false},
		{"png as audio", Audio, pngb, false, false},
		{"wav as image", Image, wav, false, false},
		{"wav as video", Video, wav, false, false},
		{"mp3 as video", Video, mp3, false, false},
		{"an image for a text operation", Text, pngb, false, false},

		{"cut png", Image, pngb[:len(pngb)/2], true, false},
		{"png without its IEND's CRC", Image, pngb[:len(pngb)-2], true, false},
		{"cut jpeg", Image, jpg[:len(jpg)/2], true, false},
		{"jpeg cut after its thumbnail", Image, thumbed[:len(thumbed)-len(jpg)/2], true, false},
		{"cut webp", Image, webp[:len(webp)-3], true, false},
		{"cut gif", Image, gf[:len(gf)-1], true, false},
		{"cut wav", Audio, wav[:len(wav)/2], true, false},
		{"wav cut in its header", Audio, wav[:6], false, false},
		{"cut mp4", Video, mp4[:len(mp4)-10], true, false},
		{"mp4 cut inside its 64-bit mdat", Video, mp4[:1000], true, false},
		{"mp4 without moov", Video, mp4File(false), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, split := range []int{0, 1, 3, 7} {
				var out bytes.Buffer
				c := New(tc.kind, &out)
				err := writeSplit(c, tc.file, split)
				if err == nil {
					err = c.Close()
				}
				if tc.ok {
					if err != nil {
						t.Fatalf("split %d: %v", split, err)
					}
					if !bytes.Equal(out.Bytes(), tc.file) {
						t.Fatalf("split %d: %d bytes passed, want %d", split, out.Len(), len(tc.file))
					}
					continue
				}
				var ae *Error
				if !errors.As(err, &ae) {
					t.Fatalf("split %d: err = %v, want an *Error", split, err)
				}
				if ae.Cut != tc.cut {
					t.Fatalf("split %d: Cut = %v, want %v (%v)", split, ae.Cut, tc.cut, err)
				}
				if !tc.cut && out.Len() > 0 {
					t.Fatalf("split %d: %d bytes of a file of the wrong kind reached the writer", split, out.Len())
				}
			}
		})
	}
}

// writeSplit writes b in pieces: of size n, of random sizes for 7, whole
// for 0.
func writeSplit(c *Check, b []byte, n int) error {
	r := rand.New(rand.NewPCG(uint64(len(b)), 1))
	for len(b) > 0 {
		k := len(b)
		switch n {
		case 0:
		case 7:
			k = min(k, 1+r.IntN(40))
		default:
			k = min(k, n)
		}
		if _, err := c.Write(b[:k]); err != nil {
			return err
		}
		b = b[k:]
	}
	return nil
}

// A cut WAV says how long its header says it is, and the extension of a
// checked file is its content's.
func TestACutWAVSaysWhatItsHeaderStates(t *testing.T) {
	wav := media.Music("tune", 0.1)
	err := Bytes(Audio, wav[:len(wav)/2])
	var ae *Error
	if !errors.As(err, &ae) || !ae.Cut || !bytes.Contains([]byte(err.Error()), []byte("states 4454 bytes")) {
		t.Fatalf("err = %v", err)
	}
	c := New(Audio, &bytes.Buffer{})
	if _, err := c.Write(wav); err != nil || c.Close() != nil || c.Ext() != ".wav" || c.Type() != "audio/wav" {
		t.Fatalf("a whole WAV: %v, %q %q", err, c.Ext(), c.Type())
	}
}

// riffSized is a copy of the RIFF file b whose header states size.
func riffSized(b []byte, size uint32) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[4:8], size)
	return b
}
