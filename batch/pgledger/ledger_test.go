//go:build unix

package pgledger

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

func open(t *testing.T, url string) batch.Ledger {
	t.Helper()
	l, err := Open(t.Context(), url)
	require.NoError(t, err)
	return l
}

func TestLedger(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) batch.Ledger { return open(t, pgtest.Database(t)) })
}
