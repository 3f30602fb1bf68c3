package cassette_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest/cassette"
)

// A body past what a recording redacts in memory (64 MiB) is looked
// through a window at a time (windows, tested at their edges with scrub):
// the key is found in it as it is, and escaped in a long text; a clean one
// passes.
func TestCheckFindsTheKeyInALongBody(t *testing.T) {
	t.Setenv(creative.EnvAccessKey, "")
	const size = 65 << 20
	for _, tc := range []struct {
		name, fill, key string
		at              int
		found           bool
	}{
		{"binary", "\x00\x01", plantedKey, 40 << 20, true},
		{"text, escaped for JSON", "a", strings.ReplaceAll(plantedKey, "&", `\u0026`), 50 << 20, true},
		{"binary, clean", "\x00\x01", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if raceDetector && tc.fill == "a" {
				t.Skip("64 MiB of text through the checker's patterns take a minute under the race detector")
			}
			b := bytes.Repeat([]byte(tc.fill), size/len(tc.fill))
			copy(b[tc.at:], tc.key)
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "bodies"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "bodies", "long.bin"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			err := cassette.Check(dir, &cassette.CheckOptions{Keys: []string{plantedKey}})
			var ce *cassette.CheckError
			switch {
			case tc.found && !errors.As(err, &ce):
				t.Errorf("Check = %v, want the key found", err)
			case tc.found && len(ce.Findings) != 1:
				t.Errorf("Check found %d findings, want the key once: %v", len(ce.Findings), err)
			case !tc.found && err != nil:
				t.Errorf("Check of a clean body: %v", err)
			}
		})
	}
}
