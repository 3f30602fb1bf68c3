package sqlitestore

// RunLockFolder is the folder where the runs of a batch on this Store keep
// their locks (see package batch): the Store's own folder, which every
// process that opens it shares, whatever its view of process ids (a
// container's).
func (s *Store) RunLockFolder() string { return s.path }
