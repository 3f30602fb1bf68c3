package ops

import (
	"slices"
	"testing"

	"github.com/creativegen/creative-go/ids"
)

func TestTheTableHoldsTheSixteenOperationsOfTheSpec(t *testing.T) {
	if len(All) != 16 {
		t.Fatalf("%d operations, want 16", len(All))
	}
	seen := map[string]bool{}
	for _, o := range All {
		if seen[o.Name] {
			t.Errorf("%s is listed twice", o.Name)
		}
		seen[o.Name] = true
		if !slices.Contains([]string{"text", "audio", "image", "video"}, o.Area()) || o.Verb() == "" {
			t.Errorf("%s: not <area>/<operation>", o.Name)
		}
		if got, ok := Lookup(o.Name); !ok || got.Name != o.Name {
			t.Errorf("Lookup(%q) = %v, %v", o.Name, got.Name, ok)
		}
		files := 0
		for _, f := range o.Fields {
			if f.Type == File {
				files++
			}
			if f.Type == ID && !slices.Contains(ids.Kinds(), f.IDKind) {
				t.Errorf("%s.%s: id kind %q is not one of package ids", o.Name, f.Name, f.IDKind)
			}
		}
		if o.Form != (files == 1) {
			t.Errorf("%s: form data %v with %d file fields", o.Name, o.Form, files)
		}
	}
	if p := (Op{Name: "image/text-to-image"}).Path(); p != "/image/v1/text-to-image" {
		t.Errorf("Path = %q", p)
	}
	if _, ok := Lookup("image/nothing"); ok {
		t.Error("Lookup found an operation that is not in the table")
	}
}
