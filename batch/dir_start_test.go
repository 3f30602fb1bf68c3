package batch_test

import (
	"sync"
	"testing"

	"github.com/creativegen/creative-go/batch"
)

// TestDirRunsStartingAtOnceLeaveEachOthersTemporaryFiles: runs started at
// once on a new folder (a fleet's workers) never take one another's folder
// of temporary files for a dead run's.
func TestDirRunsStartingAtOnceLeaveEachOthersTemporaryFiles(t *testing.T) {
	for range 20 {
		dir := t.TempDir()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				d, err := batch.NewDir(dir)
				if err != nil {
					t.Errorf("NewDir: %v", err)
					return
				}
				defer d.Close()
				w, err := d.NewWriter(t.Context(), "out.bin", nil)
				if err != nil {
					t.Errorf("NewWriter: %v", err)
					return
				}
				if _, err := w.Write([]byte("x")); err != nil {
					t.Errorf("Write: %v", err)
				}
				if err := w.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
		}
		wg.Wait()
	}
}
