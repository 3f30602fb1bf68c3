//go:build race && unix

package pgledger

// Under the race detector the schedules check the harness's code and the
// ledger's, slowly: a few of them do.
func init() { defaultSchedules = 5 }
