// Package cmdutil is what every command of creative shares: the kinds of
// error that set the exit status (Usagef, Ran, ErrInterrupted), the one
// way text from the service or a ledger reaches a terminal (Printable), and
// the inputs' gate for files a command reads (ReadInput, OpenJobs).
package cmdutil

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// UsageError is a mistake in the command line, reported with exit status 2.
type UsageError struct{ Msg string }

// Error returns the message.
func (e *UsageError) Error() string { return e.Msg }

// Usagef is a usage error formatted as fmt.Sprintf does.
func Usagef(format string, args ...any) error { return &UsageError{fmt.Sprintf(format, args...)} }

// RanError marks an error returned by a command's own code, as opposed to
// one cobra found in the command line (always a usage error).
type RanError struct{ Err error }

// Error returns the wrapped error's message.
func (e *RanError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *RanError) Unwrap() error { return e.Err }

// ErrInterrupted reports a run ended by Ctrl-C or SIGTERM.
var ErrInterrupted = errors.New("interrupted")

// OneLine is s with its runs of white space, line ends included, made one
// space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Ran wraps a command's own code so that its errors are told apart from
// cobra's.
func Ran(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := fn(cmd, args); err != nil {
			return &RanError{err}
		}
		return nil
	}
}

// NoArgs refuses words after an operation.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected %q after %q: values are given with flags", args[0], cmd.CommandPath())
	}
	return nil
}

// QuoteAll is s with each string quoted.
func QuoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// TakesBuckets is the annotation of a command that takes bucket URLs: a
// comma-separated list of "jobs" (its first argument) and "out" (--out).
const TakesBuckets = "creative/buckets"

// ErrNoCloud is the refusal of a bucket URL when no creative-cloud is
// found: nothing was sent or created.
var ErrNoCloud = &UsageError{"bucket URLs need creative-cloud beside creative or on PATH: go install ./cmd/creative/... (from a clone) installs both"}
