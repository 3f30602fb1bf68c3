//go:build unix

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
)

func TestABatchKeepsItsLedgerInPostgreSQLWhereEveryRunFindsIt(t *testing.T) {
	srv, env := fakeEnv(t)
	url := pgtest.Start(t).Database(t)
	dir := t.TempDir()
	var lines []string
	for i := range 5 {
		lines = append(lines, fmt.Sprintf(`{"op":"image/text-to-image","prompt":"fox %d"}`, i))
	}
	jobs := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(strings.Join(lines, "\n")), 0o644))
	out := filepath.Join(dir, "out")

	code, _, stderr := runCLI(t, env, "batch", jobs, "--out", out, "--ledger", url)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "batch: 5 done")
	_, err := os.Stat(filepath.Join(out, "ledger.db"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the ledger is in PostgreSQL, not in --out")
	require.Len(t, srv.Requests(), 5)

	// Another run, with the ledger from the environment, finds every
	// job done and sends nothing.
	env["CREATIVE_LEDGER"] = url
	code, _, stderr = runCLI(t, env, "batch", jobs, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Len(t, srv.Requests(), 5, "a job done in the shared ledger is not sent again")

	code, stdout, stderr := runCLI(t, env, "batch", "status", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^done\s+5$`, stdout)
}

func TestALedgerURLThatCannotBeOpenedIsAUsageErrorWithoutItsPassword(t *testing.T) {
	_, env := fakeEnv(t)
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(`{"op":"image/text-to-image","prompt":"fox"}`), 0o644))
	code, _, stderr := runCLI(t, env, "batch", jobs, "--out", filepath.Join(dir, "out"),
		"--ledger", "postgres://u:hunter2@"+pgtest.Start(t).Addr()+"/db?sslmode=disable&connect_timeout=5")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "--ledger")
	assert.NotContains(t, stderr, "hunter2")
}
