package cassette

// TB is the part of testing.TB that Start uses: a *testing.T, B or F is
// one. Start takes it rather than testing.TB so that this package links no
// testing into a program that records or replays (the command line does).
type TB interface {
	Helper()
	Error(args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Cleanup(func())
}
