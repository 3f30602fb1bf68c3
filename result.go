package creative

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif" // Image.Decode of GIF results
	"io"
	"net/http"
	"os"
	"strings"
)

// A URL is the address of a file the service generated (music, enhanced
// audio, a video). Fetch it with Client.Download or any HTTP client; it
// needs no access key.
type URL string

// String returns the URL as text.
func (u URL) String() string { return string(u) }

// An Image is a generated image: its bytes, decoded from the base64 the
// service sent.
type Image struct {
	// Data is the encoded image file (PNG, JPEG or WebP as the service
	// chose), ready to be written to disk.
	Data []byte
}

// ContentType is the MIME type sniffed from the image's first bytes, such
// as "image/png"; "application/octet-stream" when it is not recognised.
func (im Image) ContentType() string {
	ct := sniff(im.Data)
	if !strings.HasPrefix(ct, "image/") {
		return "application/octet-stream"
	}
	return ct
}

// Ext is the file name extension that fits ContentType, such as ".png";
// ".bin" when the type is not recognised.
func (im Image) Ext() string {
	switch im.ContentType() {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/webp":
		return ".webp"
	case "image/gif":
		return ".gif"
	}
	return ".bin"
}

// Decode decodes the image (PNG, JPEG, GIF or WebP).
func (im Image) Decode() (image.Image, error) {
	img, _, err := image.Decode(bytes.NewReader(im.Data))
	if err != nil {
		return nil, fmt.Errorf("creative: decoding %s image: %w", im.ContentType(), err)
	}
	return img, nil
}

// WriteTo writes the image's bytes to w.
func (im Image) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(im.Data)
	return int64(n), err
}

// Save writes the image's bytes to the file at path, creating or truncating
// it with mode 0644.
func (im Image) Save(path string) error {
	return os.WriteFile(path, im.Data, 0o644)
}

// Audio is a stream of generated speech. Read it (or WriteTo/Save it) and
// Close it: Close releases the connection. It is never buffered whole.
type Audio struct {
	// ContentType is the answer's Content-Type, such as "audio/mpeg".
	ContentType string
	// ContentLength is the stream's length in bytes, -1 when unknown.
	ContentLength int64

	body    io.ReadCloser
	release func()
}

// Read reads the audio stream.
func (a *Audio) Read(p []byte) (int, error) { return a.body.Read(p) }

// Close releases the connection (and the call's timeout). It is safe to
// call more than once.
func (a *Audio) Close() error {
	if a.body == nil {
		return nil
	}
	err := a.body.Close()
	a.body = eofReader{}
	if a.release != nil {
		a.release()
		a.release = nil
	}
	return err
}

// WriteTo copies the rest of the stream to w and closes it.
func (a *Audio) WriteTo(w io.Writer) (int64, error) {
	defer a.Close()
	return io.Copy(w, a.body)
}

// Save writes the rest of the stream to the file at path and closes it.
func (a *Audio) Save(path string) error {
	f, err := os.Create(path)
	if err != nil {
		a.Close()
		return err
	}
	if _, err := a.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
func (eofReader) Close() error             { return nil }

// WriterResult is what the writer tool wrote.
type WriterResult struct {
	// Language is the language the text is in.
	Language string `json:"language"`
	// UseCase is the use case the text was written for.
	UseCase string `json:"useCase"`
	// WordCount is the number of words the service counted over all choices.
	WordCount int `json:"wordCount"`
	// Choices are the texts written, one per requested item.
	Choices []WriterChoice `json:"choices"`
}

// A WriterChoice is one text the writer tool wrote.
type WriterChoice struct {
	// Text is the written text.
	Text string `json:"text"`
	// Index is the choice's position as the service numbered it.
	Index int `json:"index"`
	// WordCount is the number of words in Text, as the service counted.
	WordCount int `json:"wordCount"`
}

// envelope is the service's response envelope (spec section 2).
type envelope struct {
	Success *bool           `json:"success"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// unexpected returns the *APIError for a 2xx answer that is not what the
// operation promises.
func (cl *call) unexpected(status int, body []byte, format string, args ...any) *APIError {
	return &APIError{
		Operation:  cl.op,
		StatusCode: status,
		Attempts:   cl.attempts,
		Message:    fmt.Sprintf(format, args...),
		Body:       cl.c.redact(body[:min(len(body), maxErrorBody)]),
		unexpected: true,
	}
}

// callJSON sends r and decodes the envelope's data with decode.
func callJSON[T any](ctx context.Context, c *Client, r *request, decode func(data []byte) (T, error)) (T, error) {
	return callJSONFast(ctx, c, r, nil, decode)
}

// callJSONFast is callJSON with a fast path: fast is tried on the whole body
// first and, when it does not report ok, decode on the envelope's data.
func callJSONFast[T any](ctx context.Context, c *Client, r *request, fast func(body []byte) (T, bool), decode func(data []byte) (T, error)) (T, error) {
	var zero T
	r.method, r.accept = http.MethodPost, "application/json"
	resp, release, cl, err := c.do(ctx, r)
	if err != nil {
		return zero, err
	}
	defer release()
	body, err := readAll(resp)
	if err != nil {
		return zero, &NetworkError{Operation: r.op, Attempts: cl.attempts, Err: fmt.Errorf("reading the answer (not retried: the service may already have done the work): %w", err)}
	}
	if fast != nil {
		if v, ok := fast(body); ok {
			return v, nil
		}
	}
	data, err := cl.envelopeData(resp, body)
	if err != nil {
		return zero, err
	}
	v, err := decode(data)
	if err != nil {
		return zero, cl.unexpected(resp.StatusCode, body, "%v", err)
	}
	return v, nil
}

// maxPrealloc bounds how much a Content-Length header alone can make
// readAll allocate before any byte arrived; a larger body is still read
// whole, growing as it comes.
const maxPrealloc = 256 << 20

// readAll reads a whole success body, sized up front from Content-Length.
func readAll(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	if n := resp.ContentLength; n > 0 && n <= maxPrealloc {
		buf := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(resp.Body)
}

// envelopeData checks the envelope of a 2xx answer and returns its data.
func (cl *call) envelopeData(resp *http.Response, body []byte) ([]byte, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, cl.unexpected(resp.StatusCode, body, "%s", describeBody(resp.Header.Get("Content-Type"), body))
	}
	if env.Success == nil {
		return nil, cl.unexpected(resp.StatusCode, body, "the answer has no success field: %s", describeBody(resp.Header.Get("Content-Type"), body))
	}
	if !*env.Success {
		msg := string(cl.c.redact([]byte(env.Message)))
		if msg == "" {
			msg = "success is false and no message was given"
		}
		e := cl.unexpected(resp.StatusCode, body, "%s", msg)
		e.unexpected = false
		return nil, e
	}
	if len(env.Data) == 0 || string(env.Data) == "null" {
		return nil, cl.unexpected(resp.StatusCode, body, "the envelope says success but carries no data")
	}
	return env.Data, nil
}

// jsonKind names the JSON type of raw for error messages.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// fastURL reads an envelope whose data is a URL string in one pass. It
// reports ok only for success true and a non-empty string; anything else
// goes the envelope path, which says what came.
func fastURL(body []byte) (URL, bool) {
	var env struct {
		Success *bool   `json:"success"`
		Message *string `json:"message"`
		Data    *string `json:"data"`
	}
	if json.Unmarshal(body, &env) != nil || env.Success == nil || !*env.Success || env.Data == nil || *env.Data == "" {
		return "", false
	}
	return URL(*env.Data), true
}

func decodeURL(data []byte) (URL, error) {
	var s string
	if err := json.Unmarshal(data, &s); err != nil || s == "" {
		return "", fmt.Errorf("data is %s, want a non-empty URL string", jsonKind(data))
	}
	return URL(s), nil
}

// decodeURLs accepts an array of URL strings, or a lone URL string as a
// list of one.
func decodeURLs(data []byte) ([]URL, error) {
	if jsonKind(data) == "a string" {
		u, err := decodeURL(data)
		if err != nil {
			return nil, err
		}
		return []URL{u}, nil
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("data is %s, want an array of URL strings", jsonKind(data))
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("data is an empty array, want URL strings")
	}
	out := make([]URL, len(list))
	for i, s := range list {
		if s == "" {
			return nil, fmt.Errorf("data[%d] is an empty string, want a URL", i)
		}
		out[i] = URL(s)
	}
	return out, nil
}

// decodeImages accepts the three shapes the spec allows for image data:
// {"base64": "..."}, [{"base64": "..."}, ...] and a bare base64 string.
func decodeImages(data []byte) ([]Image, error) {
	switch jsonKind(data) {
	case "a string":
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("data is not a valid JSON string: %v", err)
		}
		im, err := decodeBase64(s, "data")
		if err != nil {
			return nil, err
		}
		return []Image{im}, nil
	case "an object":
		var obj struct {
			Base64 *string `json:"base64"`
		}
		if err := json.Unmarshal(data, &obj); err != nil || obj.Base64 == nil {
			return nil, fmt.Errorf("data is an object without a base64 string")
		}
		im, err := decodeBase64(*obj.Base64, "data.base64")
		if err != nil {
			return nil, err
		}
		return []Image{im}, nil
	case "an array":
		var list []struct {
			Base64 *string `json:"base64"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("data is an array whose elements are not objects with a base64 string")
		}
		if len(list) == 0 {
			return nil, fmt.Errorf("data is an empty array, want images")
		}
		out := make([]Image, len(list))
		for i, o := range list {
			if o.Base64 == nil {
				return nil, fmt.Errorf("data[%d] has no base64 string", i)
			}
			im, err := decodeBase64(*o.Base64, fmt.Sprintf("data[%d].base64", i))
			if err != nil {
				return nil, err
			}
			out[i] = im
		}
		return out, nil
	}
	return nil, fmt.Errorf("data is %s, want an object with base64, an array of them or a base64 string", jsonKind(data))
}

// decodeOneImage is decodeImages for operations that return one image.
func decodeOneImage(data []byte) (Image, error) {
	ims, err := decodeImages(data)
	if err != nil {
		return Image{}, err
	}
	if len(ims) != 1 {
		return Image{}, fmt.Errorf("data holds %d images, want 1", len(ims))
	}
	return ims[0], nil
}

// decodeBase64 decodes standard base64 (padded or not), also in the data
// URL form "data:image/png;base64,...".
func decodeBase64(s, where string) (Image, error) {
	if strings.HasPrefix(s, "data:") {
		if i := strings.Index(s, ";base64,"); i >= 0 {
			s = s[i+len(";base64,"):]
		}
	}
	if s == "" {
		return Image{}, fmt.Errorf("%s is empty", where)
	}
	enc := base64.StdEncoding
	if len(s)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		return Image{}, fmt.Errorf("%s is not valid base64: %v", where, err)
	}
	return Image{Data: b}, nil
}

func decodeWriter(data []byte) (*WriterResult, error) {
	var w struct {
		Language  string   `json:"language"`
		UseCase   string   `json:"useCase"`
		WordCount *float64 `json:"word_count"`
		Text      *struct {
			Choices []struct {
				Text      *string `json:"text"`
				Index     float64 `json:"index"`
				WordCount float64 `json:"word_count"`
			} `json:"choices"`
		} `json:"text"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("data is %s, want the writer object (language, useCase, word_count, text.choices)", jsonKind(data))
	}
	if w.Text == nil || len(w.Text.Choices) == 0 {
		return nil, fmt.Errorf("data has no text.choices")
	}
	res := &WriterResult{Language: w.Language, UseCase: w.UseCase, Choices: make([]WriterChoice, len(w.Text.Choices))}
	total := 0
	for i, ch := range w.Text.Choices {
		if ch.Text == nil {
			return nil, fmt.Errorf("data.text.choices[%d] has no text", i)
		}
		res.Choices[i] = WriterChoice{Text: *ch.Text, Index: int(ch.Index), WordCount: int(ch.WordCount)}
		total += int(ch.WordCount)
	}
	if w.WordCount != nil {
		res.WordCount = int(*w.WordCount)
	} else {
		res.WordCount = total
	}
	return res, nil
}
