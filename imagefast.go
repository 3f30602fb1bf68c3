package creative

// fastImages decodes the images of a whole success body without
// encoding/json. It reports ok only when the body is an envelope with
// success true and image data of a shape it knows; otherwise the caller
// falls back to encoding/json, which also produces the errors.
func fastImages(body []byte) ([]Image, bool) {
	return nil, false
}

// fastOneImage is fastImages for operations that return one image.
func fastOneImage(body []byte) (Image, bool) {
	ims, ok := fastImages(body)
	if !ok || len(ims) != 1 {
		return Image{}, false
	}
	return ims[0], true
}
