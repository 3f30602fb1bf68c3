//go:build !unix

package cli

// ignoreSIGPIPE guards stderr and stdout against a reader that went away;
// there is no SIGPIPE to ignore on this system.
func ignoreSIGPIPE(a *app) {
	a.con.mu.Lock()
	a.con.w = &pipeGuard{w: a.con.w}
	a.con.mu.Unlock()
	a.stdout = &pipeGuard{w: a.stdout}
}
