package batch

// ListLedgerInParts makes a run list the ledger in its 16 parts at once
// whatever its size, until the returned func is called.
func ListLedgerInParts() (restore func()) {
	old := partsFrom
	partsFrom = 0
	return func() { partsFrom = old }
}
