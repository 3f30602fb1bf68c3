package creative

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

func TestAudioExtFitsItsContentType(t *testing.T) {
	tests := []struct{ contentType, ext string }{
		{"audio/mpeg", ".mp3"},
		{"audio/mp3", ".mp3"},
		{"Audio/MPEG; charset=binary", ".mp3"},
		{" audio/wav ", ".wav"},
		{"audio/x-wav", ".wav"},
		{"audio/wave", ".wav"},
		{"audio/ogg; codecs=opus", ".ogg"},
		{"audio/opus", ".ogg"},
		{"audio/aac", ".aac"},
		{"audio/flac", ".flac"},
		{"audio/webm", ".webm"},
		{"audio/mp4", ".m4a"},
		{"audio/x-m4a", ".m4a"},
		{"application/octet-stream", ".bin"},
		{"", ".bin"},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			assert.Equal(t, tt.ext, (&Audio{ContentType: tt.contentType}).Ext())
		})
	}
}

func TestAudioExtOfSpeechFromTheWire(t *testing.T) {
	ss := newStampServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "audio/wav")
		_, _ = io.WriteString(w, "RIFF....WAVE")
	})
	audio, err := newTestClient(t, ss.URL).TextToSpeech(context.Background(), TextToSpeechRequest{Prompt: "p", VoiceID: ids.VoiceFemale1})
	require.NoError(t, err)
	defer audio.Close()
	assert.Equal(t, ".wav", audio.Ext())
}

func TestTextToSpeechSaveWritesTheStream(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/mpeg")
		_, _ = w.Write([]byte("ID3-mp3-bytes"))
	})
	audio, err := newTestClient(t, ts.URL, WithTimeout(5*time.Second)).TextToSpeech(context.Background(), TextToSpeechRequest{Prompt: "p", VoiceID: ids.VoiceMale1})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "s.mp3")
	require.NoError(t, audio.Save(path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "ID3-mp3-bytes", string(b))
}

func TestImageHelpers(t *testing.T) {
	tests := []struct {
		data      []byte
		ctype     string
		ext       string
		decodable bool
	}{
		{pngBytes, "image/png", ".png", true},
		{jpegOf(3, 2), "image/jpeg", ".jpg", true},
		{webpLossless1x1, "image/webp", ".webp", true},
		{[]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), "image/gif", ".gif", false},
		{[]byte("hello"), "application/octet-stream", ".bin", false},
	}
	for _, tt := range tests {
		t.Run(tt.ctype, func(t *testing.T) {
			im := Image{Data: tt.data}
			assert.Equal(t, tt.ctype, im.ContentType())
			assert.Equal(t, tt.ext, im.Ext())
			_, err := im.Decode()
			assert.Equal(t, tt.decodable, err == nil, "%v", err)
			var b bytes.Buffer
			n, err := im.WriteTo(&b)
			require.NoError(t, err)
			assert.Equal(t, int64(len(tt.data)), n)
			path := filepath.Join(t.TempDir(), "x"+tt.ext)
			require.NoError(t, im.Save(path))
			saved, _ := os.ReadFile(path)
			assert.Equal(t, tt.data, saved)
		})
	}
	decoded, err := Image{Data: pngBytes}.Decode()
	require.NoError(t, err)
	assert.Equal(t, 4, decoded.Bounds().Dx())
}

// Printing an Image says what it is, not its bytes, with %v, %+v, %s and
// %#v.
func TestImagePrintsWithoutItsBytes(t *testing.T) {
	im := Image{Data: pngHeader(640, 480)}
	want := fmt.Sprintf("image/png 640x480, %d bytes", len(im.Data))
	for _, verb := range []string{"%v", "%+v", "%s"} {
		assert.Equal(t, want, fmt.Sprintf(verb, im), verb)
	}
	assert.Equal(t, "creative.Image{Data: []byte{/* "+want+" */}}", fmt.Sprintf("%#v", im))
	assert.Equal(t, "{[image/jpeg 3x2, "+strconv.Itoa(len(jpegOf(3, 2)))+" bytes]}", fmt.Sprintf("%v", struct{ I []Image }{[]Image{{jpegOf(3, 2)}}}))
	assert.Equal(t, "application/octet-stream, 0 bytes", Image{}.String())
}

// A failed Save names the path asked for, not the temporary file, and
// leaves nothing behind.
func TestImageSaveErrorNamesTheTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "taken.png")
	require.NoError(t, os.Mkdir(path, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(path, "inside"), nil, 0o644))
	err := Image{Data: pngBytes}.Save(path)
	require.Error(t, err)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, path, pe.Path)
	assert.NotContains(t, err.Error(), ".tmp")
	assert.True(t, strings.HasPrefix(err.Error(), "creative: "), err.Error())
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "a temporary file was left behind")
}

func TestWriterResultTextSetsChoicesApart(t *testing.T) {
	tests := []struct {
		choices []string
		want    string
	}{
		{nil, ""},
		{[]string{"one"}, "one"},
		{[]string{"one", "two", "three"}, "one\n\n---\n\ntwo\n\n---\n\nthree"},
	}
	for _, tt := range tests {
		r := &WriterResult{}
		for i, c := range tt.choices {
			r.Choices = append(r.Choices, WriterChoice{Text: c, Index: i})
		}
		if got := r.Text(); got != tt.want {
			t.Errorf("Text() of %q = %q, want %q", tt.choices, got, tt.want)
		}
	}
}
