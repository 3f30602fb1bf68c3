package batch_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
)

func TestFolder(t *testing.T) {
	ledgertest.RunStore(t, func(t *testing.T) (batch.Store, func(string) []byte) {
		dir := t.TempDir()
		f, err := batch.OpenFolder(dir)
		require.NoError(t, err)
		return f, func(key string) []byte {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(key)))
			if err != nil {
				return nil
			}
			return b
		}
	})
}
