package suggest

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"prompt", "prompt", 0},
		{"promt", "prompt", 1},
		{"kitten", "sitting", 3},
		{"image/text-to-imag", "image/text-to-image", 1},
		{"café", "cafe", 1}, // runes, not bytes
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Distance(tt.b, tt.a); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (it is symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestNearest(t *testing.T) {
	textToImage := []string{"prompt", "numberOfResults", "imageSizeId", "styleId", "cameraId", "colorId", "lightingId"}
	flags := []string{"prompt", "number-of-results", "image-size-id", "style-id", "out", "json", "base-url", "fake", "timeout", "retries", "verbose", "help"}
	for _, tt := range []struct {
		name  string
		word  string
		names []string
		want  []string
	}{
		{"a letter left out", "promt", flags, []string{"prompt"}},
		{"a JSON name given as a flag", "numberOfResults", flags, []string{"number-of-results"}},
		{"a flag name given as a JSON field", "number-of-results", textToImage, []string{"numberOfResults"}},
		{"British spelling, without the Id", "colour", textToImage, []string{"colorId"}},
		{"the start of a name", "style", textToImage, []string{"styleId"}},
		{"a word inside a name", "size", textToImage, []string{"imageSizeId"}},
		{"a word that goes on past a name", "output", flags, []string{"out"}},
		{"a word that goes on past a name too short to tell", "helpme", []string{"he", "json"}, nil},
		{"a letter too many", "timeoutt", flags, []string{"timeout"}},
		{"two letters swapped", "verobse", flags, []string{"verbose"}},
		{"the nearest wins over one also near", "retires", []string{"retries", "retry-wait"}, []string{"retries"}},
		{"ties are all given, in order", "enhance", []string{"image/enhance", "audio/enhance"}, []string{"image/enhance", "audio/enhance"}},
		{"nothing near", "flavour", textToImage, nil},
		{"a word too short to be inside a name", "id", textToImage, nil},
		{"a short word far from every name", "xyz", flags, nil},
		{"an empty word", "", flags, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Nearest(tt.word, tt.names); !slices.Equal(got, tt.want) {
				t.Errorf("Nearest(%q) = %q, want %q", tt.word, got, tt.want)
			}
		})
	}
}
