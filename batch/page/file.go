package page

import (
	"fmt"
	"io"
	"iter"

	"github.com/creativegen/creative-go/internal/atomicfile"
)

// WriteFile writes the page to the file at path, atomically: the page goes
// to a temporary file in the same folder, which is flushed to disk and then
// renamed over path, so that a browser (or a crash) sees the old page or
// the new one whole, never half of one. A runner calls it again as jobs
// finish to keep the page current.
func WriteFile(path, title string, entries iter.Seq[Entry]) error {
	_, err := atomicfile.Write(path, func(w io.Writer) (int64, error) {
		return 0, Write(w, title, entries)
	})
	if err != nil {
		return fmt.Errorf("page: %w", err)
	}
	return nil
}
