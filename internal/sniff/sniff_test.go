package sniff

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

func TestTypeAndExt(t *testing.T) {
	var pngb, gifb bytes.Buffer
	if err := png.Encode(&pngb, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	if err := gif.Encode(&gifb, image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.Black, color.White}), nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		head     []byte
		ctype    string
		ext      string
		fallback bool // ContentType falls back to net/http
	}{
		{pngb.Bytes(), "image/png", ".png", false},
		{jpegOf(3, 2), "image/jpeg", ".jpg", false},
		{[]byte("RIFF\x1a\x00\x00\x00WEBPVP8L"), "image/webp", ".webp", false},
		{gifb.Bytes(), "image/gif", ".gif", false},
		{[]byte("RIFF\x24\x00\x00\x00WAVEfmt "), "audio/wav", ".wav", false},
		{[]byte("ID3\x04\x00"), "audio/mpeg", ".mp3", false},
		{[]byte{0xff, 0xfb, 0x90, 0x00}, "audio/mpeg", ".mp3", false},
		{[]byte("OggS\x00\x02"), "audio/ogg", ".ogg", false},
		{[]byte("fLaC\x00\x00"), "audio/flac", ".flac", false},
		{[]byte("\x00\x00\x00\x18ftypmp42"), "video/mp4", ".mp4", false},
		{[]byte("\x00\x00\x00\x18ftypM4A \x00"), "audio/mp4", ".m4a", false},
		{[]byte("\x1a\x45\xdf\xa3\x01"), "video/webm", ".webm", false},
		{[]byte("RIFF\x24\x00\x00\x00AVI "), "", "", true},
		{[]byte("hello"), "", "", true},
	}
	for _, tt := range tests {
		if got := Type(tt.head); got != tt.ctype {
			t.Errorf("Type(%q) = %q, want %q", tt.head[:min(len(tt.head), 12)], got, tt.ctype)
		}
		if got := Ext(Type(tt.head)); got != tt.ext {
			t.Errorf("Ext of %q = %q, want %q", tt.ctype, got, tt.ext)
		}
		if ct := ContentType(tt.head); tt.ctype != "" && ct != tt.ctype || tt.fallback && ct == "" {
			t.Errorf("ContentType(%q) = %q", tt.head[:min(len(tt.head), 12)], ct)
		}
	}
	if got := ContentType(nil); got != "application/octet-stream" {
		t.Errorf("ContentType(nil) = %q", got)
	}
	if got := ContentType([]byte("hello")); got != "text/plain; charset=utf-8" {
		t.Errorf("ContentType(text) = %q", got)
	}
}

// Ext knows the aliases the service and other servers use, with
// parameters and in any case; the table knows every extension once.
func TestExtAliases(t *testing.T) {
	for ct, want := range map[string]string{
		"audio/mp3": ".mp3", "Audio/MPEG; charset=x": ".mp3", "audio/x-wav": ".wav", "audio/wave": ".wav",
		"audio/opus": ".ogg", "audio/aac": ".aac", "audio/x-m4a": ".m4a", "audio/mp4": ".m4a",
		"audio/webm": ".webm", "text/html": "", "": "",
	} {
		if got := Ext(ct); got != want {
			t.Errorf("Ext(%q) = %q, want %q", ct, got, want)
		}
	}
	seen := map[string]bool{}
	for _, k := range kinds {
		if seen[k.ext] {
			t.Errorf("extension %s twice in the table", k.ext)
		}
		seen[k.ext] = true
	}
}

func TestSize(t *testing.T) {
	var pngb bytes.Buffer
	if err := png.Encode(&pngb, image.NewGray(image.Rect(0, 0, 7, 3))); err != nil {
		t.Fatal(err)
	}
	webp := []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")
	// A JPEG whose frame header is past a 2 KiB APP1 segment: beyond the
	// head, found through the window.
	small := jpegOf(5, 4)
	app := append([]byte{0xff, 0xd8, 0xff, 0xe1, 0x08, 0x02}, make([]byte, 0x800)...)
	longJPEG := append(app, small[2:]...)
	for _, tt := range []struct {
		name string
		b    []byte
		w, h int
	}{
		{"png", pngb.Bytes(), 7, 3},
		{"webp", webp, 1, 1},
		{"jpeg", jpegOf(6, 9), 6, 9},
		{"jpeg past its head", longJPEG, 5, 4},
		{"text", []byte("hello"), 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			buf := make([]byte, 512)
			n := copy(buf, tt.b)
			w, h, err := Size(bytes.NewReader(tt.b), buf[:n], ContentType(buf[:n]), int64(len(tt.b)))
			if err != nil || w != tt.w || h != tt.h {
				t.Fatalf("Size = %dx%d, %v; want %dx%d", w, h, err, tt.w, tt.h)
			}
		})
	}
	// A limit before the frame header: no size, no error.
	buf := make([]byte, 512)
	n := copy(buf, longJPEG)
	if w, h, err := Size(bytes.NewReader(longJPEG), buf[:n], "image/jpeg", 1024); w != 0 || h != 0 || err != nil {
		t.Fatalf("past the limit: %dx%d, %v", w, h, err)
	}
}

func jpegOf(w, h int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)), nil); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// jpegSize agrees with image/jpeg on the width and height of every JPEG
// that image/jpeg reads the header of.
func FuzzJPEGSize(f *testing.F) {
	f.Add(jpegOf(5, 4))
	small := jpegOf(3, 7) // with a small APP1 segment after SOI
	f.Add(append(append([]byte{0xff, 0xd8, 0xff, 0xe1, 0x00, 0x10}, make([]byte, 14)...), small[2:]...))
	f.Add([]byte("\xff\xd8\xff\xc0\x00\x11\x08\x04\x00\x03\x00\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01"))
	f.Add([]byte("\xff\xd8\xff\xff\xff\xc2\x00\x0b\x08\x00\x02\x00\x09\x01\x01\x11\x00"))
	f.Add([]byte("\xff\xd8junk\xff\xe0\x00\x02\xff\xc0\x00\x0b\x08\x00\x01\x00\x01\x01\x01\x11\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var buf [512]byte
		w, h, err := jpegSize(bytes.NewReader(b), buf[:], int64(len(b)))
		if err != nil {
			t.Fatalf("reading bytes failed: %v", err)
		}
		if w < 0 || h < 0 || w > 65535 || h > 65535 {
			t.Fatalf("impossible size %dx%d", w, h)
		}
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
		if err != nil || cfg.Width == 0 || cfg.Height == 0 {
			return
		}
		if w != cfg.Width || h != cfg.Height {
			t.Fatalf("jpegSize says %dx%d, image/jpeg %dx%d", w, h, cfg.Width, cfg.Height)
		}
	})
}

// A file's extension comes from its bytes only; a stream's from its bytes,
// then from the type its answer declared.
func TestFileExtTrustsTheBytesOnly(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n0000")
	for _, tc := range []struct {
		head []byte
		want string
	}{
		{png, ".png"},
		{[]byte("<html><script>"), ".bin"},
		{[]byte("<svg xmlns="), ".bin"},
		{nil, ".bin"},
		{[]byte{0xff, 0xf1, 0x50, 0x80}, ".aac"},
		{[]byte{0xff, 0xfb, 0x90, 0x00}, ".mp3"},
	} {
		if got := FileExt(tc.head); got != tc.want {
			t.Errorf("FileExt(%q) = %q, want %q", tc.head, got, tc.want)
		}
	}
	for _, tc := range []struct {
		declared string
		head     []byte
		want     string
	}{
		{".mp3", []byte("RIFF\x24\x00\x00\x00WAVEfmt "), ".wav"},
		{".mp3", []byte("unknown bytes"), ".mp3"},
		{".bin", []byte("ID3\x04\x00"), ".mp3"},
	} {
		if got := DeclaredExt(tc.declared, tc.head); got != tc.want {
			t.Errorf("DeclaredExt(%q, %q) = %q, want %q", tc.declared, tc.head, got, tc.want)
		}
	}
}
