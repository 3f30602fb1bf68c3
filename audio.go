package creative

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/creativegen/creative-go/ids"
)

// TextToMusicRequest asks for music made from a text
// (POST /audio/v1/text-to-music).
type TextToMusicRequest struct {
	// Prompt is the text to turn into music (required).
	Prompt string `json:"prompt"`
	// Duration is the length in seconds; 0 leaves the service's default (8).
	Duration float64 `json:"duration,omitempty"`
}

// TextToMusic makes music from a text and returns the URL of the file.
func (c *Client) TextToMusic(ctx context.Context, req TextToMusicRequest) (URL, error) {
	const op = "audio/text-to-music"
	v := checker{op: op}
	v.text("prompt", req.Prompt)
	v.positive("duration", req.Duration)
	if err := v.err(); err != nil {
		return "", err
	}
	return callJSONFast(ctx, c, &request{op: op, body: req}, fastURL, decodeURL)
}

// TextToSpeechRequest asks for a text spoken by a voice
// (POST /audio/v1/text-to-speech).
type TextToSpeechRequest struct {
	// Prompt is the text to speak (required).
	Prompt string `json:"prompt"`
	// VoiceID is the voice, such as ids.VoiceFemale1 (required).
	VoiceID ids.VoiceID `json:"voiceId"`
}

// TextToSpeech speaks a text and returns the audio as a stream (usually
// audio/mpeg). The caller must Close it; nothing is buffered whole. A JSON
// or text answer with status 200 is not audio: it is an *APIError.
func (c *Client) TextToSpeech(ctx context.Context, req TextToSpeechRequest) (*Audio, error) {
	const op = "audio/text-to-speech"
	v := checker{op: op}
	v.text("prompt", req.Prompt)
	v.id("voiceId", string(req.VoiceID), true)
	if err := v.err(); err != nil {
		return nil, err
	}
	r := &request{op: op, body: req, method: http.MethodPost, accept: "audio/mpeg, application/json"}
	resp, release, cl, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" || strings.HasPrefix(mt, "text/") {
		// An envelope where audio was promised (a failure reported with
		// status 200), or a page from something in between: not audio.
		defer release()
		body, err := readAll(resp)
		if err != nil {
			return nil, &NetworkError{Operation: op, Attempts: cl.attempts, Err: fmt.Errorf("reading the answer: %w", err)}
		}
		if mt != "application/json" {
			return nil, cl.unexpected(resp.StatusCode, body, "%s", describeBody(resp.Header.Get("Content-Type"), body))
		}
		if _, err := cl.envelopeData(resp, body); err != nil {
			return nil, err
		}
		return nil, cl.unexpected(resp.StatusCode, body, "a JSON envelope came where audio was promised")
	}
	return &Audio{ContentType: resp.Header.Get("Content-Type"), ContentLength: resp.ContentLength, body: resp.Body, release: release}, nil
}

// EnhanceAudioRequest asks for an audio file to be enhanced
// (POST /audio/v1/enhance, form data).
type EnhanceAudioRequest struct {
	// Audio is the file to enhance (required).
	Audio File `url:"-"`
	// TypeID is the kind of recording, such as ids.EnhancePodcast (required).
	TypeID ids.EnhanceTypeID `url:"-"`
}

// EnhanceAudio enhances an audio file and returns the URL of the result.
func (c *Client) EnhanceAudio(ctx context.Context, req EnhanceAudioRequest) (URL, error) {
	const op = "audio/enhance"
	v := checker{op: op}
	v.upload("audio", req.Audio)
	v.id("typeId", string(req.TypeID), true)
	if err := v.err(); err != nil {
		return "", err
	}
	// The form is built from a plain string: go-querystring would print the
	// typed id through its String method, which gives the label.
	fields := struct {
		TypeID string `url:"typeId"`
	}{string(req.TypeID)}
	body, err := form(op, fields, "audio", req.Audio)
	if err != nil {
		return "", err
	}
	return callJSONFast(ctx, c, &request{op: op, body: body}, fastURL, decodeURL)
}

// SplitAudioRequest asks for an audio file to be split
// (POST /audio/v1/split-audio, form data).
type SplitAudioRequest struct {
	// Audio is the file to split (required).
	Audio File `url:"-"`
}

// SplitAudio splits an audio file and returns the URLs of the parts.
func (c *Client) SplitAudio(ctx context.Context, req SplitAudioRequest) ([]URL, error) {
	const op = "audio/split-audio"
	v := checker{op: op}
	v.upload("audio", req.Audio)
	if err := v.err(); err != nil {
		return nil, err
	}
	body, err := form(op, req, "audio", req.Audio)
	if err != nil {
		return nil, err
	}
	return callJSON(ctx, c, &request{op: op, body: body}, decodeURLs)
}
