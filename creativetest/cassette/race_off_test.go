//go:build !race

package cassette_test

const raceDetector = false
