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
	// NumberOfResults is how many images to make, 1 to 10; 0 means 1.
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

// results is how many images the wire asks for (revalidate).
func (w textToImageWire) results() int {
	return ops.OrDefault(ops.TextToImage, "numberOfResults", w.NumberOfResults)
}

// results is how many logos r asks for (revalidate).
func (r GenerateLogoRequest) results() int {
	return ops.OrDefault(ops.GenerateLogo, "numberOfResults", r.NumberOfResults)
}

// Validate is the validation of the request the wire holds, for a body
// WithJSONSet changed (revalidate).
func (w textToImageWire) Validate() error {
	err := TextToImageRequest{Prompt: w.Prompt, NumberOfResults: w.NumberOfResults, ImageSizeID: ids.ImageSizeID(w.ImageSizeID),
		StyleID: ids.StyleID(w.StyleID), CameraID: ids.CameraID(w.CameraID), ColorID: ids.ColorID(w.ColorID), LightingID: ids.LightingID(w.LightingID)}.Validate()
	if err != nil {
		return err
	}
	v := checker{op: ops.TextToImage}
	v.id("dimensionsId", w.DimensionsID, false)
	return v.err()
}

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r TextToImageRequest) Validate() error {
	v := checker{op: ops.TextToImage}
	v.text("prompt", r.Prompt)
	v.count("numberOfResults", r.NumberOfResults, 1, MaxImages)
	v.id("imageSizeId", string(r.ImageSizeID), false)
	v.id("styleId", string(r.StyleID), false)
	v.id("cameraId", string(r.CameraID), false)
	v.id("colorId", string(r.ColorID), false)
	v.id("lightingId", string(r.LightingID), false)
	return v.err()
}

// TextToImage makes 1 to 10 images from a text.
func (c *Client) TextToImage(ctx context.Context, req TextToImageRequest, opts ...Option) ([]Image, error) {
	const op = ops.TextToImage
	if err := req.Validate(); err != nil {
		return nil, err
	}
	n := ops.OrDefault(op, "numberOfResults", req.NumberOfResults)
	wire := textToImageWire{
		Prompt: req.Prompt, NumberOfResults: n,
		ImageSizeID: string(req.ImageSizeID), DimensionsID: string(req.ImageSizeID),
		StyleID: string(req.StyleID), CameraID: string(req.CameraID),
		ColorID: string(req.ColorID), LightingID: string(req.LightingID),
	}
	return invokeJSON(ctx, c, op, wire, opts, images(n))
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

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r GenerateLogoRequest) Validate() error {
	v := checker{op: ops.GenerateLogo}
	v.text("prompt", r.Prompt)
	v.count("numberOfResults", r.NumberOfResults, 1, MaxLogos)
	return v.err()
}

// GenerateLogo makes 1 to 4 logos. It returns a list whatever the count,
// since the spec does not show whether data is a list for one logo.
func (c *Client) GenerateLogo(ctx context.Context, req GenerateLogoRequest, opts ...Option) ([]Image, error) {
	const op = ops.GenerateLogo
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return invokeJSON(ctx, c, op, req, opts, images(ops.OrDefault(op, "numberOfResults", req.NumberOfResults)))
}

// GenerateQRRequest asks for a QR code that links to a site, styled by a
// text (POST /image/v1/generate-qr).
type GenerateQRRequest struct {
	// URL is the link the code encodes (required).
	URL string `json:"url"`
	// Prompt is the text that styles the code (required).
	Prompt string `json:"prompt"`
}

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r GenerateQRRequest) Validate() error {
	v := checker{op: ops.GenerateQR}
	v.link("url", r.URL)
	v.text("prompt", r.Prompt)
	return v.err()
}

// GenerateQR makes a QR code image.
func (c *Client) GenerateQR(ctx context.Context, req GenerateQRRequest, opts ...Option) (Image, error) {
	if err := req.Validate(); err != nil {
		return Image{}, err
	}
	return invokeJSON(ctx, c, ops.GenerateQR, req, opts, oneImage)
}

// UpScaleRequest asks for an image to be enlarged (POST /image/v1/up-scale).
type UpScaleRequest struct {
	// URL is the link of the image (required).
	URL string `json:"url"`
	// Scale is the size factor; 0 leaves the service's default. The spec
	// does not show its range.
	Scale float64 `json:"scale,omitempty"`
}

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r UpScaleRequest) Validate() error {
	v := checker{op: ops.UpScale}
	v.link("url", r.URL)
	v.positive("scale", r.Scale)
	return v.err()
}

// UpScale enlarges the image at a URL.
func (c *Client) UpScale(ctx context.Context, req UpScaleRequest, opts ...Option) (Image, error) {
	if err := req.Validate(); err != nil {
		return Image{}, err
	}
	return invokeJSON(ctx, c, ops.UpScale, req, opts, oneImage)
}

// ReImagineRequest asks for an uploaded image to be re-imagined
// (POST /image/v1/re-imagine, form data).
type ReImagineRequest struct {
	// Image is a PNG, JPEG or WebP of at most 1024x1024 pixels (required).
	Image File `url:"-"`
}

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
// The image's format and size are read from its header.
func (r ReImagineRequest) Validate() error { _, err := r.check(); return err }

func (r ReImagineRequest) check() (checkedFile, error) {
	v := checker{op: ops.ReImagine}
	img := v.image("image", r.Image, MaxReImagineSide)
	return img, v.err()
}

// ReImagine makes a new take on an uploaded image. The format and size are
// read from the image's header before anything is sent.
func (c *Client) ReImagine(ctx context.Context, req ReImagineRequest, opts ...Option) (Image, error) {
	const op = ops.ReImagine
	img, err := checkUploads(ctx, op, req.check, req.Image)
	if err != nil {
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

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r RemoveBackgroundRequest) Validate() error { return checkLink(ops.RemoveBackground, r.URL) }

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

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r ColorImageRequest) Validate() error { return checkLink(ops.ColorImage, r.URL) }

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

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r EnhanceImageRequest) Validate() error { return checkLink(ops.EnhanceImage, r.URL) }

// urlToImage is the shape of the operations that take an image link and
// return one image.
func (c *Client) urlToImage(ctx context.Context, op, link string, req any, opts []Option) (Image, error) {
	if err := checkLink(op, link); err != nil {
		return Image{}, err
	}
	return invokeJSON(ctx, c, op, req, opts, oneImage)
}

// checkLink is the validation of a request whose one field is a link.
func checkLink(op, link string) error {
	v := checker{op: op}
	v.link("url", link)
	return v.err()
}

// ChangeBackgroundRequest asks for the background of an uploaded image to be
// replaced (POST /image/v1/change-background, form data).
type ChangeBackgroundRequest struct {
	// Image is a PNG, JPEG or WebP (required).
	Image File `url:"-"`
	// Prompt describes the new background (required).
	Prompt string `url:"prompt"`
}

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
// The image's format is read from its header.
func (r ChangeBackgroundRequest) Validate() error { _, err := r.check(); return err }

func (r ChangeBackgroundRequest) check() (checkedFile, error) {
	v := checker{op: ops.ChangeBackground}
	img := v.image("image", r.Image, 0)
	v.text("prompt", r.Prompt)
	return img, v.err()
}

// ChangeBackground replaces the background of an uploaded image.
func (c *Client) ChangeBackground(ctx context.Context, req ChangeBackgroundRequest, opts ...Option) (Image, error) {
	const op = ops.ChangeBackground
	img, err := checkUploads(ctx, op, req.check, req.Image)
	if err != nil {
		return Image{}, err
	}
	body, err := form(op, req, img)
	if err != nil {
		return Image{}, err
	}
	return invoke(ctx, c, op, body, opts, oneImage)
}
