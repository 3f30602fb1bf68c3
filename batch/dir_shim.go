package batch

import "errors"

// Dir is the local-folder Store. This declaration only holds the name until
// the ledger's folder store lands, which replaces this file.
type Dir struct{ Store }

// NewDir opens the local folder at path as a Store. Until the ledger's
// folder store lands it returns an error.
func NewDir(path string) (*Dir, error) {
	return nil, errors.New("batch: the local folder store is not built yet")
}
