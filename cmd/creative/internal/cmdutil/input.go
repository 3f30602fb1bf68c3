package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/internal/outdir"
)

// stdinName is the jobs file that is standard input.
const stdinName = "-"

// readInput reads the whole input file at path, at most limit bytes,
// through the inputs' gate (outdir.OpenInput): a FIFO, a device or a
// socket is refused at once.
func ReadInput(path string, limit int64) ([]byte, error) {
	f, err := outdir.OpenInput(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, err
}

// OpenJobs is the jobs file at path as batch reads it, once for its check
// and again for the run: opened each time through the inputs' gate, so
// that a FIFO, a device or a socket is refused before anything waits on
// it. Standard input ("-") is read once, as the stream it is, into a
// temporary file that done removes; a signal ends the process while it
// waits for input (nothing has been sent).
func OpenJobs(stdin io.Reader, path string) (src batch.Source, done func(), err error) {
	if path != stdinName {
		return batch.JSONL(func() (io.ReadCloser, error) { return outdir.OpenInput(path) }), func() {}, nil
	}
	if stdin == nil {
		return nil, nil, Usagef("batch: no standard input to read the jobs from")
	}
	f, err := os.CreateTemp("", "creative-jobs-*.jsonl")
	if err != nil {
		return nil, nil, fmt.Errorf("batch: keeping the jobs from standard input: %w", err)
	}
	done = func() { f.Close(); os.Remove(f.Name()) }
	if _, err := io.Copy(f, stdin); err != nil {
		done()
		return nil, nil, fmt.Errorf("batch: reading the jobs from standard input: %w", err)
	}
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		done()
		return nil, nil, fmt.Errorf("batch: keeping the jobs from standard input: %w", err)
	}
	name := f.Name()
	return batch.JSONL(func() (io.ReadCloser, error) { return outdir.OpenInput(name) }), done, nil
}
