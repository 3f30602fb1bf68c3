package sqliteledger

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
)

func TestLedger(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) batch.Ledger {
		l, err := Open(t.TempDir())
		require.NoError(t, err)
		return l
	})
}
