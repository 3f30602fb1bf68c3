// Package ids holds the typed ids of the Creative Generation Service: image
// sizes, styles, cameras, colors, lighting, voices and audio enhancement
// types, generated from ids.json by `go generate ./ids/...`. The lists are
// those of the service's interface specification, with what the service's
// public docs add: ten further image sizes (4:3 to 4:5), and their own
// labels for some styles and cameras ("Photo" for "photograph", "Fish Eye"
// for "fisheye lens"), which parsers accept beside the specification's.
//
// Each kind is its own string type, so a color id cannot be passed where a
// style id is wanted (two color ids share their last four characters with two
// style ids). Every type is open: any id string converts, so ids the service
// adds later work without a new release.
//
// Constants are named by a rule: the kind's prefix (Size, Style, Camera,
// Color, Lighting, Voice, Enhance) followed by the label's words, each with
// its first letter upper-cased and all punctuation dropped; digits stay, and
// the ":" of an aspect ratio becomes "x". So "3D" is Style3D, "2000s phone"
// is Style2000sPhone, "close-up" is CameraCloseUp and "2:3" is Size2x3.
// Voices, which have no label but a gender, are numbered in the order of the
// specification within each gender: VoiceFemale1, VoiceMale1, ...
//
// An id's String method returns the id itself, as sent on the wire, so
// fmt.Sprint(ids.StyleAnime) and a form encoder give "6644b0c5ec3658a8e38d94f2";
// its Label method returns the human name ("anime") and whether the id is in
// the list.
//
// For people typing ids, each kind has a parser (ParseStyle, ...) that takes
// a label, the specification's or the docs', in any case with spaces,
// hyphens and underscores alike ("golden hour", "Golden-Hour", "fish eye"),
// a constant's name ("GoldenHour", "LightingGoldenHour") or a full id. Label
// and error messages show the specification's label, the one the constants
// are named after.
package ids

//go:generate go run ./internal/gen/cmd/genids -in ids.json -out ids_gen.go

import (
	"fmt"
	"slices"
	"strings"

	"github.com/creativegen/creative-go/ids/internal/shape"
)

// Gender is the gender of a voice.
type Gender string

// The genders of the voices.
const (
	Female Gender = "female"
	Male   Gender = "male"
)

// An Entry is one id of one kind, for tools that list or parse ids by the
// kind's name.
type Entry struct {
	// Kind is the kind's name, as Kinds lists them ("style").
	Kind string
	// ID is the 24-character id sent to the service.
	ID string
	// Label is the name the specification gives ("digital art"; for voices
	// "female 1"; for an image size only the service's public docs list,
	// theirs).
	Label string
	// DocsLabel is the name the service's public docs give where it is not
	// Label ("Photo" for "photograph"), or "". Parsers accept it too.
	DocsLabel string
	// Name is the Go constant's name ("StyleDigitalArt").
	Name string
}

type entry struct {
	id, label, name string
	docsLabel       string // the public docs' label where it is not label
	gender          Gender
}

// A table is the list of one kind.
type table struct {
	kind    string // "image-size"
	noun    string // "image size", for error messages
	prefix  string // constant prefix, "Size"
	entries []entry
	index   map[string]string // every word of words to its entry's id
}

var tables = []*table{&imageSizes, &styles, &cameras, &colors, &lightings, &voices, &enhanceTypes}

func init() {
	for _, t := range tables {
		t.index = map[string]string{}
		for _, e := range t.entries {
			for _, w := range t.words(e) {
				if _, taken := t.index[w]; !taken && w != "" { // the first entry keeps a word; a test sees that none is shared
					t.index[w] = e.id
				}
			}
		}
	}
}

// Kinds returns the names of the kinds of id, in this order: "image-size",
// "style", "camera", "color", "lighting", "voice", "enhance-type".
func Kinds() []string {
	out := make([]string, len(tables))
	for i, t := range tables {
		out[i] = t.kind
	}
	return out
}

func tableOf(kind string) (*table, error) {
	k := normalize(kind)
	for _, t := range tables {
		if normalize(t.kind) == k || normalize(t.kind)+"s" == k {
			return t, nil
		}
	}
	return nil, fmt.Errorf("ids: unknown kind %q (want one of: %s)", kind, strings.Join(Kinds(), ", "))
}

// Entries lists the ids of a kind (a name from Kinds) in the order of the
// specification.
func Entries(kind string) ([]Entry, error) {
	t, err := tableOf(kind)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(t.entries))
	for i, e := range t.entries {
		out[i] = Entry{Kind: t.kind, ID: e.id, Label: e.label, DocsLabel: e.docsLabel, Name: e.name}
	}
	return out, nil
}

// Parse returns the id that s names within a kind (a name from Kinds); see
// the kind's own parser, such as ParseStyle, for what s may be.
func Parse(kind, s string) (string, error) {
	t, err := tableOf(kind)
	if err != nil {
		return "", err
	}
	return t.parse(s)
}

// IsID reports whether s is shaped as an id: 24 lower-case hexadecimal
// characters. The SDK's validation, the fake service in creativetest and the
// generator of this package all use this one rule.
func IsID(s string) bool { return shape.IsID(s) }

// normalize folds case and drops spaces, hyphens and underscores, and reads
// an aspect's ":" as "x", so that "Golden-Hour", "golden hour" and
// "GoldenHour" compare equal, as do "2:3" and "2x3".
func normalize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch r {
		case ' ', '-', '_', '\t':
		case ':':
			b.WriteRune('x')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func (t *table) find(id string) (entry, bool) {
	for _, e := range t.entries {
		if e.id == id {
			return e, true
		}
	}
	return entry{}, false
}

func (t *table) label(id string) (string, bool) {
	e, ok := t.find(id)
	return e.label, ok
}

// parse accepts a label (the specification's or the docs'), a constant's
// name with or without its prefix, or a full id (known or not; upper-case
// hex is lower-cased). Every kind's parser, and through Parse the command
// line's id flags and the batch's id fields, match names here and only here.
func (t *table) parse(s string) (string, error) {
	if lower := strings.ToLower(strings.TrimSpace(s)); IsID(lower) {
		return lower, nil
	}
	if id, ok := t.index[normalize(s)]; ok {
		return id, nil
	}
	labels := make([]string, len(t.entries))
	for i, e := range t.entries {
		labels[i] = e.label
	}
	return "", fmt.Errorf("ids: unknown %s %q (want one of: %s; or a 24-character hex id)", t.noun, s, strings.Join(labels, ", "))
}

// words are the normalized names that parse takes for e: its labels and its
// constant's name with and without the kind's prefix.
func (t *table) words(e entry) []string {
	name := normalize(e.name)
	w := []string{normalize(e.label), name, strings.TrimPrefix(name, normalize(t.prefix))}
	if e.docsLabel != "" {
		w = append(w, normalize(e.docsLabel))
	}
	return w
}

func list[T ~string](t *table) []T {
	out := make([]T, len(t.entries))
	for i, e := range t.entries {
		out[i] = T(e.id)
	}
	return out
}

// Aspect returns the width and height of the size's aspect ratio, such as
// 3 and 2 for Size3x2; ok is false for an id that is not in the list.
func (id ImageSizeID) Aspect() (w, h int, ok bool) {
	l, found := imageSizes.label(string(id))
	if !found {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(l, "%d:%d", &w, &h); err != nil {
		return 0, 0, false
	}
	return w, h, true
}

// Gender returns the voice's gender, or "" for a voice not in the list.
func (id VoiceID) Gender() Gender {
	e, _ := voices.find(string(id))
	return e.gender
}

// VoicesByGender lists the voices of gender g in the order of the
// specification.
func VoicesByGender(g Gender) []VoiceID {
	var out []VoiceID
	for _, e := range voices.entries {
		if e.gender == g {
			out = append(out, VoiceID(e.id))
		}
	}
	return slices.Clip(out)
}
