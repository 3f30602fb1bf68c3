//go:build !unix

package batch

import (
	"errors"
	"os"
)

// tryLock cannot lock on this system: it reports false, so temporary files
// of other runs are never removed from under them (they are left instead).
func tryLock(*os.File) (bool, error) {
	return false, errors.ErrUnsupported
}
