//go:build unix

package pgledger

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

// A URL's own max_parallel_workers_per_gather is kept, given as a
// parameter of its own or in options (-c name=value, as libpq takes it).
func TestAttackURLKeepsItsParallelWorkers(t *testing.T) {
	base := pgtest.Shared(t).Database(t)
	for _, q := range []string{
		"max_parallel_workers_per_gather=3",
		"MAX_PARALLEL_WORKERS_PER_GATHER=3",
		"options=" + strings.ReplaceAll(url.QueryEscape("-c max_parallel_workers_per_gather=3"), "+", "%20"),
		"options=" + strings.ReplaceAll(url.QueryEscape("--max-parallel-workers-per-gather=3"), "+", "%20"),
		"options=" + strings.ReplaceAll(url.QueryEscape("-c statement_timeout=0 -cmax_parallel_workers_per_gather=3"), "+", "%20"),
	} {
		u, err := url.Parse(base)
		require.NoError(t, err)
		u.RawQuery = q
		l, err := Open(t.Context(), u.String())
		require.NoError(t, err, q)
		var got string
		require.NoError(t, l.DB().QueryRowContext(t.Context(), "SHOW max_parallel_workers_per_gather").Scan(&got))
		_ = l.Close()
		require.Equal(t, "3", got, "the URL's value was not kept: %s", q)
	}
	l, err := Open(t.Context(), base)
	require.NoError(t, err)
	defer l.Close()
	var got string
	require.NoError(t, l.DB().QueryRowContext(t.Context(), "SHOW max_parallel_workers_per_gather").Scan(&got))
	require.Equal(t, "0", got)
}
