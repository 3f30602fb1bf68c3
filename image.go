package creative

import (
	"context"

	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/ops"
)

// Limits of the image operations (spec section 8).
const (
	// MaxImages is the most images one TextToImage call makes.
	MaxImages = 10
	// MaxLogos is the most logos one GenerateLogo call makes.
	MaxLogos = 4
	// MaxReImagineSide is the largest width and height ReImagine accepts.
	MaxReImagineSide = 1024
)

// TextToImageRequest asks for images made from a text
// (POST /image/v1/text-to-image). The ids are optional; see package ids.
type TextToImageRequest struct {
	// Prompt is the text to turn into images (required).
	Prompt string `json:"prompt"`
	// NumberOfResults is how many images to make, 1 to 10 (required).
	NumberOfResults int `json:"numberOfResults"`
	// ImageSizeID is the aspect ratio, such as ids.Size3x2. It is sent as
	// both imageSizeId and dimensionsId, since the spec names both.
	ImageSizeID ids.ImageSizeID `json:"imageSizeId,omitempty"`
	// StyleID is the style, such as ids.StyleAnime.
	StyleID ids.StyleID `json:"styleId,omitempty"`
	// CameraID is the camera style, such as ids.CameraCloseUp.
	CameraID ids.CameraID `json:"cameraId,omitempty"`
	// ColorID is the color style, such as ids.ColorPastelColors.
	ColorID ids.ColorID `json:"colorId,omitempty"`
	// LightingID is the lighting style, such as ids.LightingGoldenHour.
	LightingID ids.LightingID `json:"lightingId,omitempty"`
}

// textToImageWire is TextToImageRequest as it goes on the wire.
type textToImageWire struct {
	Prompt          string `json:"prompt"`
	NumberOfResults int    `json:"numberOfResults"`
	ImageSizeID     string `json:"imageSizeId,omitempty"`
	DimensionsID    string `json:"dimensionsId,omitempty"`
	StyleID         string `json:"styleId,omitempty"`
	CameraID        string `json:"cameraId,omitempty"`
	ColorID         string `json:"colorId,omitempty"`
	LightingID      string `json:"lightingId,omitempty"`
}

// TextToImage makes 1 to 10 images from a text.
func (c *Client) TextToImage(ctx context.Context, req TextToImageRequest, opts ...Option) ([]Image, error) {
	const op = ops.TextToImage
	v := checker{op: op}
	v.text("prompt", req.Prompt)
	v.count("numberOfResults", req.NumberOfResults, 1, MaxImages, false)
	v.id("imageSizeId", string(req.ImageSizeID), false)
	v.id("styleId", string(req.StyleID), false)
	v.id("cameraId", string(req.CameraID), false)
	v.id("colorId", string(req.ColorID), false)
	v.id("lightingId", string(req.LightingID), false)
	if err := v.err(); err != nil {
		return nil, err
	}
	wire := textToImageWire{
		Prompt: req.Prompt, NumberOfResults: req.NumberOfResults,
		ImageSizeID: string(req.ImageSizeID), DimensionsID: string(req.ImageSizeID),
		StyleID: string(req.StyleID), CameraID: string(req.CameraID),
		ColorID: string(req.ColorID), LightingID: string(req.LightingID),
	}
	return invokeJSON(ctx, c, op, wire, opts, images(req.NumberOfResults))
}

// GenerateLogoRequest asks for logos made from a text
// (POST /image/v1/generate-logo).
type GenerateLogoRequest struct {
	// Prompt is the text to turn into logos (required).
	Prompt string `json:"prompt"`
	// NumberOfResults is how many logos to make, 1 to 4; 0 leaves the
	// service's default (1).
	NumberOfResults int `json:"numberOfResults,omitempty"`
}

// GenerateLogo makes 1 to 4 logos. It returns a list whatever the count,
// since the spec does not show whether data is a list for one logo.
func (c *Client) GenerateLogo(ctx context.Context, req GenerateLogoRequest, opts ...Option) ([]Image, error) {
	const op = ops.GenerateLogo
	v := checker{op: op}
	v.text("prompt", req.Prompt)
	v.count("numberOfResults", req.NumberOfResults, 1, MaxLogos, true)
	if err := v.err(); err != nil {
		return nil, err
	}
	return invokeJSON(ctx, c, op, req, opts, images(max(req.NumberOfResults, 1)))
}

// GenerateQRRequest asks for a QR code that links to a site, styled by a
// text (POST /image/v1/generate-qr).
type GenerateQRRequest struct {
	// URL is the link the code encodes (required).
	URL string `json:"url"`
	// Prompt is the text that styles the code (required).
	Prompt string `json:"prompt"`
}

// GenerateQR makes a QR code image.
func (c *Client) GenerateQR(ctx context.Context, req GenerateQRRequest, opts ...Option) (Image, error) {
	const op = ops.GenerateQR
	v := checker{op: op}
	v.link("url", req.URL)
	v.text("prompt", req.Prompt)
	if err := v.err(); err != nil {
		return Image{}, err
	}
	return invokeJSON(ctx, c, op, req, opts, oneImage)
}

// UpScaleRequest asks for an image to be enlarged (POST /image/v1/up-scale).
type UpScaleRequest struct {
	// URL is the link of the image (required).
	URL string `json:"url"`
	// Scale is the size factor; 0 leaves the service's default. The spec
	// does not show its range.
	Scale float64 `json:"scale,omitempty"`
}

// UpScale enlarges the image at a URL.
func (c *Client) UpScale(ctx context.Context, req UpScaleRequest, opts ...Option) (Image, error) {
	const op = ops.UpScale
	v := checker{op: op}
	v.link("url", req.URL)
	v.positive("scale", req.Scale)
	if err := v.err(); err != nil {
		return Image{}, err
	}
	return invokeJSON(ctx, c, op, req, opts, oneImage)
}

// ReImagineRequest asks for an uploaded image to be re-imagined
// (POST /image/v1/re-imagine, form data).
type ReImagineRequest struct {
	// Image is a PNG, JPEG or WebP of at most 1024x1024 pixels (required).
	Image File `url:"-"`
}

// ReImagine makes a new take on an uploaded image. The format and size are
// read from the image's header before anything is sent.
func (c *Client) ReImagine(ctx context.Context, req ReImagineRequest, opts ...Option) (Image, error) {
	const op = ops.ReImagine
	v := checker{op: op}
	img := v.image("image", req.Image, MaxReImagineSide)
	if err := v.err(); err != nil {
		return Image{}, err
	}
	body, err := form(op, req, img)
	if err != nil {
		return Image{}, err
	}
	return invoke(ctx, c, op, body, opts, oneImage)
}

// RemoveBackgroundRequest asks for the background of an image to be removed
// (POST /image/v1/remove-background).
type RemoveBackgroundRequest struct {
	// URL is the link of the image (required).
	URL string `json:"url"`
}

// RemoveBackground removes the background of the image at a URL.
func (c *Client) RemoveBackground(ctx context.Context, req RemoveBackgroundRequest, opts ...Option) (Image, error) {
	return c.urlToImage(ctx, ops.RemoveBackground, req.URL, req, opts)
}

// ColorImageRequest asks for an image to be colorized
// (POST /image/v1/color-image).
type ColorImageRequest struct {
	// URL is the link of the image (required).
	URL string `json:"url"`
}

// ColorImage colorizes the image at a URL.
func (c *Client) ColorImage(ctx context.Context, req ColorImageRequest, opts ...Option) (Image, error) {
	return c.urlToImage(ctx, ops.ColorImage, req.URL, req, opts)
}

// EnhanceImageRequest asks for an image to be enhanced
// (POST /image/v1/enhance).
type EnhanceImageRequest struct {
	// URL is the link of the image (required).
	URL string `json:"url"`
}

// EnhanceImage enhances the image at a URL.
func (c *Client) EnhanceImage(ctx context.Context, req EnhanceImageRequest, opts ...Option) (Image, error) {
	return c.urlToImage(ctx, ops.EnhanceImage, req.URL, req, opts)
}

// urlToImage is the shape of the operations that take an image link and
// return one image.
func (c *Client) urlToImage(ctx context.Context, op, link string, req any, opts []Option) (Image, error) {
	v := checker{op: op}
	v.link("url", link)
	if err := v.err(); err != nil {
		return Image{}, err
	}
	return invokeJSON(ctx, c, op, req, opts, oneImage)
}

// ChangeBackgroundRequest asks for the background of an uploaded image to be
// replaced (POST /image/v1/change-background, form data).
type ChangeBackgroundRequest struct {
	// Image is a PNG, JPEG or WebP (required).
	Image File `url:"-"`
	// Prompt describes the new background (required).
	Prompt string `url:"prompt"`
}

// ChangeBackground replaces the background of an uploaded image.
func (c *Client) ChangeBackground(ctx context.Context, req ChangeBackgroundRequest, opts ...Option) (Image, error) {
	const op = ops.ChangeBackground
	v := checker{op: op}
	img := v.image("image", req.Image, 0)
	v.text("prompt", req.Prompt)
	if err := v.err(); err != nil {
		return Image{}, err
	}
	body, err := form(op, req, img)
	if err != nil {
		return Image{}, err
	}
	return invoke(ctx, c, op, body, opts, oneImage)
}
