package batchcmd

import (
	"context"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/pgledger"
)

// The PostgreSQL driver of --ledger postgres://: pgx, which a command that
// uses no such ledger only links.
func init() {
	openPostgres = func(ctx context.Context, url string) (batch.Ledger, error) { return pgledger.Open(ctx, url) }
}
