// Package batch runs many calls of the Creative Generation Service from a
// list of jobs, paying for each job once: every job is claimed in a ledger
// before its request is sent, and every paid answer is recorded there before
// it is forgotten.
//
// Jobs come from a JSON Lines file (File, JSONL) or from Go values (Values).
// A Runner checks every job before it sends anything (Check), then runs them
// with bounded concurrency (Run) or says what a run would do (Plan), reading
// the jobs again rather than holding them: its memory does not grow with
// their number. The ledger and the outputs live in a Store: a local folder
// (package batch/sqlitestore, a module of its own), a bucket, or any store
// that keeps the Store contract (package storetest checks it, and has one
// in memory), shared by any number of workers.
//
// A job's identity is its id, or its operation and fields (a file by its
// content's hash) and its occurrence among identical jobs. Its states are
// Claimed, then Answered (the answer stored: links, texts, images written)
// and Done (every file in place), or Failed (the service said no), Refused
// (not sent, or refused: a rerun sends it) and Unknown (maybe paid: sent
// again only with Options.ResendUnknown). A job stays maybe paid until an
// attempt of it ends done: an attempt sent again on that say-so that does
// nothing (not sent, refused, failed) ends Unknown too. Each attempt at a
// job is its own key in the ledger, made by an exclusive create, so two
// workers never make the same attempt; Classify is the one place that turns
// a call's error into a state. The key of an attempt's end says how it
// ended, so that a run, ReadStatus (which counts a ledger's jobs by state)
// and a rerun learn where every job stands from listings of the Store, a
// thousand keys a request on a bucket, rather than a request a job;
// WriteIndex writes a page that shows them to a person. A Budget caps the
// calls and the spending of every run on a ledger together.
//
// A claim with no end is in flight on a live worker, or its worker died
// (maybe paid). Each run holds a lease of length L (Options.Lease, 90 s by
// default) and keeps a heartbeat, ledger/runs/<run>.json, written every L/6
// (15 s), each write with a deadline of L/9 (10 s; the first, before
// anything is claimed, L/3), and removed when the run ends; each record
// names its run (Record.Run). The run claims and sends only while its lease
// is proven: the last heartbeat write that completed began less than L less
// a margin of L/3 (60 s) ago, by the monotonic clock (or the wall clock,
// when it says more time passed). Every attempt of every call passes that
// one check; a watchdog apart from the writes ends the lease the moment it
// is no longer proven (a lease once in doubt is never proven again), and the
// run then claims and sends nothing more: the calls in flight end, their
// answers are recorded if the ledger takes them, and the run ends with a
// *LedgerError that hands back what the ledger lacks. A record written once
// the lease is in doubt is fenced by the attempt's number: it is created as
// the claim of the next attempt, so that a worker that took the job over
// meanwhile holds it and the late record is refused (its answer handed
// back), and no job shows done twice.
//
// Other workers take a run for gone only when its heartbeat is older than
// its L plus an allowance of L/3 (30 s) for clocks that disagree, read by
// the store's own clock where the store tells an object's modification
// time, else by the heartbeat's time; the fleet's clocks must agree within
// that allowance. On one machine, each run holds a file lock (flock) for
// its life, in the store's folder (a local folder's store) or under the
// system's temporary folder: a run whose lock is held is live however
// long its process is suspended, and one whose lock is free is gone at
// once. A claim whose run goes is left to its worker whatever the options
// (Summary.Elsewhere); one whose run is gone is of a worker that is gone
// (Summary.Claimed: maybe paid, sent again with Options.ResendUnknown; a
// download is fetched again, which costs nothing). A run whose first
// heartbeat cannot be written claims nothing. An answer that every job
// would get alike (the key refused: HTTP 401 or 403; a base URL that does
// not answer as the service) stops the run at once: nothing more is
// claimed or sent.
package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"strings"
)

// ErrExist is returned by Store.Create when the key already exists: someone
// else (another worker, another process, an earlier run) holds it.
var ErrExist = errors.New("batch: already exists")

// ErrNotExist is returned by Store.Get when the key does not exist.
var ErrNotExist = errors.New("batch: does not exist")

// A Store is the place of record of a batch: its ledger and its outputs. It
// offers only what object stores and local folders both give, so the ledger's
// rules (claims, states, reruns) are written once, in this package, over any
// Store. Keys are slash-separated relative paths such as
// "ledger/3fa/<job>.0001.json" or "000001-text-to-image-3fa9c1.png"; a Store
// never lets a key escape its root: it refuses those CheckKey refuses
// (storetest checks it).
//
// A Store is safe for concurrent use, by goroutines of one process and by
// processes on any number of machines that open the same place.
type Store interface {
	// Create writes a small object only if key does not exist yet, as one
	// atomic step: of two concurrent Creates of one key, exactly one
	// succeeds and the other returns an error matching ErrExist, and a
	// reader sees no object or the whole of it, never a part. The object
	// is durable when Create returns nil.
	Create(ctx context.Context, key string, data []byte) error
	// Put writes a small object, replacing any earlier one, atomically (a
	// reader sees the old or the new bytes, never a mix) and durably.
	Put(ctx context.Context, key string, data []byte) error
	// Get reads a small object, or returns an error matching ErrNotExist.
	Get(ctx context.Context, key string) ([]byte, error)
	// List yields the keys under prefix in lexical order. It holds no more
	// than a page of keys in memory at once.
	List(ctx context.Context, prefix string) iter.Seq2[string, error]
	// NewWriter streams a large object (an output file) to key. Nothing is
	// visible under key until Close returns nil; a writer whose context is
	// cancelled, or that is closed after a failed Write, leaves nothing.
	// Meta is stored with the object where the store can (object metadata),
	// and may be ignored by stores that cannot.
	NewWriter(ctx context.Context, key string, meta map[string]string) (io.WriteCloser, error)
	// Exists reports whether key names an object.
	Exists(ctx context.Context, key string) (bool, error)
	// Delete removes key; removing a key that does not exist is not an error.
	Delete(ctx context.Context, key string) error
	// Close releases what the store holds open.
	Close() error
}

// A DirLister is a Store that can also list the keys directly under a
// prefix, leaving out those in its sub-folders (a bucket's listing with a
// delimiter): a run lists the outputs so, apart from the ledger's folder.
// storetest checks it where a Store has it.
type DirLister interface {
	// ListDir yields the keys under prefix, which is "" or ends in "/",
	// that hold no "/" after it, in lexical order.
	ListDir(ctx context.Context, prefix string) iter.Seq2[string, error]
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
