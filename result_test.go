package creative

import (
	"context"
	"io"
	"net/http"
	"testing"

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
