//go:build !unix

package batch

// lockFolder has no folder of locks on this system: runs are judged by
// their heartbeats alone.
func lockFolder(Store) string { return "" }

// lockRun takes no lock on this system.
func lockRun(string, string) (unlock func()) { return func() {} }

// A lockState is what a run's lock says of it.
type lockState int

const (
	lockUnknown lockState = iota // no lock file: the heartbeat says
	lockHeld                     // its process lives
	lockFree                     // its process ended
)

// probeRun knows nothing of runs on this system.
func probeRun(string, string) lockState { return lockUnknown }
