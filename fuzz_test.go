package creative

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"testing"
)

// FuzzSniff inspects arbitrary uploads: no panic, no huge allocation, and
// a type and size that agree with the bytes.
func FuzzSniff(f *testing.F) {
	f.Add(pngHeader(3, 2))
	f.Add(jpegOf(5, 4))
	f.Add(webpLossless1x1)
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xff\xff\xff\xff\xff\xff\xff\x08\x02\x00\x00\x00"))
	f.Add([]byte("\xff\xd8\xff\xc0\x00\x11\x08\xff\xff\xff\xff"))
	f.Add([]byte("RIFF\xff\xff\xff\xffWEBPVP8X\x0a\x00\x00\x00\x10\x00\x00\x00\xff\xff\xff\xff\xff\xff"))
	f.Add([]byte("RIFF\x24\x00\x00\x00WAVEfmt "))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, file := range []File{FileFromBytes("x", b), FileFromReader("x", oneShot{bytes.NewReader(b)})} {
			info, err := file.inspect()
			if err != nil {
				t.Fatalf("inspecting bytes failed: %v", err)
			}
			if info.contentType == "" {
				t.Fatal("no content type")
			}
			// A one-shot reader is read ahead only as far as sniffing needs:
			// past that, its size is unknown until it ends.
			if info.size != int64(len(b)) && !(info.size == -1 && len(b) >= sniffLen) {
				t.Fatalf("size %d, want %d", info.size, len(b))
			}
			if info.width < 0 || info.height < 0 {
				t.Fatal("negative dimensions")
			}
			v := checker{op: "fuzz"}
			v.image("image", file, MaxReImagineSide)
		}
	})
}

// FuzzMultipart lays out arbitrary forms: what mime/multipart reads back
// must equal what was given, and the length must be the declared one.
func FuzzMultipart(f *testing.F) {
	f.Add("typeId", "664f30c0ba9c162a962f75b6", "talk.wav", []byte("RIFF....WAVE"))
	f.Add("prompt", "a beach \"at\" sunset\r\n--x", `we"ird\name.png`, pngHeader(2, 2))
	f.Add("", "", "", []byte{})
	f.Fuzz(func(t *testing.T, field, value, name string, content []byte) {
		fields := url.Values{}
		if field != "" {
			fields.Set(field, value)
		}
		upload := FileFromBytes(name, content)
		info, err := upload.inspect()
		if err != nil {
			t.Fatal(err)
		}
		m, err := newMultipart("fuzz", fields, "file", upload, info)
		if err != nil {
			t.Fatal(err)
		}
		r, err := m.open()
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := r.(interface{ Len() int }); !ok || l.Len() != len(body) {
			t.Fatalf("declared length is not the body's %d", len(body))
		}
		_, params, err := mime.ParseMediaType(m.contentType())
		if err != nil {
			t.Fatal(err)
		}
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		got := map[string]string{}
		var file []byte
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("reading the form back: %v", err)
			}
			b, _ := io.ReadAll(p)
			if p.FormName() == "file" && p.FileName() != "" || p.FormName() == "file" && name == "" {
				file = b
				continue
			}
			got[p.FormName()] = string(b)
		}
		if !bytes.Equal(file, content) && !(len(file) == 0 && len(content) == 0) {
			t.Fatalf("file content differs: %q vs %q", file, content)
		}
		if field != "" && field != "file" && headerSafe(field) == field {
			if got[field] != value {
				t.Fatalf("field %q: got %q, want %q", field, got[field], value)
			}
		}
	})
}
