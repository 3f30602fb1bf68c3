//go:build linux

package batch

import (
	"os"
	"strconv"
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

// monotonicNow reads the clock that runs from this boot, the same for
// every process: entries of several logs of one boot are ordered by it.
func monotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// journalFits reports whether the journal can be trusted on the file
// system of folder: one whose syncfs(2) is known to sync (ext4, xfs,
// btrfs, tmpfs), on Linux 5.8 or later, where syncfs reports the errors of
// writeback.
func journalFits(folder *os.File) bool {
	var st unix.Statfs_t
	if unix.Fstatfs(int(folder.Fd()), &st) != nil {
		return false
	}
	switch st.Type {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC:
	default:
		return false
	}
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 8)
}

// kernelAtLeast reports whether the kernel release (such as
// "6.1.0-18-amd64") is major.minor or later.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	lead := func(s string) (int, error) { // "8-rc1" is 8
		end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		if end >= 0 {
			s = s[:end]
		}
		return strconv.Atoi(s)
	}
	ma, err1 := lead(parts[0])
	mi, err2 := lead(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

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
