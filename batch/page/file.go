package page

import (
	"fmt"
	"io"
	"iter"
	"path/filepath"

	"github.com/creativegen/creative-go/internal/outdir"
)

// WriteFile writes the page to the file at path, atomically: the page goes
// to a temporary file in the same folder, which is flushed to disk and then
// renamed over path, so that a browser (or a crash) sees the old page or
// the new one whole, never half of one. A runner calls it again as jobs
// finish to keep the page current. It goes through the folder's one gate
// (package internal/outdir): a symbolic link, a FIFO, a device or a folder
// at path is refused and left as it is.
func WriteFile(path, title string, entries iter.Seq[Entry]) error {
	d, err := outdir.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("page: %w", err)
	}
	defer d.Close()
	if err := d.WriteFile(filepath.Base(path), func(w io.Writer) error { return Write(w, title, entries) }); err != nil {
		return fmt.Errorf("page: %w", err)
	}
	return nil
}
