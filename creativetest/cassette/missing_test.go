package cassette_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/creativegen/creative-go/creativetest/cassette"
)

// A cassette that was never recorded says how to record it, whether its
// folder is missing or empty.
func TestAMissingCassetteSaysHowToRecordIt(t *testing.T) {
	empty := t.TempDir()
	missing := filepath.Join(t.TempDir(), "TestRunCassette")
	for _, dir := range []string{missing, empty} {
		_, err := cassette.Open(dir, cassette.Replay, &cassette.Options{IgnoreEnv: true})
		if err == nil {
			t.Fatalf("%s: opened with no recording", dir)
		}
		want := "cassette: " + dir + " holds no recording ("
		how := "record it first: run once with CREATIVE_RECORD_MODE=record, against the real service (CREATIVE_ACCESS_KEY set) " +
			"or for free against the fake one (a creativetest.Server's Client, or creative --fake); see docs/testing.md"
		if msg := err.Error(); len(msg) < len(want) || msg[:len(want)] != want || msg[len(msg)-len(how):] != how {
			t.Errorf("%s: the error is %q", dir, msg)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v does not match fs.ErrNotExist", dir, err)
		}
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("replay made the folder: %v", err)
	}
}
