package shape

import "testing"

func TestIsID(t *testing.T) {
	for s, want := range map[string]bool{
		"6644b0c5ec3658a8e38d94f2":      true,
		"000000000000000000000000":      true,
		"6644B0C5EC3658A8E38D94F2":      false, // upper case: the service would not know it
		"6644b0c5ec3658a8e38d94F2":      false,
		"6644b0c5ec3658a8e38d94f":       false,
		"6644b0c5ec3658a8e38d94f2a":     false,
		"6644b0c5ec3658a8e38d94zz":      false,
		"":                              false,
		"6644b0c5ec3658a8e38d94f\u00e9": false,
	} {
		if got := IsID(s); got != want {
			t.Errorf("IsID(%q) = %v, want %v", s, got, want)
		}
	}
}
