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

func TestEverySessionEndsWhenIdleInATransactionOrSilent(t *testing.T) {
	l, err := Open(t.Context(), pgtest.Database(t))
	require.NoError(t, err)
	defer l.Close()
	var idleInTx, idle, count, app string
	require.NoError(t, l.DB().QueryRowContext(t.Context(), `SELECT current_setting('idle_in_transaction_session_timeout'),
		current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_count'), current_setting('application_name')`).
		Scan(&idleInTx, &idle, &count, &app))
	require.Equal(t, []string{"10s", "45", "3", "creative batch"}, []string{idleInTx, idle, count, app},
		"idle in a transaction, keepalives idle and count (the default lease of 90 s), the application's name")
}
