package creative

import (
	"context"

	"github.com/creativegen/creative-go/internal/ops"
)

// InfiniteZoomRequest asks for an infinite-zoom video made from a text
// (POST /video/v1/infinite-zoom).
type InfiniteZoomRequest struct {
	// Prompt is the text to turn into an image to zoom into (required).
	Prompt string `json:"prompt"`
	// NumberOfIteration is the number of zoom steps, at least 1; 0 leaves
	// the service's default (2).
	NumberOfIteration int `json:"numberOfIteration,omitempty"`
}

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r InfiniteZoomRequest) Validate() error {
	v := checker{op: ops.InfiniteZoom}
	v.text("prompt", r.Prompt)
	v.count("numberOfIteration", r.NumberOfIteration, 1, maxInt)
	return v.err()
}

// InfiniteZoom makes an infinite-zoom video and returns its URL.
func (c *Client) InfiniteZoom(ctx context.Context, req InfiniteZoomRequest, opts ...Option) (URL, error) {
	if err := req.Validate(); err != nil {
		return "", err
	}
	return invokeJSON(ctx, c, ops.InfiniteZoom, req, opts, dataURLOf)
}

// RemoveVideoBackgroundRequest asks for the background of a video to be
// removed (POST /video/v1/remove-background).
type RemoveVideoBackgroundRequest struct {
	// URL is the link of the video (required).
	URL string `json:"url"`
}

// RemoveVideoBackground removes a video's background and returns the URL of
// the result.
func (c *Client) RemoveVideoBackground(ctx context.Context, req RemoveVideoBackgroundRequest, opts ...Option) (URL, error) {
	if err := req.Validate(); err != nil {
		return "", err
	}
	return invokeJSON(ctx, c, ops.RemoveVideoBackground, req, opts, dataURLOf)
}

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r RemoveVideoBackgroundRequest) Validate() error {
	return checkLink(ops.RemoveVideoBackground, r.URL)
}
