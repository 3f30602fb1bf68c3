//go:build unix && !linux

package pgtest

import "syscall"

// dieWithParent does nothing where the system cannot signal a child when
// its parent dies: Main and Cleanup stop the server.
func dieWithParent(*syscall.SysProcAttr) {}
