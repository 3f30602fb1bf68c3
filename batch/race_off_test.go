//go:build !race

package batch_test

// raceDetector is set when the race detector runs (see race_on_test.go).
const raceDetector = false
