package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A folder --out keeps its jobs in its own ledger.db: a run that names
// another ledger with --ledger would find none of them there and pay for
// every one again, writing over the folder's outputs. It is refused before
// anything is sent, naming --ledger; the folder's own ledger named as
// --ledger is the same one, and taken.
func TestAFolderWithItsOwnLedgerIsRefusedAnotherLedger(t *testing.T) {
	srv, env := fakeEnv(t)
	jobs := writeJobs(t, 3)
	out := t.TempDir()
	code, _, stderr := runCLI(t, env, "batch", jobs, "--out", out)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, 3, srv.Count("image/text-to-image"))
	before := listFiles(t, out)

	other := t.TempDir()
	for _, args := range [][]string{
		{"batch", jobs, "--out", out, "--ledger", other},
		{"batch", "status", "--out", out, "--ledger", other},
	} {
		code, _, stderr = runCLI(t, env, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, "--ledger", args)
		assert.Contains(t, stderr, filepath.Join(out, "ledger.db"), args)
	}
	// A --ledger naming the folder's ledger.db rather than its folder is
	// told so.
	code, _, stderr = runCLI(t, env, "batch", jobs, "--out", out, "--ledger", filepath.Join(out, "ledger.db"))
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "--ledger names a folder")
	env["CREATIVE_LEDGER"] = other
	code, _, stderr = runCLI(t, env, "batch", jobs, "--out", out)
	assert.Equal(t, exitUsage, code, stderr)
	assert.Equal(t, 3, srv.Count("image/text-to-image"), "nothing is sent again")
	assert.Equal(t, before, listFiles(t, out), "the folder is left as it was")
	entries, err := os.ReadDir(other)
	require.NoError(t, err)
	assert.Empty(t, entries, "no second ledger is begun")

	// The folder itself, named as --ledger, is its own ledger.
	env["CREATIVE_LEDGER"] = out
	code, _, stderr = runCLI(t, env, "batch", jobs, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 3, srv.Count("image/text-to-image"))

	// The other way: a folder whose jobs another ledger keeps is refused
	// its own, and the refusal names --ledger.
	delete(env, "CREATIVE_LEDGER")
	out2 := t.TempDir()
	code, _, stderr = runCLI(t, env, "batch", jobs, "--out", out2, "--ledger", other)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runCLI(t, env, "batch", jobs, "--out", out2)
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "--ledger")
	assert.Equal(t, 6, srv.Count("image/text-to-image"))
}
