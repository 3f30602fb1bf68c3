package sqliteledger

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/sqlledger"
)

// testdata/v2.db is a ledger of schema version 2, the object ledger, as
// that version wrote it: a run of six jobs under a budget (two images and
// a piece of music done, a logo failed, two speeches whose outcome was
// unknown, one of them with its end record removed, so claimed by a run
// that is gone).

// rawDB opens the database at file without the ledger's pragmas.
func rawDB(t *testing.T, file string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+file)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// fixture copies testdata/v2.db into a new folder as its ledger, or, with
// v1, brings its rows into a ledger of version 1 (one table of keys and
// bytes), and returns the folder.
func fixture(t *testing.T, v1 bool) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "v2.db"))
	require.NoError(t, err)
	dir := t.TempDir()
	if !v1 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, File), b, 0o644))
		return dir
	}
	src := filepath.Join(t.TempDir(), "v2.db")
	require.NoError(t, os.WriteFile(src, b, 0o644))
	db := rawDB(t, filepath.Join(dir, File))
	_, err = db.Exec(`CREATE TABLE objects (key TEXT PRIMARY KEY, data BLOB);
		CREATE VIEW jobs AS SELECT key FROM objects; PRAGMA user_version = 1;
		ATTACH DATABASE '` + src + `' AS old;
		INSERT INTO objects (key, data) SELECT key, data FROM old.objects;
		DETACH DATABASE old;`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	return dir
}

func TestAnEarlierLedgerIsBroughtToTheSchema(t *testing.T) {
	for _, v1 := range []bool{false, true} {
		t.Run(map[bool]string{false: "version 2", true: "version 1"}[v1], func(t *testing.T) {
			dir := fixture(t, v1)
			l, err := Open(dir)
			require.NoError(t, err)
			defer l.Close()
			var v int
			require.NoError(t, l.DB().QueryRow(`PRAGMA user_version`).Scan(&v))
			assert.Equal(t, sqlledger.Version, v)
			st, err := l.Status(t.Context())
			require.NoError(t, err)
			assert.Equal(t, 6, st.Jobs)
			assert.Equal(t, map[batch.State]int{batch.Done: 3, batch.Failed: 1, batch.Unknown: 1, batch.Claimed: 1}, st.States)
			assert.Zero(t, st.InFlight, "the claim's run is gone")
			assert.Equal(t, int64(6), st.Budget.Calls, "every call took its share")
			assert.InDelta(t, 2*0.04+0.1+2*0.015+0.2, st.Budget.Spent, 1e-9)
			var maybe []batch.State
			for e, err := range l.Jobs(t.Context(), true) {
				require.NoError(t, err)
				maybe = append(maybe, e.State)
				// Neither is sent again without --resend-unknown.
				tok := "0123456789abcdef0123456789abcdef"
				s, err := l.Begin(t.Context(), batch.RunInfo{Token: tok, Worker: "t", Lease: 60e9})
				require.NoError(t, err)
				res, err := l.Claim(t.Context(), &batch.Claim{Entry: batch.Entry{Record: batch.Record{Job: e.Job, Attempt: e.Attempt + 1, Run: tok, Op: e.Op}, Kind: batch.KindCall, Stem: e.Stem}})
				require.NoError(t, err)
				assert.False(t, res.Claimed)
				require.NoError(t, s.End(t.Context()))
			}
			assert.ElementsMatch(t, []batch.State{batch.Unknown, batch.Claimed}, maybe)
			var done []string
			for e, err := range l.Jobs(t.Context(), false) {
				require.NoError(t, err)
				if e.State == batch.Done {
					require.Len(t, e.Files, 1)
					done = append(done, e.Files[0])
					assert.NotEmpty(t, e.Fields["prompt"])
				}
			}
			assert.Contains(t, done, "bee-text-to-image.png")
		})
	}
}

// The upgrade is one transaction: a process killed in it, before its
// commit, leaves the ledger of version 2 whole, and the next Open brings it
// to the schema.
func TestAnUpgradeKilledMidwayLeavesTheLedgerAsItWas(t *testing.T) {
	if dir := os.Getenv("SQLITELEDGER_KILL_IN_UPGRADE"); dir != "" {
		upgrading = func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
		_, _ = Open(dir)
		os.Exit(3) // not reached
	}
	dir := fixture(t, false)
	var before int
	db := rawDB(t, filepath.Join(dir, File))
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM objects`).Scan(&before))
	require.NoError(t, db.Close())
	cmd := exec.Command(os.Args[0], "-test.run=^TestAnUpgradeKilledMidwayLeavesTheLedgerAsItWas$")
	cmd.Env = append(os.Environ(), "SQLITELEDGER_KILL_IN_UPGRADE="+dir)
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, "signal: killed", ee.Error())

	db = rawDB(t, filepath.Join(dir, File))
	var v, rows int
	require.NoError(t, db.QueryRow(`PRAGMA user_version`).Scan(&v))
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM objects`).Scan(&rows))
	assert.Equal(t, 2, v)
	assert.Equal(t, before, rows, "the object ledger as it was")
	require.NoError(t, db.Close())

	l, err := Open(dir)
	require.NoError(t, err)
	defer l.Close()
	st, err := l.Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 6, st.Jobs)
}
