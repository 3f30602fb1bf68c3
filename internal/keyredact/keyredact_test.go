package keyredact_test

import (
	"net/url"
	"strings"
	"testing"

	_ "github.com/creativegen/creative-go" // sets New
	"github.com/creativegen/creative-go/internal/keyredact"
)

func TestTheSDKLendsItsRedactor(t *testing.T) {
	const key = "k3y/with+odd&chars"
	r := keyredact.New([]string{key, "abc"})
	for _, echo := range []string{key, url.QueryEscape(key), strings.ReplaceAll(key, "&", `\u0026`), strings.ReplaceAll(key, "&", "&amp;")} {
		if got := r.Redact("echo " + echo + " end"); got != "echo "+keyredact.Marker+" end" {
			t.Errorf("Redact(%q) = %q", echo, got)
		}
	}
	if len(r.Forms) == 0 || r.Forms[0] != url.QueryEscape(key) && len(r.Forms[0]) < len(key) {
		t.Errorf("Forms = %q, want the key's forms, longest first", r.Forms)
	}
	if got := r.Redact("abc"); got != "abc" {
		t.Errorf("a key shorter than 4 bytes was looked for: %q", got)
	}
}
