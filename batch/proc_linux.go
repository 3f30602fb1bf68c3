//go:build linux

package batch

import (
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
)

// thisSystem names the system this process runs on: its boot and its
// namespace of process ids, so that a heartbeat written under the same name
// names a process this one can look for. It is "" where either cannot be
// read.
var thisSystem = sync.OnceValue(func() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
})

// processGone reports whether no process with id pid exists on this
// system. A process that may not be signalled (another user's) exists.
func processGone(pid int) bool {
	return pid > 0 && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
