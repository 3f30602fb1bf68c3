package batchcmd

import "strings"

// flagWords is the one mapping from what package batch says to what
// creative batch's user types: the library names its options
// (Options.ResendUnknown) and its ledgers, and the command line the flags
// that set them. Every text of the library that a batch command prints
// (an error, a record's error, a bad line) goes through inFlags.
var flagWords = strings.NewReplacer(
	"Options.ResendUnknown", "--resend-unknown",
	"Options.RepayLost", "--repay-expired",
	"a PostgreSQL ledger (pgledger)", "--ledger postgres://...",
	` (an operation is an API path, such as "image/text-to-image")`, " (creative --help lists the operations)",
)

// inFlags is s, a text of package batch, in the command line's words.
func inFlags(s string) string { return flagWords.Replace(s) }

// flagsError is an error of package batch told in the command line's
// words; errors.Is and errors.As still see the error it wraps.
type flagsError struct{ err error }

// Error returns the wrapped error's message in the command line's words.
func (e *flagsError) Error() string { return inFlags(e.err.Error()) }

// Unwrap returns the wrapped error.
func (e *flagsError) Unwrap() error { return e.err }

// spoken is err in the command line's words; nil stays nil.
func spoken(err error) error {
	if err == nil {
		return nil
	}
	return &flagsError{err}
}
