//go:build !unix

package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"

	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
)

// execCloud runs creative-cloud at path as a child, given args and env,
// with this process's streams, and returns its exit status as an
// *exitStatus: this system has no exec(2) to put it in this process's
// place. Ctrl-C reaches the child from the console, which reports it; here
// it is ignored, so that this process waits for the child's status.
func execCloud(path string, args, env []string) error {
	signal.Ignore(os.Interrupt)
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return &exitStatus{0}
	case errors.As(err, &exit):
		return &exitStatus{exit.ExitCode()}
	default:
		return &cmdutil.UsageError{Msg: fmt.Sprintf("run %s: %v", path, err)}
	}
}
