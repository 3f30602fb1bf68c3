// Package cli is the command line of creative: the command tree, batch and
// its stores, output and progress. Package main of cmd/creative only calls
// Main.
package cli

import (
	"os"
	"os/signal"
	"syscall"
)

// Main runs the command line with the process's arguments, streams and
// environment, and returns the exit status for os.Exit.
func Main() int {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	a := &app{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, progress: isTerminal(os.Stderr), stdoutTerminal: isTerminal(os.Stdout), signals: signals}
	return a.run(os.Args[1:])
}

// isTerminal reports whether f is a character device, such as a terminal.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
