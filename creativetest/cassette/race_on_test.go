//go:build race

package cassette_test

// raceDetector is set when the race detector runs, which makes scanning
// long bodies many times slower.
const raceDetector = true
