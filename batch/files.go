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
	base    string // the folder of the jobs file, when fsys reads it or outside is set
	outside bool   // paths may leave base: fsys is an osFS
	mu      sync.Mutex
	hashes  map[string]string // path, size and mtime -> hash of the files met lately
}

// An osFS reads the files at any path, for Options.AllowOutside.
type osFS struct{}

func (osFS) Open(p string) (fs.File, error)     { return os.Open(p) }
func (osFS) Stat(p string) (fs.FileInfo, error) { return os.Stat(p) }

// check cleans a file field's path and refuses one that leaves the folder.
func (f *files) check(p string) (string, error) {
	if p == "" {
		return "", errors.New("must name a file")
	}
	if f.outside {
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

// errNotRegular refuses a file field that names no regular file.
var errNotRegular = errors.New("is not a regular file")

// openFile opens a checked path, once it is seen to be a regular file:
// opening a named pipe (a FIFO) for reading waits for a writer, which may
// never come.
func (f *files) openFile(p string) (fs.File, error) {
	st, err := fs.Stat(f.fsys, p)
	if err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %w", p, errNotRegular)
	}
	var file fs.File
	if err == nil {
		file, err = f.fsys.Open(p)
	}
	if err != nil && f.base != "" && !f.outside && !errors.Is(err, fs.ErrNotExist) {
		// A failure to reach p that a symbolic link leaving the jobs
		// file's folder caused is named so.
		if _, serr := os.Stat(filepath.Join(f.base, p)); serr == nil {
			return nil, fmt.Errorf("%s leads outside the jobs file's folder (through a symbolic link)", p)
		}
	}
	return file, err
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
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return fmt.Errorf("cannot be read: %s: %v", pe.Path, pe.Err)
	}
	return fmt.Errorf("cannot be read: %w", err)
}

// hash returns the SHA-256 of the content of the file at a checked path.
// It remembers the hashes of the files met lately by path, size and
// modification time, so that a file named by many jobs is read once per
// pass while it does not change.
func (f *files) hash(p string) (string, error) {
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
	f.mu.Lock()
	sum, ok := f.hashes[k]
	f.mu.Unlock()
	if ok {
		return sum, nil
	}
	d := sha256.New()
	if _, err := io.Copy(d, file); err != nil {
		return "", cannotRead(err)
	}
	sum = hex.EncodeToString(d.Sum(nil))
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.hashes) >= 256 || f.hashes == nil {
		f.hashes = map[string]string{} // the files met lately come back first
	}
	f.hashes[k] = sum
	return sum, nil
}
