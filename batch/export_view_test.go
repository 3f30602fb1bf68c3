package batch

// ListLedgerInParts makes a run, and a status, list the ledger in its 16
// parts at once whatever its size, until the returned func is called.
func ListLedgerInParts() (restore func()) {
	old, oldStatus := partsFrom, statusPartsFrom
	partsFrom, statusPartsFrom = 0, 0
	return func() { partsFrom, statusPartsFrom = old, oldStatus }
}

// ListStatusInPartsFrom makes a status list the other parts of the ledger
// at once from n keys, until the returned func is called.
func ListStatusInPartsFrom(n int) (restore func()) {
	old := statusPartsFrom
	statusPartsFrom = n
	return func() { statusPartsFrom = old }
}
