//go:build !race

package batch_test

// raceOn is set when the race detector runs (see race_on_test.go).
const raceOn = false
