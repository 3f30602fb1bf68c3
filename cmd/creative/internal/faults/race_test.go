//go:build race

package faults

// Under the race detector the schedules check the harness's own code and
// the workers', slowly: a few of them do.
func init() { defaultSchedules, raceOn = 5, true }
