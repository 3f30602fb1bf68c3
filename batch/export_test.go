package batch

import "time"

// SetHeartbeat makes r's runs write their heartbeats every d, and take
// those older than three times d as stale.
func SetHeartbeat(r *Runner, d time.Duration) { r.beat = d }

// ThisSystem names the system this process runs on, as heartbeats name
// it; "" where it cannot be named.
func ThisSystem() string { return thisSystem() }
