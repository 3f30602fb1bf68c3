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
	// NumberOfIteration is the number of zoom steps; 0 leaves the service's
	// default (2).
	NumberOfIteration int `json:"numberOfIteration,omitempty"`
}

// InfiniteZoom makes an infinite-zoom video and returns its URL.
func (c *Client) InfiniteZoom(ctx context.Context, req InfiniteZoomRequest, opts ...Option) (URL, error) {
	const op = ops.InfiniteZoom
	v := checker{op: op}
	v.text("prompt", req.Prompt)
	v.count("numberOfIteration", req.NumberOfIteration, 1, maxInt, true)
	if err := v.err(); err != nil {
		return "", err
	}
	return invokeJSON(ctx, c, op, req, opts, dataURLOf)
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
	const op = ops.RemoveVideoBackground
	v := checker{op: op}
	v.link("url", req.URL)
	if err := v.err(); err != nil {
		return "", err
	}
	return invokeJSON(ctx, c, op, req, opts, dataURLOf)
}
