//go:build unix

package cli

import (
	"os/signal"
	"syscall"
)

// ignoreSIGPIPE keeps a batch alive when stdout or stderr is a pipe whose
// reader went away (creative batch ... 2>&1 | head -1): without it the
// first write after that kills the process with calls in flight. Writes
// then fail with EPIPE, and stderr stops being written to.
func ignoreSIGPIPE(a *app) {
	signal.Ignore(syscall.SIGPIPE)
	a.con.mu.Lock()
	a.con.w = &pipeGuard{w: a.con.w}
	a.con.mu.Unlock()
	a.stdout = &pipeGuard{w: a.stdout}
}
