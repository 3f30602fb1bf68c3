package cassette

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/creativegen/creative-go/internal/sniff"
)

// partPrefix marks, in a recorded JSON body, a string the recording took
// out to a file of its own: a base64 image, kept as the image it is so
// that a reviewer sees it and a re-recording of the same image changes no
// file.
const partPrefix = "cassette-part:"

// minPart is the shortest base64 string taken out of a JSON body.
const minPart = 512

// extractImages returns the JSON body b with every base64 image among its
// values taken out to bodies/ (as a PNG, JPEG, WebP or GIF file named by
// its hash) and replaced by partPrefix and the file's name, and the names
// of those files. A string whose bytes would not encode back to the same
// base64 is left in place, so the replay gives the same value. b is
// returned as it is when it is no JSON or holds no image.
func (c *Cassette) extractImages(ctx context.Context, b []byte) ([]byte, []string) {
	if !bytes.Contains(b, []byte(`"`)) {
		return b, nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out)
	var parts []string
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return b, nil
		}
		if kind, n := dec.StackIndex(dec.StackDepth()); tok.Kind() == '"' && !(kind == '{' && n%2 == 1) {
			if name := c.imagePart(ctx, tok.String()); name != "" {
				tok = jsontext.String(partPrefix + name)
				parts = append(parts, name)
			}
		}
		if err := enc.WriteToken(tok); err != nil {
			return b, nil
		}
	}
	if len(parts) == 0 {
		return b, nil
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), parts
}

// imagePart keeps s, when it is a base64 image, as a file of its own and
// returns its name; "" otherwise.
func (c *Cassette) imagePart(ctx context.Context, s string) string {
	if len(s) < minPart {
		return ""
	}
	img, err := base64.StdEncoding.DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(img) != s {
		return ""
	}
	ctype := sniff.Type(img[:min(len(img), 512)])
	if !strings.HasPrefix(ctype, "image/") {
		return ""
	}
	sp, err := c.st.spool()
	if err != nil {
		return ""
	}
	if _, err := sp.Write(img); err != nil {
		sp.t.Remove()
		return ""
	}
	if sp, _, err = c.clean(ctx, sp, ctype, nil); err != nil {
		return ""
	}
	name, err := sp.keep(sniff.Ext(ctype))
	if err != nil {
		return ""
	}
	return name
}

// joinImages puts the images a recording took out of the JSON body b back
// in, as the base64 strings they were.
func (c *Cassette) joinImages(b []byte) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out)
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
		}
		if err != nil {
			return nil, fmt.Errorf("cassette: a recorded body: %w", err)
		}
		if tok.Kind() == '"' && strings.HasPrefix(tok.String(), partPrefix) {
			img, err := c.st.root.ReadFile(strings.TrimPrefix(tok.String(), partPrefix))
			if err != nil {
				return nil, fmt.Errorf("cassette: a recorded body lost its image: %w", err)
			}
			tok = jsontext.String(base64.StdEncoding.EncodeToString(img))
		}
		if err := enc.WriteToken(tok); err != nil {
			return nil, fmt.Errorf("cassette: %w", err)
		}
	}
}
