package batchcmd

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/internal/outdir"
)

// resultLog appends the jobs that end to results.jsonl, one line each, for
// people to read: the ledger is the record runs read, so the log is never
// read back, and a failure to write it is reported once and loses nothing.
type resultLog struct {
	path string
	mu   sync.Mutex
	f    io.WriteCloser // a file under a folder, an object being streamed to a bucket
	err  error          // the first failed write
}

// openResultLog opens results.jsonl in the folder dir, through the
// folder's gate: a link, a FIFO or a device there is refused, and so is
// one at the results page's name, which the run writes as it goes: both
// before anything is sent.
func openResultLog(dir string) (*resultLog, error) {
	d, err := outdir.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if _, err := d.Check(batch.IndexFile); err != nil {
		return nil, err
	}
	f, err := d.OpenFile(ResultsFile, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	path := d.Join(ResultsFile)
	// A crash in the middle of a write leaves a line without its end: end
	// it, so the next record starts on a line of its own.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			_, _ = f.Write([]byte("\n"))
		}
	}
	return &resultLog{path: path, f: f}, nil
}

func (r *resultLog) write(rec *batch.Record) {
	logged := *rec
	logged.Error = inFlags(logged.Error)
	b, err := json.Marshal(&logged)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	if _, err := r.f.Write(append(b, '\n')); err != nil {
		r.err = err
	}
}

func (r *resultLog) close() error { return r.f.Close() }

// existsDir reports whether path is a folder.
func existsDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// A pipeGuard is stderr as a batch writes to it: once a write fails with a
// broken pipe (a reader such as head went away), it writes nothing more,
// and the run goes on: its calls in flight may be paid for.
type pipeGuard struct {
	w      io.Writer
	mu     sync.Mutex
	broken bool
}

func (g *pipeGuard) Write(b []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.broken {
		return len(b), nil
	}
	n, err := g.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		g.broken = true
		return len(b), nil
	}
	return n, err
}
