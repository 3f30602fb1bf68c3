package creative

import (
	"bytes"
	"fmt"
	"image"
	_ "image/gif" // Image.Decode of GIF results
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/creativegen/creative-go/internal/sniff"
)

// A URL is the address of a file the service generated (music, enhanced
// audio, a video). Fetch it with Client.Download or any HTTP client; it
// needs no access key.
type URL string

// String returns the URL as text.
func (u URL) String() string { return string(u) }

// An Image is a generated image: its bytes, decoded from the base64 the
// service sent.
type Image struct {
	// Data is the encoded image file (PNG, JPEG or WebP as the service
	// chose), ready to be written to disk.
	Data []byte
}

// ContentType is the MIME type sniffed from the image's first bytes, such
// as "image/png"; "application/octet-stream" when it is not recognised.
func (im Image) ContentType() string {
	ct := sniff.Type(im.Data)
	if !strings.HasPrefix(ct, "image/") {
		return "application/octet-stream"
	}
	return ct
}

// Ext is the file name extension that fits ContentType, such as ".png";
// ".bin" when the type is not recognised.
func (im Image) Ext() string {
	if ext := sniff.Ext(im.ContentType()); ext != "" {
		return ext
	}
	return ".bin"
}

// String describes the image without its bytes, such as
// "image/png 1024x768, 48213 bytes", so that printing an Image (with %v or
// %+v) does not dump them.
func (im Image) String() string {
	ct := im.ContentType()
	s := ct
	if w, h, _ := sniff.Size(bytes.NewReader(im.Data), im.Data[:min(len(im.Data), 512):min(len(im.Data), 512)], ct, int64(len(im.Data))); w > 0 {
		s += fmt.Sprintf(" %dx%d", w, h)
	}
	return fmt.Sprintf("%s, %d bytes", s, len(im.Data))
}

// GoString is String for %#v, in the shape of the Go value.
func (im Image) GoString() string {
	return fmt.Sprintf("creative.Image{Data: []byte{/* %s */}}", im)
}

// MaxDecodePixels is the largest image, in pixels, that Decode decodes: a
// few bytes of header can declare an image whose pixels would not fit in
// memory.
const MaxDecodePixels = 64 << 20

// Decode decodes the image (PNG, JPEG, GIF or WebP), after checking the
// dimensions its header declares against MaxDecodePixels.
func (im Image) Decode() (image.Image, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(im.Data))
	if err != nil {
		return nil, fmt.Errorf("creative: decoding %s image: %w", im.ContentType(), err)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > MaxDecodePixels {
		return nil, fmt.Errorf("creative: decoding %s image: it declares %dx%d pixels, more than MaxDecodePixels (%d)",
			im.ContentType(), cfg.Width, cfg.Height, int64(MaxDecodePixels))
	}
	img, _, err := image.Decode(bytes.NewReader(im.Data))
	if err != nil {
		return nil, fmt.Errorf("creative: decoding %s image: %w", im.ContentType(), err)
	}
	return img, nil
}

// WriteTo writes the image's bytes to w.
func (im Image) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(im.Data)
	return int64(n), err
}

// Save writes the image's bytes to the file at path atomically (a
// temporary file in the same folder, then a rename), with mode 0644 before
// the umask.
func (im Image) Save(path string) error {
	_, err := writeFileAtomic(path, im.WriteTo)
	return err
}

// Audio is a stream of generated speech. Read it (or WriteTo/Save it) and
// Close it: Close releases the connection and ends the call's timeout. It is
// never buffered whole, and reading it past the call's WithMaxResponseBytes
// fails.
type Audio struct {
	// ContentType is the answer's Content-Type, such as "audio/mpeg".
	ContentType string
	// ContentLength is the stream's length in bytes, -1 when unknown.
	ContentLength int64

	body   io.Reader
	closer io.Closer
	closed atomic.Bool // Close was called: reads fail with ErrClosed
	once   sync.Once
}

// errZeroAudio is the error of an Audio that came from no call.
var errZeroAudio = fmt.Errorf("%w: a zero or nil Audio holds no stream: it comes from TextToSpeech", ErrMisuse)

// Read reads the audio stream. After Close, or when Close ends a read from
// another goroutine, it fails with ErrClosed.
func (a *Audio) Read(p []byte) (int, error) {
	if a == nil || a.body == nil {
		return 0, errZeroAudio
	}
	if a.closed.Load() {
		return 0, ErrClosed
	}
	n, err := a.body.Read(p)
	if err != nil && a.closed.Load() {
		return n, ErrClosed
	}
	return n, err
}

// Close releases the connection (and the call's timeout). It is safe to
// call more than once, and from another goroutine while the stream is read.
func (a *Audio) Close() error {
	if a == nil || a.closer == nil {
		return nil
	}
	var err error
	a.once.Do(func() {
		a.closed.Store(true)
		err = a.closer.Close()
	})
	return err
}

// Ext is the file name extension that fits ContentType, such as ".mp3";
// ".bin" when the type is not a known audio type.
func (a *Audio) Ext() string {
	if a == nil {
		return ".bin"
	}
	mt := strings.ToLower(strings.TrimSpace(a.ContentType))
	if ext := sniff.Ext(mt); ext != "" && strings.HasPrefix(mt, "audio/") {
		return ext
	}
	return ".bin"
}

// WriteTo copies the rest of the stream to w and closes it.
func (a *Audio) WriteTo(w io.Writer) (int64, error) {
	defer a.Close()
	if w == nil {
		return 0, fmt.Errorf("%w: Audio.WriteTo: nil io.Writer", ErrMisuse)
	}
	return io.Copy(w, readOnly{a})
}

// readOnly hides the WriteTo of what it reads, so that io.Copy reads it.
type readOnly struct{ io.Reader }

// Save writes the rest of the stream to the file at path atomically (a
// temporary file in the same folder, then a rename; nothing is left behind
// on failure) and closes the stream.
func (a *Audio) Save(path string) error {
	defer a.Close()
	_, err := writeFileAtomic(path, func(w io.Writer) (int64, error) { return io.Copy(w, readOnly{a}) })
	return err
}

// WriterResult is what the writer tool wrote.
type WriterResult struct {
	// Language is the language the text is in.
	Language string `json:"language"`
	// UseCase is the use case the text was written for.
	UseCase string `json:"useCase"`
	// WordCount is the number of words the service counted over all choices.
	WordCount int `json:"wordCount"`
	// Choices are the texts written, one per requested item.
	Choices []WriterChoice `json:"choices"`
}

// Text returns the texts of the choices in order as one text, each set
// apart from the next by a line holding "---": what a command line shows
// and a batch records for a writer call.
func (r *WriterResult) Text() string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for i, ch := range r.Choices {
		if i > 0 {
			b.WriteString(choiceBreak)
		}
		b.WriteString(ch.Text)
	}
	return b.String()
}

// choiceBreak sets two choices of a WriterResult apart in Text.
const choiceBreak = "\n\n---\n\n"

// A WriterChoice is one text the writer tool wrote.
type WriterChoice struct {
	// Text is the written text.
	Text string `json:"text"`
	// Index is the choice's position as the service numbered it.
	Index int `json:"index"`
	// WordCount is the number of words in Text, as the service counted.
	WordCount int `json:"wordCount"`
}
