//go:build linux

package batch

import (
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// bootID names this boot of the machine; "" where it cannot be read.
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// syncFS makes durable every file written on the file system that holds
// f, by syncfs(2).
func syncFS(f *os.File) error {
	for {
		err := unix.Syncfs(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// datasync makes f's bytes durable, and its length, by fdatasync(2).
var datasync = func(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// waitLock takes an exclusive lock on f, waiting for it.
func waitLock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}
