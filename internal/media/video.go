package media

import (
	"bytes"
	"image"
	"image/color"
	"image/color/palette"
	"image/draw"
	"image/gif"
	"math"

	xdraw "golang.org/x/image/draw"
)

// FramesPerStep is how many frames each zoom step of Zoom has.
const FramesPerStep = 8

// Zoom makes an animated 256x256 GIF zooming into a scene drawn from the
// prompt: steps (0 means 2) zoom steps of FramesPerStep frames, each step
// doubling the magnification.
func Zoom(prompt string, steps int) []byte {
	if steps <= 0 {
		steps = 2
	}
	const side = 256
	world := scene(newSeed("zoom", prompt), side*2, side*2, prompt, prompt)
	anim := &gif.GIF{}
	for f := 0; f < steps*FramesPerStep; f++ {
		zoom := math.Pow(2, float64(f%(2*FramesPerStep))/FramesPerStep)
		w := int(float64(2*side) / zoom)
		c := side
		src := image.Rect(c-w/2, c-w/2, c+w/2, c+w/2)
		rgba := image.NewRGBA(image.Rect(0, 0, side, side))
		xdraw.ApproxBiLinear.Scale(rgba, rgba.Bounds(), world, src, xdraw.Src, nil)
		anim.Image = append(anim.Image, webSafe(rgba))
		anim.Delay = append(anim.Delay, 8)
	}
	return encodeGIF(anim)
}

// VideoRemoveBackground returns an animated GIF with a transparent
// background: the frames of a GIF input with its border color made
// transparent, or, for any other input, a subject moving over a transparent
// background.
func VideoRemoveBackground(video []byte, seedText string) []byte {
	if in, err := gif.DecodeAll(bytes.NewReader(video)); err == nil && len(in.Image) > 0 {
		out := &gif.GIF{Delay: in.Delay, LoopCount: in.LoopCount}
		for _, fr := range in.Image {
			rgba := image.NewRGBA(fr.Bounds())
			draw.Draw(rgba, rgba.Bounds(), fr, fr.Bounds().Min, draw.Src)
			bg := borderColor(rgba)
			pal := append(color.Palette{color.Transparent}, palette.Plan9[:255]...)
			p := image.NewPaletted(fr.Bounds(), pal)
			for y := fr.Rect.Min.Y; y < fr.Rect.Max.Y; y++ {
				for x := fr.Rect.Min.X; x < fr.Rect.Max.X; x++ {
					if c := rgba.RGBAAt(x, y); !near(c, bg, backgroundTolerance) {
						p.Set(x, y, c)
					}
				}
			}
			out.Image = append(out.Image, p)
		}
		return encodeGIF(out)
	}
	s := newSeed("video", seedText)
	subject := s.color()
	anim := &gif.GIF{}
	pal := color.Palette{color.Transparent, subject}
	for f := 0; f < 16; f++ {
		p := image.NewPaletted(image.Rect(0, 0, 256, 256), pal)
		x := 64 + int(128*float64(f)/15)
		disc(p, x, 128, 40, subject)
		anim.Image = append(anim.Image, p)
		anim.Delay = append(anim.Delay, 6)
	}
	return encodeGIF(anim)
}

// webSafe maps img onto palette.WebSafe by rounding each channel to the
// nearest of its six levels, which is fast and needs no search.
func webSafe(img *image.RGBA) *image.Paletted {
	p := image.NewPaletted(img.Rect, palette.WebSafe)
	for i := 0; i < len(img.Pix); i += 4 {
		r, g, b := (int(img.Pix[i])+25)/51, (int(img.Pix[i+1])+25)/51, (int(img.Pix[i+2])+25)/51
		p.Pix[i/4] = uint8(r*36 + g*6 + b)
	}
	return p
}

func encodeGIF(g *gif.GIF) []byte {
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		panic(err) // encoding in-memory frames to a buffer cannot fail
	}
	return b.Bytes()
}
