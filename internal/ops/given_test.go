package ops

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// No number field takes 0 when given: a request would leave it out.
func TestAGivenZeroIsRefusedForEveryNumber(t *testing.T) {
	for _, op := range All {
		for _, f := range op.Fields {
			if f.Type != Number {
				assert.NoError(t, f.CheckGiven("0"), "%s %s", op.Name, f.Name)
				continue
			}
			assert.ErrorContains(t, f.CheckGiven(0.0), "must be above 0, got 0", "%s %s", op.Name, f.Name)
			assert.NoError(t, f.CheckGiven(1.0), "%s %s", op.Name, f.Name)
		}
	}
}
