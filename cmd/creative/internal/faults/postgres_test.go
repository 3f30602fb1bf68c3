//go:build unix

package faults

import (
	"context"
	"testing"
	"time"

	"github.com/creativegen/creative-go/batch/pgledger"
	"github.com/creativegen/creative-go/batch/pgledger/pgproxy"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

// PostgreSQL: each schedule has a server of its own (pgtest), which its
// workers reach through a proxy (pgproxy) that drops, resets and stalls
// their connections and cuts one before or after its commit; the server
// is also crashed and restarted. Liveness is the engine's advisory locks
// and heartbeats by its clock, so a worker stopped past its lease may be
// taken for gone (not exact).
func init() {
	engines["postgres"] = engine{
		name: "postgres",
		ledger: func(t *testing.T, _ string) (string, []string, func(string, time.Duration)) {
			srv := pgtest.Start(t)
			p, err := pgproxy.New(srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			url, err := p.URL(srv.Database(t))
			if err != nil {
				t.Fatal(err)
			}
			return url, nil, func(fault string, d time.Duration) { strikePostgres(t, srv, p, fault, d) }
		},
		netFaults: []string{"connections dropped", "connections reset", "network stalled", "cut before a commit",
			"cut after a commit", "PostgreSQL restarted"},
		open: func(ctx context.Context, ledger string) (engineLedger, error) { return pgledger.Open(ctx, ledger) },
	}
}

// strikePostgres deals one of the engine's faults; d is how long a stall
// lasts, or the server stays down. The fault "" ends them: a cut armed
// and not dealt is taken back.
func strikePostgres(t *testing.T, srv *pgtest.Server, p *pgproxy.Proxy, fault string, d time.Duration) {
	switch fault {
	case "":
		p.CutCommit(0, 0)
	case "connections dropped":
		p.Drop()
	case "connections reset":
		p.Reset()
	case "network stalled":
		p.Stall()
		time.Sleep(d)
		p.Resume()
	case "cut before a commit":
		p.CutCommit(1+int(d%4), pgproxy.BeforeCommit)
	case "cut after a commit":
		p.CutCommit(1+int(d%4), pgproxy.AfterCommit)
	case "PostgreSQL restarted":
		srv.Crash()
		time.Sleep(d / 3)
		if err := srv.Restart(); err != nil {
			t.Error(err)
		}
	}
}
