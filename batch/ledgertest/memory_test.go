package ledgertest_test

import (
	"testing"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
)

func TestMemory(t *testing.T) {
	ledgertest.Run(t, func(*testing.T) batch.Ledger { return ledgertest.NewMemory() })
}

func TestFiles(t *testing.T) {
	ledgertest.RunStore(t, func(*testing.T) (batch.Store, func(string) []byte) {
		f := ledgertest.NewFiles()
		return f, f.Bytes
	})
}
