// Package cli is the command line of creative. Start with Main (cli.go),
// then the command tree (root.go): the 16 operation commands, made from
// the table in internal/ops (commands.go, params.go) and writing their
// answers through output.go; fetch, ids and version; and batch, from
// package batchcmd. Two programs run it: creative, which links no cloud
// SDK so that commands that touch no bucket start fast, and
// creative-cloud, which opens bucket URLs and which creative hands a
// command that names one over to (handoff.go).
package cli

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/creativegen/creative-go/cmd/creative/internal/batchcmd"
	"github.com/mattn/go-isatty"
)

// Buckets opens the bucket URLs (s3://, gs://, azblob://, mem://) that
// batch takes as its jobs file and its --out.
type Buckets = batchcmd.Buckets

// Main runs the command line with the process's arguments, streams and
// environment, and returns the exit status for os.Exit. buckets opens
// bucket URLs; with nil buckets, a command that names a bucket URL is
// handed over, before it does anything, to creative-cloud, found through
// $CREATIVE_CLOUD, beside the running executable or on PATH, which runs it
// in this process's place (on Windows, as a child whose exit status is
// returned).
func Main(buckets *Buckets) int {
	caught := make(chan os.Signal, 2)
	signal.Notify(caught, os.Interrupt, syscall.SIGTERM)
	signals := make(chan os.Signal, 2)
	a := newApp(os.Stdout, os.Stderr, os.Getenv, signals, buckets)
	a.stdin = os.Stdin
	go a.relaySignals(caught, signals, os.Exit)
	if buckets == nil {
		a.handOver = func() error { return handOverToCloud(os.Args[1:]) }
	}
	return a.run(os.Args[1:])
}

// newApp is a run on the streams stdout and stderr: progress is shown on
// stderr, and binary output refused on stdout, when each is a terminal.
func newApp(stdout, stderr *os.File, getenv func(string) string, signals <-chan os.Signal, buckets *Buckets) *app {
	return &app{stdout: stdout, stderr: stderr, getenv: getenv, progress: isTerminal(stderr), stdoutTerminal: isTerminal(stdout), signals: signals, buckets: buckets}
}

// isTerminal reports whether f is a terminal. A character device is not
// enough: /dev/null is one, and output sent there is meant to be dropped.
func isTerminal(f *os.File) bool {
	fd := f.Fd()
	return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
}
