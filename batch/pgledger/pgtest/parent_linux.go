package pgtest

import "syscall"

// dieWithParent has the server shut down at once when the test binary
// that started it dies without stopping it.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGQUIT }
