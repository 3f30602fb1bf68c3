//go:build !unix

package atomicfile

// isInvalid reports whether err says the folder cannot be flushed: where
// folders are not files that can be flushed (Windows), every error of it
// does.
func isInvalid(error) bool { return true }
