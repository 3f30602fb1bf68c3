package ids

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids/internal/gen"
)

func TestGeneratedFileIsCurrent(t *testing.T) {
	data, err := os.ReadFile("ids.json")
	require.NoError(t, err)
	want, err := gen.Generate(data)
	require.NoError(t, err)
	got, err := os.ReadFile("ids_gen.go")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "ids_gen.go is stale: run go generate ./ids/...")
}

func TestTheGeneratorRefusesADocsLabelThatAddsNothing(t *testing.T) {
	for _, data := range []string{
		`{"imageSize":[{"id":"6644b0c5ec3658a8e38d951b","label":"2:3"}],"style":[{"id":"6644b0c5ec3658a8e38d94ec","label":"photograph","docsLabel":"Photograph"}]}`,
		`{"imageSize":[{"id":"6644b0c5ec3658a8e38d9520","label":"16:9","docsOnly":true,"docsLabel":"wide"}]}`,
	} {
		_, err := gen.Generate([]byte(data))
		assert.ErrorContains(t, err, "a docsLabel is for a label the docs give besides the specification's", data)
	}
}

func TestTheGeneratorRefusesWhatIsIDRefuses(t *testing.T) {
	_, err := gen.Generate([]byte(`{"imageSize":[{"id":"6644B0C5EC3658A8E38D951B","label":"2:3"}]}`))
	assert.ErrorContains(t, err, "is not 24 lower-case hex characters")
	assert.False(t, IsID("6644B0C5EC3658A8E38D951B"))
	assert.True(t, IsID(string(Size2x3)))
}

func TestCountsMatchTheSpecificationAndTheDocs(t *testing.T) {
	want := map[string]int{"image-size": 13, "style": 24, "camera": 11, "color": 17, "lighting": 11, "voice": 20, "enhance-type": 9}
	assert.Len(t, Kinds(), len(want))
	for _, kind := range Kinds() {
		es, err := Entries(kind)
		require.NoError(t, err)
		assert.Len(t, es, want[kind], kind)
	}
	assert.Len(t, ImageSizes(), 13)
	assert.Len(t, Styles(), 24)
	assert.Len(t, Cameras(), 11)
	assert.Len(t, Colors(), 17)
	assert.Len(t, Lightings(), 11)
	assert.Len(t, Voices(), 20)
	assert.Len(t, EnhanceTypes(), 9)
	assert.Len(t, VoicesByGender(Female), 8)
	assert.Len(t, VoicesByGender(Male), 12)
}

func TestEveryIDIsShapedAndUniqueWithinItsKind(t *testing.T) {
	for _, kind := range Kinds() {
		es, err := Entries(kind)
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, e := range es {
			assert.True(t, IsID(e.ID), "%s %s", kind, e.ID)
			assert.False(t, seen[e.ID], "%s %s listed twice", kind, e.ID)
			seen[e.ID] = true
		}
	}
}

func TestEveryEntryParsesBackFromItsLabelNameAndID(t *testing.T) {
	for _, kind := range Kinds() {
		es, err := Entries(kind)
		require.NoError(t, err)
		for _, e := range es {
			forms := []string{e.Label, strings.ToUpper(e.Label), strings.ReplaceAll(e.Label, " ", "-"), strings.ReplaceAll(e.Label, " ", "_"), e.Name, e.ID, strings.ToUpper(e.ID)}
			if e.DocsLabel != "" {
				forms = append(forms, e.DocsLabel, strings.ToLower(e.DocsLabel), strings.ReplaceAll(e.DocsLabel, " ", "-"))
			}
			for _, s := range forms {
				id, err := Parse(kind, s)
				if assert.NoError(t, err, "%s %q", kind, s) {
					assert.Equal(t, e.ID, id, "%s %q", kind, s)
				}
			}
		}
	}
}

func TestStringIsTheWireIDAndLabelTheName(t *testing.T) {
	for _, id := range Styles() {
		assert.Equal(t, string(id), id.String())
		assert.Equal(t, string(id), fmt.Sprint(id), "fmt prints what goes on the wire")
		label, ok := id.Label()
		require.True(t, ok)
		got, err := ParseStyle(label)
		require.NoError(t, err)
		assert.Equal(t, id, got)
	}
	for _, id := range Colors() {
		label, _ := id.Label()
		got, err := ParseColor(label)
		require.NoError(t, err)
		assert.Equal(t, id, got)
	}
	for _, id := range Voices() {
		label, _ := id.Label()
		got, err := ParseVoice(label)
		require.NoError(t, err)
		assert.Equal(t, id, got)
	}
	labelOf := func(id interface{ Label() (string, bool) }) string { l, _ := id.Label(); return l }
	assert.Equal(t, "6644b0c5ec3658a8e38d94f2", StyleAnime.String())
	assert.Equal(t, "6644b0c5ec3658a8e38d94f2", fmt.Sprintf("%v", StyleAnime))
	assert.Equal(t, "anime", labelOf(StyleAnime))
	assert.Equal(t, "3D", labelOf(Style3D))
	assert.Equal(t, "golden hour", labelOf(LightingGoldenHour))
	assert.Equal(t, "female 1", labelOf(VoiceFemale1))
	assert.Equal(t, "podcast", labelOf(EnhancePodcast))
}

func TestParseAcceptsTheFormsPeopleType(t *testing.T) {
	tests := []struct {
		kind, in string
		want     string
	}{
		{"lighting", "golden hour", string(LightingGoldenHour)},
		{"lighting", "golden-hour", string(LightingGoldenHour)},
		{"lighting", "Golden Hour", string(LightingGoldenHour)},
		{"lighting", "LightingGoldenHour", string(LightingGoldenHour)},
		{"image-size", "2:3", string(Size2x3)},
		{"image-size", "2x3", string(Size2x3)},
		{"color", "pastel colors", string(ColorPastelColors)},
		{"camera", "close-up", string(CameraCloseUp)},
		{"camera", "first person view", string(CameraFirstPersonView)},
		{"style", "2000s Phone", string(Style2000sPhone)},
		{"enhance-type", "voice_recording", string(EnhanceVoiceRecording)},
		{"voice", "male 12", string(VoicesByGender(Male)[11])},
	}
	for _, tt := range tests {
		t.Run(tt.kind+" "+tt.in, func(t *testing.T) {
			got, err := Parse(tt.kind, tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestTheDocsLabelsNameTheSameIDsAsTheSpecifications(t *testing.T) {
	const prefix = "6644b0c5ec3658a8e38d"
	tests := []struct {
		kind, docs, spec, suffix string
	}{
		{"style", "Photo", "photograph", "94ec"},
		{"style", "Low Poly", "low detail", "94f0"},
		{"style", "Vintage", "classic", "94f5"},
		{"style", "Mockup", "simulation", "94fb"},
		{"style", "70s Vibe", "1970s stamp", "94fd"},
		{"camera", "Mid Shot", "medium shot", "9532"},
		{"camera", "Fish Eye", "fisheye lens", "9534"},
		{"camera", "First Person", "first-person view", "9535"},
	}
	docsLabels := 0
	for _, kind := range Kinds() {
		es, err := Entries(kind)
		require.NoError(t, err)
		for _, e := range es {
			if e.DocsLabel != "" {
				docsLabels++
			}
		}
	}
	require.Equal(t, len(tests), docsLabels, "every docs label has a row")
	for _, tt := range tests {
		t.Run(tt.kind+" "+tt.docs, func(t *testing.T) {
			want := prefix + tt.suffix
			for _, s := range []string{tt.docs, strings.ToLower(tt.docs), strings.ToUpper(tt.docs), strings.ReplaceAll(tt.docs, " ", "-"), strings.ReplaceAll(strings.ToLower(tt.docs), " ", "_"), strings.ReplaceAll(tt.docs, " ", ""), tt.spec} {
				got, err := Parse(tt.kind, s)
				if assert.NoError(t, err, s) {
					assert.Equal(t, want, got, s)
				}
			}
			es, err := Entries(tt.kind)
			require.NoError(t, err)
			i := slices.IndexFunc(es, func(e Entry) bool { return e.ID == want })
			require.GreaterOrEqual(t, i, 0)
			assert.Equal(t, tt.spec, es[i].Label, "the specification's label stays the one shown")
			assert.Equal(t, tt.docs, es[i].DocsLabel)
		})
	}
	got, err := ParseStyle("photo")
	require.NoError(t, err)
	label, _ := got.Label()
	assert.Equal(t, StylePhotograph, got)
	assert.Equal(t, "photograph", label)
	cam, err := ParseCamera("fish-eye")
	require.NoError(t, err)
	assert.Equal(t, CameraFisheyeLens, cam)
	_, err = ParseColor("Photo")
	assert.ErrorContains(t, err, `unknown color "Photo"`, "a style's docs label is not a color's")
}

func TestNoTwoEntriesOfAKindAnswerToTheSameWord(t *testing.T) {
	for _, tb := range tables {
		owner := map[string]string{}
		for _, e := range tb.entries {
			for _, w := range tb.words(e) {
				if id, ok := owner[w]; ok && id != e.id {
					t.Errorf("%s: %q names both %s and %s", tb.kind, w, id, e.id)
				}
				owner[w] = e.id
			}
		}
	}
}

func TestUnknownLabelsListTheValidOnes(t *testing.T) {
	_, err := ParseStyle("impressionism")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown style "impressionism"`)
	assert.Contains(t, err.Error(), "photograph, digital art, 3D")
	_, err = Parse("nope", "x")
	assert.ErrorContains(t, err, "unknown kind")
}

func TestTypesAreOpenToIDsNotInTheList(t *testing.T) {
	got, err := ParseLighting("6644b0c5ec3658a8e38d9543")
	require.NoError(t, err)
	assert.Equal(t, LightingID("6644b0c5ec3658a8e38d9543"), got)
	assert.Equal(t, "6644b0c5ec3658a8e38d9543", got.String())
	_, ok := got.Label()
	assert.False(t, ok)
}

func TestStyleAndColorKeepSharedSuffixesApart(t *testing.T) {
	assert.Equal(t, string(StyleFantasy), string(ColorSepia))
	fantasy, _ := StyleFantasy.Label()
	sepia, _ := ColorSepia.Label()
	assert.Equal(t, "fantasy", fantasy)
	assert.Equal(t, "sepia", sepia)
}

func TestEverySizeParsesAndHasItsAspect(t *testing.T) {
	const prefix = "6644b0c5ec3658a8e38d"
	tests := []struct {
		label  string
		suffix string
		id     ImageSizeID
		w, h   int
	}{
		{"2:3", "951b", Size2x3, 2, 3},
		{"1:1", "951c", Size1x1, 1, 1},
		{"3:2", "951d", Size3x2, 3, 2},
		{"4:3", "951e", Size4x3, 4, 3},
		{"3:4", "951f", Size3x4, 3, 4},
		{"16:9", "9520", Size16x9, 16, 9},
		{"9:16", "9521", Size9x16, 9, 16},
		{"20:9", "9522", Size20x9, 20, 9},
		{"9:20", "9523", Size9x20, 9, 20},
		{"2:1", "9524", Size2x1, 2, 1},
		{"1:2", "9525", Size1x2, 1, 2},
		{"5:4", "9526", Size5x4, 5, 4},
		{"4:5", "9527", Size4x5, 4, 5},
	}
	require.Len(t, ImageSizes(), len(tests))
	for i, tt := range tests {
		t.Run("size "+tt.label, func(t *testing.T) {
			assert.Equal(t, ImageSizeID(prefix+tt.suffix), tt.id)
			assert.Equal(t, tt.id, ImageSizes()[i], "listed in the order of the docs")
			x := strings.Replace(tt.label, ":", "x", 1)
			for _, s := range []string{tt.label, " " + tt.label + " ", x, "Size" + x, "size" + x, prefix + tt.suffix} {
				got, err := ParseImageSize(s)
				if assert.NoError(t, err, s) {
					assert.Equal(t, tt.id, got, s)
				}
			}
			label, ok := tt.id.Label()
			assert.True(t, ok)
			assert.Equal(t, tt.label, label)
			w, h, ok := tt.id.Aspect()
			assert.True(t, ok)
			assert.Equal(t, [2]int{tt.w, tt.h}, [2]int{w, h})
		})
	}
	_, err := ParseImageSize("21:9")
	assert.ErrorContains(t, err, `unknown image size "21:9"`)
	assert.ErrorContains(t, err, "2:3, 1:1, 3:2, 4:3, 3:4, 16:9, 9:16, 20:9, 9:20, 2:1, 1:2, 5:4, 4:5")
	got, err := ParseImageSize("6644b0c5ec3658a8e38d9528")
	require.NoError(t, err, "an id in no list still parses")
	assert.Equal(t, ImageSizeID("6644b0c5ec3658a8e38d9528"), got)
}

func TestAspectAndGender(t *testing.T) {
	w, h, ok := Size3x2.Aspect()
	assert.True(t, ok)
	assert.Equal(t, [2]int{3, 2}, [2]int{w, h})
	_, _, ok = ImageSizeID("x").Aspect()
	assert.False(t, ok)
	assert.Equal(t, Female, VoiceFemale1.Gender())
	assert.Equal(t, VoiceID("52f254abbd463029dd655422"), VoiceFemale1)
	assert.Equal(t, VoiceID("e1fb08ee7177e52425b96a49"), VoiceMale1)
	assert.Equal(t, Gender(""), VoiceID("x").Gender())
}

func TestGoNamesFollowTheRule(t *testing.T) {
	es, err := Entries("style")
	require.NoError(t, err)
	names := map[string]string{}
	for _, e := range es {
		names[e.Label] = e.Name
	}
	assert.Equal(t, "Style3D", names["3D"])
	assert.Equal(t, "Style1970sStamp", names["1970s stamp"])
	assert.Equal(t, "StyleTraditionalJapan", names["traditional Japan"])
}
