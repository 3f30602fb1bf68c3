// Package ops is the one table of the service's sixteen operations: their
// names, paths, request encodings, fields and result kinds. The SDK, its
// tests, the fake service in creativetest and the command line all read it,
// so an operation the service adds is one row here.
package ops

import (
	"errors"
	"fmt"
	"strings"

	"github.com/creativegen/creative-go/internal/suggest"
)

// A Result is the kind of answer an operation gives on success.
type Result int

// The result kinds of the specification's section 2.
const (
	Writer Result = iota // envelope data is the writer object
	URL                  // envelope data is a URL string
	URLs                 // envelope data is an array of URL strings
	Images               // envelope data carries one or more base64 images
	Image                // envelope data carries exactly one base64 image
	Audio                // no envelope: the body is binary audio
)

// A Type is what a request field holds.
type Type int

// The field types of the specification's section 4.
const (
	String Type = iota // text
	Number             // a JSON number
	Link               // an absolute http(s) URL, sent as a string
	ID                 // an id of the kind in Field.IDKind, sent as a string
	File               // an uploaded file (form data only)
	Array              // a JSON array (writer-tool inputs)
)

// A Field is one request field, named as on the wire.
type Field struct {
	Name     string // "numberOfResults"
	Type     Type
	Required bool
	IDKind   string // for ID fields: the kind's name in package ids ("style")
	// Default is what a number left at 0 (or out of a job or a command
	// line) means. For a required field the SDK sends it; for an optional
	// one it sends nothing, and the service applies the default the spec
	// names. 0: no default.
	Default float64
}

// An Op is one operation of the service.
type Op struct {
	Name string // "image/text-to-image": the path without the version
	// Method is the name of the Client's method that calls it, whose
	// request type names the fields as Fields does.
	Method  string
	Form    bool // multipart/form-data instead of JSON
	Result  Result
	Fields  []Field
	Summary string // one line, for help texts
}

// Area is the first segment of the name: "text", "audio", "image" or "video".
func (o Op) Area() string { a, _, _ := strings.Cut(o.Name, "/"); return a }

// Verb is the second segment of the name, such as "text-to-image".
func (o Op) Verb() string { _, v, _ := strings.Cut(o.Name, "/"); return v }

// Path is the HTTP path, such as "/image/v1/text-to-image".
func (o Op) Path() string { return "/" + o.Area() + "/v1/" + o.Verb() }

// Field returns the field named name, and whether there is one.
func (o Op) Field(name string) (Field, bool) {
	for _, f := range o.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

func req(name string, t Type) Field { return Field{Name: name, Type: t, Required: true} }
func opt(name string, t Type) Field { return Field{Name: name, Type: t} }

// num is a number field whose 0 means def.
func num(name string, required bool, def float64) Field {
	return Field{Name: name, Type: Number, Required: required, Default: def}
}
func id(name, kind string, required bool) Field {
	return Field{Name: name, Type: ID, Required: required, IDKind: kind}
}

// The names of the operations: the path without the version segment.
const (
	WriterTool            = "text/writer-tool"
	TextToMusic           = "audio/text-to-music"
	TextToSpeech          = "audio/text-to-speech"
	EnhanceAudio          = "audio/enhance"
	SplitAudio            = "audio/split-audio"
	TextToImage           = "image/text-to-image"
	GenerateLogo          = "image/generate-logo"
	GenerateQR            = "image/generate-qr"
	UpScale               = "image/up-scale"
	ReImagine             = "image/re-imagine"
	RemoveBackground      = "image/remove-background"
	ColorImage            = "image/color-image"
	EnhanceImage          = "image/enhance"
	ChangeBackground      = "image/change-background"
	InfiniteZoom          = "video/infinite-zoom"
	RemoveVideoBackground = "video/remove-background"
)

// All is the sixteen operations in the specification's order (section 4).
var All = []Op{
	{Name: WriterTool, Method: "WriterTool", Result: Writer, Summary: "write texts for a use case (cover letters and others)",
		Fields: []Field{req("inputs", Array), req("language", String), num("number", true, 1), req("useCase", String), req("action", String), req("tone", String)}},
	{Name: TextToMusic, Method: "TextToMusic", Result: URL, Summary: "make music from a prompt",
		Fields: []Field{req("prompt", String), num("duration", false, 8)}},
	{Name: TextToImage, Method: "TextToImage", Result: Images, Summary: "make 1 to 10 images from a prompt",
		Fields: []Field{req("prompt", String), num("numberOfResults", true, 1), id("imageSizeId", "image-size", false),
			id("styleId", "style", false), id("cameraId", "camera", false), id("colorId", "color", false), id("lightingId", "lighting", false)}},
	{Name: GenerateLogo, Method: "GenerateLogo", Result: Images, Summary: "make 1 to 4 logos from a prompt",
		Fields: []Field{req("prompt", String), num("numberOfResults", false, 1)}},
	{Name: GenerateQR, Method: "GenerateQR", Result: Image, Summary: "make a QR code image for a link",
		Fields: []Field{req("url", Link), req("prompt", String)}},
	{Name: UpScale, Method: "UpScale", Result: Image, Summary: "up-scale the image at a link",
		Fields: []Field{req("url", Link), opt("scale", Number)}},
	{Name: EnhanceAudio, Method: "EnhanceAudio", Form: true, Result: URL, Summary: "enhance an audio file",
		Fields: []Field{req("audio", File), id("typeId", "enhance-type", true)}},
	{Name: InfiniteZoom, Method: "InfiniteZoom", Result: URL, Summary: "make an infinite-zoom video from a prompt",
		Fields: []Field{req("prompt", String), num("numberOfIteration", false, 2)}},
	{Name: ReImagine, Method: "ReImagine", Form: true, Result: Image, Summary: "re-imagine an image (PNG, JPEG or WebP, at most 1024x1024)",
		Fields: []Field{req("image", File)}},
	{Name: SplitAudio, Method: "SplitAudio", Form: true, Result: URLs, Summary: "split an audio file into its parts",
		Fields: []Field{req("audio", File)}},
	{Name: RemoveBackground, Method: "RemoveBackground", Result: Image, Summary: "remove the background of the image at a link",
		Fields: []Field{req("url", Link)}},
	{Name: ColorImage, Method: "ColorImage", Result: Image, Summary: "colour the image at a link",
		Fields: []Field{req("url", Link)}},
	{Name: EnhanceImage, Method: "EnhanceImage", Result: Image, Summary: "enhance the image at a link",
		Fields: []Field{req("url", Link)}},
	{Name: RemoveVideoBackground, Method: "RemoveVideoBackground", Result: URL, Summary: "remove the background of the video at a link",
		Fields: []Field{req("url", Link)}},
	{Name: TextToSpeech, Method: "TextToSpeech", Result: Audio, Summary: "speak a text in one of 20 voices",
		Fields: []Field{req("prompt", String), id("voiceId", "voice", true)}},
	{Name: ChangeBackground, Method: "ChangeBackground", Form: true, Result: Image, Summary: "change the background of an image to a prompt",
		Fields: []Field{req("image", File), req("prompt", String)}},
}

// Lookup returns the operation named name, such as "image/text-to-image".
func Lookup(name string) (Op, bool) {
	for _, o := range All {
		if o.Name == name {
			return o, true
		}
	}
	return Op{}, false
}

// The writer tool's use case for cover letters, and the action it takes
// when none is given (the one the spec shows with it).
const (
	UseCaseCoverLetter = "CoverLetter"
	CoverLetterAction  = "generate_writenow"
)

// WriterAction is the action the writer tool is sent for useCase when the
// caller gave action: action, or for a cover letter left without one,
// CoverLetterAction.
func WriterAction(useCase, action string) string {
	if action == "" && useCase == UseCaseCoverLetter {
		return CoverLetterAction
	}
	return action
}

// Canonical brings vals, the wire-named fields of a request of op, to one
// form for the ways of writing a count the SDK sends alike: a required
// number left out or at 0 takes its default, as the SDK sends it. Batch
// identifies jobs by this form. (A cover letter's action is left as
// written: ledgers identify a line with it and one without it apart, and
// changing that would send their jobs again.)
func Canonical(op Op, vals map[string]any) {
	for _, f := range op.Fields {
		if f.Type == Number && f.Required && f.Default != 0 {
			if n, ok := vals[f.Name].(float64); !ok || n == 0 {
				vals[f.Name] = f.Default
			}
		}
	}
}

// OrDefault is n, or when it is 0 (left out) the default of field of op:
// the one place that says what a count left out means.
func OrDefault[N int | float64](op, field string, n N) N {
	if n == 0 {
		return N(Default(op, field))
	}
	return n
}

// Nearest names the operations nearest to name, one that is none (see
// package suggest): the one rule batch and the command line suggest by.
func Nearest(name string) []string {
	names := make([]string, len(All))
	for i, o := range All {
		names[i] = o.Name
	}
	return suggest.Nearest(name, names)
}

// CheckGiven refuses a value given for f that a request cannot carry: a
// number given as 0, since no number the service takes is 0 and a request
// leaves a 0 out, so that the default would be sent in its place. What
// was given on purpose is refused before anything is sent, never
// replaced.
func (f Field) CheckGiven(v any) error {
	if n, ok := v.(float64); !ok || f.Type != Number || n != 0 {
		return nil
	}
	if f.Default != 0 {
		return fmt.Errorf("must be above 0, got 0: leave it out for the default (%v)", f.Default)
	}
	return errors.New("must be above 0, got 0: leave it out for the service's default")
}

// Default is what field name of op means when left at 0, or 0 when it has
// no default.
func Default(op, name string) float64 {
	o, _ := Lookup(op)
	f, _ := o.Field(name)
	return f.Default
}
