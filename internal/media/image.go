// Package media makes the deterministic images, audio and animations that
// the fake service (package creativetest) answers with. Every output depends
// only on its inputs.
package media

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	_ "image/gif"  // decode GIF inputs
	_ "image/jpeg" // decode JPEG inputs
	"image/png"
	"math"

	xdraw "golang.org/x/image/draw"
	_ "golang.org/x/image/webp" // decode WebP inputs
	"rsc.io/qr"
)

// seed is a small deterministic random source derived from its inputs.
type seed struct{ state uint64 }

func newSeed(parts ...string) *seed {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return &seed{binary.LittleEndian.Uint64(h.Sum(nil))}
}

// next is splitmix64.
func (s *seed) next() uint64 {
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (s *seed) intn(n int) int       { return int(s.next() % uint64(n)) }
func (s *seed) float() float64       { return float64(s.next()>>11) / (1 << 53) }
func (s *seed) color() color.RGBA    { return hsv(s.float()*360, 0.45+0.5*s.float(), 0.55+0.45*s.float()) }
func (s *seed) between(a, b int) int { return a + s.intn(b-a+1) }

// hsv converts hue (degrees), saturation and value to an opaque color.
func hsv(h, s, v float64) color.RGBA {
	h = math.Mod(h, 360)
	c := v * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	m := v - c
	var r, g, b float64
	switch {
	case h < 60:
		r, g, b = c, x, 0
	case h < 120:
		r, g, b = x, c, 0
	case h < 180:
		r, g, b = 0, c, x
	case h < 240:
		r, g, b = 0, x, c
	case h < 300:
		r, g, b = x, 0, c
	default:
		r, g, b = c, 0, x
	}
	return color.RGBA{uint8((r + m) * 255), uint8((g + m) * 255), uint8((b + m) * 255), 255}
}

func mix(a, b color.RGBA, t float64) color.RGBA {
	l := func(x, y uint8) uint8 { return uint8(float64(x)*(1-t) + float64(y)*t) }
	return color.RGBA{l(a.R, b.R), l(a.G, b.G), l(a.B, b.B), 255}
}

// ImageParams are the inputs of TextToImage.
type ImageParams struct {
	Prompt                                 string
	N                                      int
	AspectW, AspectH                       int // 0, 0 means 1:1
	StyleID, CameraID, ColorID, LightingID string
}

// LongSide is the length in pixels of the longer side of generated images.
const LongSide = 512

// TextToImage draws p.N PNG images of the requested aspect: a gradient sky
// and shapes whose palette comes from the prompt and color id, and whose
// composition comes from the style, camera and lighting ids. The longer side
// is LongSide pixels and the shorter the nearest whole number of pixels to
// the aspect (5:4 is 512x410, not 512x409).
func TextToImage(p ImageParams) [][]byte {
	w, h := LongSide, LongSide
	if p.AspectW > 0 && p.AspectH > 0 {
		if p.AspectW > p.AspectH {
			h = (2*LongSide*p.AspectH + p.AspectW) / (2 * p.AspectW)
		} else {
			w = (2*LongSide*p.AspectW + p.AspectH) / (2 * p.AspectH)
		}
	}
	out := make([][]byte, p.N)
	for i := range out {
		s := newSeed("image", p.Prompt, p.StyleID, p.CameraID, p.ColorID, p.LightingID, fmt.Sprint(i))
		out[i] = encodePNG(scene(s, w, h, p.StyleID, p.ColorID))
	}
	return out
}

// scene draws a gradient and a handful of discs and bars.
func scene(s *seed, w, h int, style, colorID string) *image.RGBA {
	pal := newSeed("palette", colorID, fmt.Sprint(s.next()))
	top, bottom := pal.color(), pal.color()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		c := mix(top, bottom, float64(y)/float64(h-1))
		for x := 0; x < w; x++ {
			img.SetRGBA(x, y, c)
		}
	}
	shapes := newSeed("style", style).between(3, 9)
	for k := 0; k < shapes; k++ {
		c := pal.color()
		cx, cy := s.intn(w), s.intn(h)
		r := s.between(min(w, h)/12, min(w, h)/4)
		if k%2 == 0 {
			disc(img, cx, cy, r, c)
		} else {
			draw.Draw(img, image.Rect(cx-r, cy-r/3, cx+r, cy+r/3), image.NewUniform(c), image.Point{}, draw.Over)
		}
	}
	return img
}

func disc(img draw.Image, cx, cy, r int, c color.Color) {
	b := img.Bounds()
	for y := max(b.Min.Y, cy-r); y < min(b.Max.Y, cy+r+1); y++ {
		for x := max(b.Min.X, cx-r); x < min(b.Max.X, cx+r+1); x++ {
			if dx, dy := x-cx, y-cy; dx*dx+dy*dy <= r*r {
				img.Set(x, y, c)
			}
		}
	}
}

// Logo draws n square 256x256 PNG logos: a badge and a geometric mark.
func Logo(prompt string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		s := newSeed("logo", prompt, fmt.Sprint(i))
		img := image.NewRGBA(image.Rect(0, 0, 256, 256))
		draw.Draw(img, img.Bounds(), image.NewUniform(color.RGBA{250, 250, 248, 255}), image.Point{}, draw.Src)
		hue := s.float() * 360
		bg, fg := hsv(hue, 0.7, 0.75), hsv(hue+180, 0.6, 0.98)
		disc(img, 128, 128, 100, bg)
		sides, rot := s.between(3, 8), s.float()*math.Pi
		for y := 0; y < 256; y++ {
			for x := 0; x < 256; x++ {
				if inPolygon(float64(x)-128, float64(y)-128, sides, 60, rot) {
					img.SetRGBA(x, y, fg)
				}
			}
		}
		out[i] = encodePNG(img)
	}
	return out
}

// inPolygon reports whether (x, y) is inside the regular polygon of the given
// sides and radius centred at the origin, rotated by rot radians.
func inPolygon(x, y float64, sides int, radius, rot float64) bool {
	a := math.Atan2(y, x) - rot
	seg := 2 * math.Pi / float64(sides)
	a = math.Mod(math.Mod(a, seg)+seg, seg) - seg/2
	return math.Hypot(x, y)*math.Cos(a) <= radius*math.Cos(seg/2)
}

// QR draws a QR code of url (error correction M, 8 px modules, a 4-module
// quiet zone) in dark and light colors derived from the prompt.
func QR(url, prompt string) ([]byte, error) {
	code, err := qr.Encode(url, qr.M)
	if err != nil {
		return nil, fmt.Errorf("media: qr: %w", err)
	}
	s := newSeed("qr", prompt)
	dark := hsv(s.float()*360, 0.7, 0.25)
	light := hsv(s.float()*360, 0.15, 0.98)
	const scale, quiet = 8, 4
	side := (code.Size + 2*quiet) * scale
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	for y := 0; y < side; y++ {
		for x := 0; x < side; x++ {
			mx, my := x/scale-quiet, y/scale-quiet
			c := light
			if mx >= 0 && my >= 0 && mx < code.Size && my < code.Size && code.Black(mx, my) {
				c = dark
			}
			img.SetRGBA(x, y, c)
		}
	}
	return encodePNG(img), nil
}

// StandIn draws a 256x256 PNG photo-like stand-in with a subject in the
// centre on a plain background, for inputs the fake cannot fetch.
func StandIn(seedText string) []byte {
	s := newSeed("standin", seedText)
	img := image.NewRGBA(image.Rect(0, 0, 256, 256))
	bg := color.RGBA{200, 205, 210, 255}
	draw.Draw(img, img.Bounds(), image.NewUniform(bg), image.Point{}, draw.Src)
	g := uint8(40 + s.intn(80))
	disc(img, 128, 128, 70, color.RGBA{g, g, g, 255})
	disc(img, 128, 100, 30, color.RGBA{g + 60, g + 60, g + 60, 255})
	return encodePNG(img)
}

// ImageSize reads an image's width, height and format from its header.
func ImageSize(b []byte) (w, h int, format string, err error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return 0, 0, "", err
	}
	return cfg.Width, cfg.Height, format, nil
}

// MaxSide bounds the images the transforms make.
const MaxSide = 4096

func decode(b []byte) (*image.RGBA, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("media: not an image: %w", err)
	}
	if cfg.Width > MaxSide || cfg.Height > MaxSide {
		return nil, fmt.Errorf("media: image of %dx%d is larger than %d px a side", cfg.Width, cfg.Height, MaxSide)
	}
	src, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("media: decoding: %w", err)
	}
	img := image.NewRGBA(image.Rect(0, 0, src.Bounds().Dx(), src.Bounds().Dy()))
	draw.Draw(img, img.Bounds(), src, src.Bounds().Min, draw.Src)
	return img, nil
}

// UpScale enlarges an image by scale (0 means 2) with Catmull-Rom.
func UpScale(b []byte, scale float64) ([]byte, error) {
	if scale == 0 {
		scale = 2
	}
	src, err := decode(b)
	if err != nil {
		return nil, err
	}
	w := int(math.Round(float64(src.Bounds().Dx()) * scale))
	h := int(math.Round(float64(src.Bounds().Dy()) * scale))
	if w < 1 || h < 1 || w > MaxSide || h > MaxSide {
		return nil, fmt.Errorf("media: scaling by %g gives %dx%d, outside 1 to %d px a side", scale, w, h, MaxSide)
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	xdraw.CatmullRom.Scale(dst, dst.Bounds(), src, src.Bounds(), xdraw.Src, nil)
	return encodePNG(dst), nil
}

// borderColor is the mean color of the image's outermost pixels.
func borderColor(img *image.RGBA) color.RGBA {
	b := img.Bounds()
	var r, g, bl, n float64
	add := func(x, y int) {
		c := img.RGBAAt(x, y)
		r, g, bl, n = r+float64(c.R), g+float64(c.G), bl+float64(c.B), n+1
	}
	for x := b.Min.X; x < b.Max.X; x++ {
		add(x, b.Min.Y)
		add(x, b.Max.Y-1)
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		add(b.Min.X, y)
		add(b.Max.X-1, y)
	}
	return color.RGBA{uint8(r / n), uint8(g / n), uint8(bl / n), 255}
}

func near(a, b color.RGBA, tol float64) bool {
	dr, dg, db := float64(a.R)-float64(b.R), float64(a.G)-float64(b.G), float64(a.B)-float64(b.B)
	return math.Sqrt(dr*dr+dg*dg+db*db) <= tol
}

const backgroundTolerance = 48

// RemoveBackground makes the pixels close to the border's color fully
// transparent and keeps the rest opaque.
func RemoveBackground(b []byte) ([]byte, error) {
	img, err := decode(b)
	if err != nil {
		return nil, err
	}
	bg := borderColor(img)
	out := image.NewNRGBA(img.Bounds())
	for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
		for x := img.Rect.Min.X; x < img.Rect.Max.X; x++ {
			c := img.RGBAAt(x, y)
			if near(c, bg, backgroundTolerance) {
				continue
			}
			out.SetNRGBA(x, y, color.NRGBA{c.R, c.G, c.B, 255})
		}
	}
	return encodePNG(out), nil
}

// Colorize maps each pixel's luminance through a blue-to-orange ramp, which
// gives color to a gray image.
func Colorize(b []byte) ([]byte, error) {
	img, err := decode(b)
	if err != nil {
		return nil, err
	}
	dark, mid, light := color.RGBA{30, 40, 110, 255}, color.RGBA{200, 110, 60, 255}, color.RGBA{255, 235, 200, 255}
	for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
		for x := img.Rect.Min.X; x < img.Rect.Max.X; x++ {
			l := luma(img.RGBAAt(x, y)) / 255
			c := mix(dark, mid, l*2)
			if l > 0.5 {
				c = mix(mid, light, (l-0.5)*2)
			}
			img.SetRGBA(x, y, c)
		}
	}
	return encodePNG(img), nil
}

func luma(c color.RGBA) float64 { return 0.299*float64(c.R) + 0.587*float64(c.G) + 0.114*float64(c.B) }

func clamp8(v float64) uint8 { return uint8(math.Max(0, math.Min(255, math.Round(v)))) }

// Enhance stretches the luminance histogram to the full range (contrast)
// and applies an unsharp mask (sharpness).
func Enhance(b []byte) ([]byte, error) {
	img, err := decode(b)
	if err != nil {
		return nil, err
	}
	lo, hi := 255.0, 0.0
	for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
		for x := img.Rect.Min.X; x < img.Rect.Max.X; x++ {
			l := luma(img.RGBAAt(x, y))
			lo, hi = math.Min(lo, l), math.Max(hi, l)
		}
	}
	gain := 1.0
	if hi-lo > 1 {
		gain = 255 / (hi - lo)
	}
	stretched := image.NewRGBA(img.Rect)
	for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
		for x := img.Rect.Min.X; x < img.Rect.Max.X; x++ {
			c := img.RGBAAt(x, y)
			f := func(v uint8) uint8 { return clamp8((float64(v) - lo) * gain) }
			stretched.SetRGBA(x, y, color.RGBA{f(c.R), f(c.G), f(c.B), 255})
		}
	}
	out := image.NewRGBA(img.Rect)
	r := img.Rect
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			var sr, sg, sb, n float64
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					p := image.Pt(x+dx, y+dy)
					if !p.In(r) {
						continue
					}
					c := stretched.RGBAAt(p.X, p.Y)
					sr, sg, sb, n = sr+float64(c.R), sg+float64(c.G), sb+float64(c.B), n+1
				}
			}
			c := stretched.RGBAAt(x, y)
			const amount = 0.8
			out.SetRGBA(x, y, color.RGBA{
				clamp8(float64(c.R) + amount*(float64(c.R)-sr/n)),
				clamp8(float64(c.G) + amount*(float64(c.G)-sg/n)),
				clamp8(float64(c.B) + amount*(float64(c.B)-sb/n)),
				255,
			})
		}
	}
	return encodePNG(out), nil
}

// ReImagine posterizes the image to a few levels and rotates its hues by an
// angle derived from seedText; the size is kept.
func ReImagine(b []byte, seedText string) ([]byte, error) {
	img, err := decode(b)
	if err != nil {
		return nil, err
	}
	s := newSeed("reimagine", seedText)
	shift := 60 + s.float()*240
	for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
		for x := img.Rect.Min.X; x < img.Rect.Max.X; x++ {
			c := img.RGBAAt(x, y)
			h, sat, v := toHSV(c)
			v = math.Round(v*4) / 4
			img.SetRGBA(x, y, hsv(h+shift, math.Max(sat, 0.35), math.Max(v, 0.1)))
		}
	}
	return encodePNG(img), nil
}

func toHSV(c color.RGBA) (h, s, v float64) {
	r, g, b := float64(c.R)/255, float64(c.G)/255, float64(c.B)/255
	mx, mn := math.Max(r, math.Max(g, b)), math.Min(r, math.Min(g, b))
	v, d := mx, mx-mn
	if mx > 0 {
		s = d / mx
	}
	switch {
	case d == 0:
		h = 0
	case mx == r:
		h = 60 * math.Mod((g-b)/d, 6)
	case mx == g:
		h = 60 * ((b-r)/d + 2)
	default:
		h = 60 * ((r-g)/d + 4)
	}
	if h < 0 {
		h += 360
	}
	return h, s, v
}

// ChangeBackground keeps the subject (pixels not close to the border's
// color) and draws a new background from the prompt; the size is kept.
func ChangeBackground(b []byte, prompt string) ([]byte, error) {
	img, err := decode(b)
	if err != nil {
		return nil, err
	}
	bg := borderColor(img)
	r := img.Rect
	back := scene(newSeed("background", prompt), r.Dx(), r.Dy(), prompt, prompt)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if near(img.RGBAAt(x, y), bg, backgroundTolerance) {
				img.SetRGBA(x, y, back.RGBAAt(x-r.Min.X, y-r.Min.Y))
			}
		}
	}
	return encodePNG(img), nil
}

func encodePNG(img image.Image) []byte {
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&b, img); err != nil {
		panic(err) // encoding an in-memory image to a buffer cannot fail
	}
	return b.Bytes()
}
