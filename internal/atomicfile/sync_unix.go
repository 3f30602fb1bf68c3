//go:build unix

package atomicfile

import (
	"errors"
	"syscall"
)

// isInvalid reports whether err says the file cannot be flushed (EINVAL:
// some file systems do not flush folders).
func isInvalid(err error) bool { return errors.Is(err, syscall.EINVAL) }
