//go:build unix

package batchcmd

import (
	"io"
	"os/signal"
	"syscall"
)

// ignoreSIGPIPE keeps a batch alive when stdout or stderr is a pipe whose
// reader went away (creative batch ... 2>&1 | head -1): without it the
// first write after that kills the process with calls in flight. Writes
// then fail with EPIPE, and stderr stops being written to.
func ignoreSIGPIPE(a *app) {
	signal.Ignore(syscall.SIGPIPE)
	a.guardConsole(func(w io.Writer) io.Writer { return &pipeGuard{w: w} })
	a.stdout = &pipeGuard{w: a.stdout}
}
