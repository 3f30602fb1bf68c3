//go:build !unix

package batchcmd

import "io"

// ignoreSIGPIPE guards stderr and stdout against a reader that went away;
// there is no SIGPIPE to ignore on this system.
func ignoreSIGPIPE(a *app) {
	a.guardConsole(func(w io.Writer) io.Writer { return &pipeGuard{w: w} })
	a.stdout = &pipeGuard{w: a.stdout}
}
