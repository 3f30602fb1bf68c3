//go:build unix

package cli

import (
	"fmt"
	"syscall"

	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
)

// execCloud replaces this process with creative-cloud at path, given args
// and env, so that the process id, its signals, its streams and its exit
// status stay this process's own (a worker killed with SIGKILL is killed
// whole). It returns only when the exec fails.
func execCloud(path string, args, env []string) error {
	err := syscall.Exec(path, append([]string{path}, args...), env)
	return &cmdutil.UsageError{Msg: fmt.Sprintf("run %s: %v", path, err)}
}
