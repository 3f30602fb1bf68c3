package creative

import (
	"context"

	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/ops"
)

// TextToMusicRequest asks for music made from a text
// (POST /audio/v1/text-to-music).
type TextToMusicRequest struct {
	// Prompt is the text to turn into music (required).
	Prompt string `json:"prompt"`
	// Duration is the length in seconds; 0 leaves the service's default (8).
	Duration float64 `json:"duration,omitempty"`
}

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r TextToMusicRequest) Validate() error {
	v := checker{op: ops.TextToMusic}
	v.text("prompt", r.Prompt)
	v.positive("duration", r.Duration)
	return v.err()
}

// TextToMusic makes music from a text and returns the URL of the file.
func (c *Client) TextToMusic(ctx context.Context, req TextToMusicRequest, opts ...Option) (URL, error) {
	if err := req.Validate(); err != nil {
		return "", err
	}
	return invokeJSON(ctx, c, ops.TextToMusic, req, opts, dataURLOf)
}

// TextToSpeechRequest asks for a text spoken by a voice
// (POST /audio/v1/text-to-speech).
type TextToSpeechRequest struct {
	// Prompt is the text to speak (required).
	Prompt string `json:"prompt"`
	// VoiceID is the voice, such as ids.VoiceFemale1 (required).
	VoiceID ids.VoiceID `json:"voiceId"`
}

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r TextToSpeechRequest) Validate() error {
	v := checker{op: ops.TextToSpeech}
	v.text("prompt", r.Prompt)
	v.id("voiceId", string(r.VoiceID), true)
	return v.err()
}

// TextToSpeech speaks a text and returns the audio as a stream (usually
// audio/mpeg). The caller must Close it; nothing is buffered whole. A JSON
// or text answer with status 200 is not audio: it is an *APIError.
func (c *Client) TextToSpeech(ctx context.Context, req TextToSpeechRequest, opts ...Option) (*Audio, error) {
	const op = ops.TextToSpeech
	if err := req.Validate(); err != nil {
		return nil, err
	}
	body, err := newJSONBody(op, req)
	if err != nil {
		return nil, err
	}
	rs, err := c.do(ctx, &request{op: op, body: body, accept: "audio/mpeg, application/json"}, opts)
	if err != nil {
		return nil, err
	}
	a, err := rs.audio()
	if err != nil {
		rs.Close()
		return nil, err
	}
	rs.handOver(a) // the answer's body is the speech: read it through the Audio
	return a, nil
}

// EnhanceAudioRequest asks for an audio file to be enhanced
// (POST /audio/v1/enhance, form data).
type EnhanceAudioRequest struct {
	// Audio is the file to enhance (required).
	Audio File `url:"-"`
	// TypeID is the kind of recording, such as ids.EnhancePodcast (required).
	TypeID ids.EnhanceTypeID `url:"typeId"`
}

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r EnhanceAudioRequest) Validate() error { _, err := r.check(); return err }

func (r EnhanceAudioRequest) check() (checkedFile, error) {
	v := checker{op: ops.EnhanceAudio}
	audio := v.upload("audio", r.Audio)
	v.id("typeId", string(r.TypeID), true)
	return audio, v.err()
}

// EnhanceAudio enhances an audio file and returns the URL of the result.
func (c *Client) EnhanceAudio(ctx context.Context, req EnhanceAudioRequest, opts ...Option) (URL, error) {
	const op = ops.EnhanceAudio
	audio, err := checkUploads(ctx, op, req.check, req.Audio)
	if err != nil {
		return "", err
	}
	body, err := form(op, req, audio)
	if err != nil {
		return "", err
	}
	return invoke(ctx, c, op, body, opts, dataURLOf)
}

// SplitAudioRequest asks for an audio file to be split
// (POST /audio/v1/split-audio, form data).
type SplitAudioRequest struct {
	// Audio is the file to split (required).
	Audio File `url:"-"`
}

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r SplitAudioRequest) Validate() error { _, err := r.check(); return err }

func (r SplitAudioRequest) check() (checkedFile, error) {
	v := checker{op: ops.SplitAudio}
	audio := v.upload("audio", r.Audio)
	return audio, v.err()
}

// SplitAudio splits an audio file and returns the URLs of the parts.
func (c *Client) SplitAudio(ctx context.Context, req SplitAudioRequest, opts ...Option) ([]URL, error) {
	const op = ops.SplitAudio
	audio, err := checkUploads(ctx, op, req.check, req.Audio)
	if err != nil {
		return nil, err
	}
	body, err := form(op, req, audio)
	if err != nil {
		return nil, err
	}
	return invoke(ctx, c, op, body, opts, dataURLs)
}
