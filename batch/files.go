package batch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/opcall"
)

// files opens the file fields of jobs: paths relative to the base folder,
// inside it unless outside is allowed.
type files struct {
	fsys    fs.FS
	base    string // the folder of the jobs file, when fsys is its os.Root
	outside bool   // paths may leave base (only with base)
}

// check cleans a file field's path and refuses one that leaves the folder.
func (f *files) check(p string) (string, error) {
	if p == "" {
		return "", errors.New("must name a file")
	}
	if f.outside && f.base != "" {
		if !filepath.IsAbs(p) {
			p = filepath.Join(f.base, p)
		}
		return p, nil
	}
	clean := path.Clean(filepath.ToSlash(p))
	if filepath.IsAbs(p) || !fs.ValidPath(clean) {
		return "", fmt.Errorf("%s is outside the jobs file's folder (files are read from inside it only)", p)
	}
	return clean, nil
}

// stat describes the file at a checked path, without opening it.
func (f *files) stat(p string) (fs.FileInfo, error) {
	if f.outside && f.base != "" {
		return os.Stat(p)
	}
	st, err := fs.Stat(f.fsys, p)
	if err != nil {
		return nil, f.leaves(p, err)
	}
	return st, nil
}

// errNotRegular refuses a file field that names no regular file.
var errNotRegular = errors.New("is not a regular file")

// openFile opens a checked path, once it is seen to be a regular file:
// opening a named pipe (a FIFO) for reading waits for a writer, which may
// never come.
func (f *files) openFile(p string) (fs.File, error) {
	st, err := f.stat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %w", p, errNotRegular)
	}
	if f.outside && f.base != "" {
		return os.Open(p)
	}
	file, err := f.fsys.Open(p)
	if err != nil {
		return nil, f.leaves(p, err)
	}
	return file, nil
}

// leaves names a failure to reach p that a symbolic link leaving the
// jobs file's folder caused; any other it returns as it is.
func (f *files) leaves(p string, err error) error {
	if f.base != "" && !errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(filepath.Join(f.base, p)); serr == nil {
			return fmt.Errorf("%s leads outside the jobs file's folder (through a symbolic link)", p)
		}
	}
	return err
}

// request makes the task's request, its files opened as uploads;
// closeFiles closes them.
func (f *files) request(t *task) (req opcall.Request, closeFiles func(), err error) {
	fields := maps.Clone(t.vals)
	var opened []io.Closer
	closeFiles = func() {
		for _, c := range opened {
			c.Close()
		}
	}
	for field, p := range t.paths {
		file, err := f.openFile(p)
		if err != nil {
			closeFiles()
			return nil, nil, &LineError{Line: t.job.Line, Field: field, Err: cannotRead(err)}
		}
		opened = append(opened, file)
		fields[field] = creative.FileFromReader(path.Base(filepath.ToSlash(p)), uploadReader(file))
	}
	if req, err = opcall.Build(t.op, fields); err != nil {
		closeFiles()
		return nil, nil, err
	}
	return req, closeFiles, nil
}

// uploadReader is what an upload reads of an opened file: a file on disk
// as it is (the SDK checks it did not change between attempts), another
// file that can seek and read at offsets as such a reader without its
// Stat (whose FileInfo the SDK cannot compare), anything else as a stream
// read once.
func uploadReader(f fs.File) io.Reader {
	if osf, ok := f.(*os.File); ok {
		return osf
	}
	type readerAtSeeker interface {
		io.ReaderAt
		io.ReadSeeker
	}
	if rs, ok := f.(readerAtSeeker); ok {
		return struct{ readerAtSeeker }{rs}
	}
	return struct{ io.Reader }{f}
}

// cannotRead words a failure to open a file field.
func cannotRead(err error) error {
	if errors.Is(err, errNotRegular) {
		return err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("cannot be read: %s: %v", pe.Path, pe.Err)
	}
	return fmt.Errorf("cannot be read: %w", err)
}

// A hashCache remembers the content hashes of the files met lately, by
// path, size and modification time, so that a file named by many jobs is
// read once per pass while it does not change.
type hashCache struct {
	mu    sync.Mutex
	max   int
	order []string
	m     map[string]string // path + "\x00" + size + mtime -> hash
}

func newHashCache(n int) *hashCache { return &hashCache{max: n, m: map[string]string{}} }

func (h *hashCache) hash(f *files, p string) (string, error) {
	file, err := f.openFile(p)
	if err != nil {
		return "", cannotRead(err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return "", cannotRead(err)
	}
	k := p + "\x00" + strconv.FormatInt(st.Size(), 10) + "\x00" + st.ModTime().String()
	h.mu.Lock()
	sum, ok := h.m[k]
	h.mu.Unlock()
	if ok {
		return sum, nil
	}
	d := sha256.New()
	if _, err := io.Copy(d, file); err != nil {
		return "", cannotRead(err)
	}
	sum = hex.EncodeToString(d.Sum(nil))
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.order) >= h.max {
		delete(h.m, h.order[0])
		h.order = h.order[1:]
	}
	h.order = append(h.order, k)
	h.m[k] = sum
	return sum, nil
}
