package batch

// ThisSystem names the system this process runs on, as heartbeats name
// it; "" where it cannot be named.
func ThisSystem() string { return thisSystem() }

func LockFolder(s Store) string { return lockFolder(s) }

func LockRun(dir, token string) func() { return lockRun(dir, token) }
