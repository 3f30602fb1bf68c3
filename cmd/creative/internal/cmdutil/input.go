package cmdutil

import (
	"bytes"
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
// temporary file that done closes; a signal ends the process while it
// waits for input (nothing has been sent). The temporary file is removed
// as soon as it is made where the system lets an open file be removed
// (Unix), so that a process ended by a signal or killed leaves none; and
// a line longer than batch takes ends the reading there, before a stream
// with no line ends (cat /dev/zero) fills the disk.
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
	removed := os.Remove(f.Name()) == nil
	done = func() {
		f.Close()
		if !removed {
			os.Remove(f.Name())
		}
	}
	n, err := io.Copy(&lineBound{w: f, max: maxJobLine}, stdin)
	if err != nil {
		done()
		return nil, nil, fmt.Errorf("batch: reading the jobs from standard input: %w", err)
	}
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		done()
		return nil, nil, fmt.Errorf("batch: keeping the jobs from standard input: %w", err)
	}
	return batch.JSONL(func() (io.ReadCloser, error) { return io.NopCloser(io.NewSectionReader(f, 0, n)), nil }), done, nil
}

// maxJobLine is the longest line of a jobs file that batch reads (4 MiB).
const maxJobLine = 4 << 20

// lineBound writes to w what has no line longer than max bytes, and fails
// at the first that is.
type lineBound struct {
	w    io.Writer
	max  int
	line int // lines ended so far
	cur  int // bytes of the line under way
}

// Write writes p, failing when a line grows past max.
func (l *lineBound) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			l.cur += len(rest)
			break
		}
		l.cur += i
		if l.cur > l.max {
			break
		}
		l.line++
		l.cur = 0
		rest = rest[i+1:]
	}
	if l.cur > l.max {
		return 0, Usagef("line %d: longer than %d MiB", l.line+1, l.max>>20) // a bad line: exit status 2
	}
	return l.w.Write(p)
}
