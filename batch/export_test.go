package batch

import "time"

// SetHeartbeatEvery makes runs write their heartbeats every d (and take
// those older than three times d as stale) until restore is called.
func SetHeartbeatEvery(d time.Duration) (restore func()) {
	old := heartbeatEvery
	heartbeatEvery = d
	return func() { heartbeatEvery = old }
}

// ThisSystem names the system this process runs on, as heartbeats name
// it; "" where it cannot be named.
func ThisSystem() string { return thisSystem() }
