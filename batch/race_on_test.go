//go:build race

package batch_test

// raceDetector is set when the race detector runs, which multiplies the memory
// a program takes: bounds on the memory of the program as built are not
// held then.
const raceDetector = true
