// Package batch runs many calls of the Creative Generation Service from a
// list of jobs, paying for each job once.
//
// Start with New, then Check, Run, and Summary; Plan says what a run
// would do; ReadStatus and WriteIndex read a ledger. Jobs come from a JSON
// Lines file (File) or Go values (Values), and are read again rather than
// held: memory does not grow with their number.
//
// Every job is claimed in a Ledger before it is sent and every paid answer
// is recorded there before it is forgotten: the ledger is a database
// engine (SQLite on one machine, package batch/sqliteledger; PostgreSQL
// for a fleet, batch/pgledger). Outputs are files in a Store: a local
// folder (OpenFolder) or a bucket.
//
// A job is its id, or its operation and fields (a file by its content's
// hash) and its occurrence among identical jobs. It is Claimed, then
// Answered and Done, or Failed, Refused (a rerun sends it) or Unknown
// (maybe paid: sent again only with Options.ResendUnknown); Classify turns
// a call's error into a state. Runs that share a ledger hold leases
// (Options.Lease) and fence each other's late records (LedgerError), as
// docs/fleet.md tells.
package batch

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"strings"
)

// A Store holds a batch's outputs (never its ledger): a local folder
// (OpenFolder) or a bucket. Keys are slash-separated relative paths such
// as "000001-text-to-image-3fa9c1.png"; a Store refuses those CheckKey
// refuses. A Store is safe for concurrent use.
type Store interface {
	// NewWriter streams an object to key. Nothing is visible under key
	// until Close returns nil, which replaces what key held; a writer
	// whose context is cancelled, or that is closed after a failed Write,
	// leaves nothing. Meta is stored with the object where the store can.
	NewWriter(ctx context.Context, key string, meta map[string]string) (io.WriteCloser, error)
	// Exists reports whether key names an object.
	Exists(ctx context.Context, key string) (bool, error)
	// List yields the keys that start with prefix, holding no more than a
	// page of them in memory; a folder lists the one folder prefix names.
	List(ctx context.Context, prefix string) iter.Seq2[string, error]
	// Get reads an object whole (a kept answer, read again), or returns an
	// error matching fs.ErrNotExist.
	Get(ctx context.Context, key string) ([]byte, error)
	// Delete removes key; a key that does not exist is not an error.
	Delete(ctx context.Context, key string) error
	// Close releases what the store holds open.
	Close() error
}

// CheckKey is the check every Store makes of a key before it touches
// anything: a key is a clean slash-separated relative path, neither empty
// nor absolute, with no "." or ".." segment, no empty segment and no
// backslash (a separator on some systems' disks).
func CheckKey(key string) error {
	if key == "" || key == "." || !fs.ValidPath(key) || strings.Contains(key, `\`) {
		return fmt.Errorf("batch: key %q is not a clean relative path", key)
	}
	return nil
}
