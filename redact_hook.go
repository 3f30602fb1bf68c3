package creative

import (
	"slices"

	"github.com/creativegen/creative-go/internal/keyredact"
)

// The redactor is lent to the packages of the module that keep what came
// from the network on disk, so that they remove the key in the same forms.
func init() {
	keyredact.New = func(keys []string) keyredact.Redactor {
		r := &redactor{keys: newRedactor(keys).keys}
		return keyredact.Redactor{Redact: r.redact, Forms: slices.Clone(r.secrets())}
	}
}
