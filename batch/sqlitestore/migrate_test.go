package sqlitestore

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/creativetest"
)

// schemaV1 is the schema of version 1, as ledgers of that version hold
// it: every key a row of objects(key, data), read by views.
const schemaV1 = `
CREATE TABLE objects (
	key  TEXT PRIMARY KEY,
	data BLOB
);

-- Every record of every attempt at a job: its claim, its answer (links and
-- text, before any download) and its end.
CREATE VIEW records AS
SELECT key,
	json_extract(j, '$.job') AS job,
	json_extract(j, '$.attempt') AS attempt,
	CASE WHEN key GLOB '*.end.json' THEN 'end' WHEN key GLOB '*.answered.json' THEN 'answered' ELSE 'claim' END AS stage,
	json_extract(j, '$.line') AS line,
	json_extract(j, '$.id') AS id,
	json_extract(j, '$.op') AS op,
	json_extract(j, '$.kind') AS kind,
	json_extract(j, '$.state') AS state,
	json_extract(j, '$.lost') AS lost,
	json_extract(j, '$.requests') AS requests,
	json_extract(j, '$.requestId') AS request_id,
	json_extract(j, '$.error') AS error,
	json_extract(j, '$.worker') AS worker,
	json_extract(j, '$.run') AS run,
	json_extract(j, '$.time') AS time,
	j AS record
FROM (SELECT key, CAST(data AS TEXT) AS j FROM objects
	WHERE key GLOB 'ledger/[0-9a-f][0-9a-f][0-9a-f]/*' AND json_valid(CAST(data AS TEXT)));

-- Each job as its last record says: where it stands.
CREATE VIEW jobs AS
SELECT job, attempt, line, id, op, kind, state, lost, requests, request_id, error, worker, run, time, record
FROM (SELECT *, row_number() OVER (PARTITION BY job ORDER BY attempt DESC,
		CASE stage WHEN 'end' THEN 2 WHEN 'answered' THEN 1 ELSE 0 END DESC) AS n
	FROM records)
WHERE n = 1;

-- The heartbeats of the runs under way, or killed before they ended.
CREATE VIEW runs AS
SELECT json_extract(j, '$.run') AS run,
	json_extract(j, '$.worker') AS worker,
	json_extract(j, '$.time') AS time,
	json_extract(j, '$.pid') AS pid
FROM (SELECT CAST(data AS TEXT) AS j FROM objects WHERE key GLOB 'ledger/runs/*.json' AND json_valid(CAST(data AS TEXT)));
`

// v1Ledger is a folder holding a ledger of schema version 1, as that
// version left it: the rows a run wrote (two images and a piece of music
// done, a logo failed, a speech unknown, another speech whose end is
// missing, so claimed by a run that is gone), a heartbeat, and the outputs
// beside the database. It returns the folder, the jobs file, the server
// the run went to, and every key with its bytes (an output's, its file's).
func v1Ledger(t *testing.T, appID bool) (dir, jobs string, srv *creativetest.Server, want map[string]string) {
	t.Helper()
	srv = creativetest.Start(t)
	srv.Fail("image/generate-logo", creativetest.Fault{Status: 400, Message: "no logos today"})
	srv.Fail("audio/text-to-speech", creativetest.Fault{Status: 500, Times: 2})
	jobs = filepath.Join(t.TempDir(), "jobs.jsonl")
	require.NoError(t, os.WriteFile(jobs, []byte(strings.Join([]string{
		`{"op":"image/text-to-image","prompt":"a"}`,
		`{"op":"image/text-to-image","prompt":"b"}`,
		`{"op":"image/generate-logo","prompt":"c"}`,
		`{"op":"audio/text-to-speech","prompt":"d","voiceId":"female 1"}`,
		`{"op":"audio/text-to-speech","prompt":"e","voiceId":"female 1"}`,
		`{"op":"audio/text-to-music","prompt":"f"}`,
	}, "\n")), 0o644))
	src := t.TempDir()
	s, err := Open(src)
	require.NoError(t, err)
	_, err = runIn(t, srv.Client(), s, jobs, batch.Options{Concurrency: 1})
	require.NoError(t, err)
	type row struct {
		key  string
		data []byte
	}
	var rows []row
	for _, r := range query(t, s.db, `SELECT key, quote(data) FROM objects ORDER BY key`) {
		rows = append(rows, row{r[0], []byte(r[1])})
	}
	require.NoError(t, s.Close())

	dir = t.TempDir()
	db := rawDB(t, filepath.Join(dir, DBFile))
	setup := schemaV1 + "PRAGMA user_version = 1;"
	if appID {
		setup += fmt.Sprintf("PRAGMA application_id = %d;", applicationID)
	}
	_, err = db.Exec(setup)
	require.NoError(t, err)
	want = map[string]string{}
	droppedEnd := false
	for _, r := range rows {
		if strings.HasSuffix(r.key, ".unknown.end.json") && !droppedEnd {
			droppedEnd = true // its job is left claimed
			continue
		}
		// quote() gave the bytes as an SQL literal: X'...' or NULL.
		_, err := db.Exec(`INSERT INTO objects (key, data) VALUES (?, `+string(r.data)+`)`, r.key)
		require.NoError(t, err)
		var data sql.NullString
		require.NoError(t, db.QueryRow(`SELECT CAST(data AS TEXT) FROM objects WHERE key = ?`, r.key).Scan(&data))
		if data.Valid {
			want[r.key] = data.String
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(r.key)))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, filepath.FromSlash(r.key))), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.FromSlash(r.key)), b, 0o644))
		want[r.key] = string(b)
	}
	require.True(t, droppedEnd, "a speech's outcome was unknown")
	beat := `{"run":"0123456789abcdef0123456789abcdef","worker":"w1","time":"2020-01-02T03:04:05Z","pid":4194304}`
	_, err = db.Exec(`INSERT INTO objects (key, data) VALUES ('ledger/runs/0123456789abcdef0123456789abcdef.json', ?)`, []byte(beat))
	require.NoError(t, err)
	want["ledger/runs/0123456789abcdef0123456789abcdef.json"] = beat
	_, err = db.Exec(`INSERT INTO objects (key, data) VALUES ('ledger/budget/empty', x'')`)
	require.NoError(t, err)
	want["ledger/budget/empty"] = "" // an object of no bytes, not an output
	require.NoError(t, db.Close())
	return dir, jobs, srv, want
}

// views reads the views people and scripts query, ordered.
func views(t *testing.T, db *sql.DB) map[string][][]string {
	t.Helper()
	return map[string][][]string{
		"jobs":    query(t, db, `SELECT * FROM jobs ORDER BY job`),
		"records": query(t, db, `SELECT * FROM records ORDER BY key`),
		"runs":    query(t, db, `SELECT * FROM runs ORDER BY run`),
		"states":  query(t, db, `SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state`),
	}
}

// A ledger of version 1 is brought to version 2 when opened: every key
// and its bytes are as they were, the views answer the same rows, and a
// rerun sends again only what the ledger's rules send again (the failed
// logo), nothing done, unknown or claimed.
func TestALedgerOfVersion1IsBroughtToVersion2(t *testing.T) {
	dir, jobs, srv, want := v1Ledger(t, true)
	db := rawDB(t, filepath.Join(dir, DBFile))
	before := views(t, db)
	require.NoError(t, db.Close())
	assert.Equal(t, [][]string{{"claimed", "1"}, {"done", "3"}, {"failed", "1"}, {"unknown", "1"}}, before["states"])

	s := openT(t, dir)
	assert.EqualValues(t, 2, pragma(t, s.db, "user_version"))
	ctx := t.Context()
	for key, data := range want {
		got, err := s.Get(ctx, key)
		require.NoError(t, err, key)
		assert.Equal(t, data, string(got), key)
	}
	var keys []string
	for k, err := range s.List(ctx, "") {
		require.NoError(t, err)
		keys = append(keys, k)
	}
	wantKeys := make([]string, 0, len(want))
	for k := range want {
		wantKeys = append(wantKeys, k)
	}
	slices.Sort(wantKeys)
	assert.Equal(t, wantKeys, keys)
	assert.Equal(t, before, views(t, s.db), "the views answer as they did")
	assert.Equal(t, "objects", strings.Join(names(t, s.db, "table", "objects%"), " "), "the table of version 1 is gone")

	st, err := batch.ReadStatus(ctx, s, nil)
	require.NoError(t, err)
	assert.Equal(t, map[batch.State]int{batch.Done: 3, batch.Failed: 1, batch.Unknown: 1, batch.Claimed: 1}, st.States)

	counts := map[string]int{}
	ops := []string{"image/text-to-image", "image/generate-logo", "audio/text-to-speech", "audio/text-to-music"}
	for _, op := range ops {
		counts[op] = srv.Count(op)
	}
	sum, err := runIn(t, srv.Client(), s, jobs, batch.Options{Concurrency: 2})
	require.NoError(t, err)
	for _, op := range ops {
		sent := 0
		if op == "image/generate-logo" {
			sent = 1 // failed: a rerun sends it again
		}
		assert.Equal(t, counts[op]+sent, srv.Count(op), "%s sent again", op)
	}
	assert.Equal(t, 3, sum.DoneBefore, "%+v", sum)
	assert.Equal(t, 1, sum.Done, "%+v", sum)
}

// names lists the names of the schema's objects of a type.
func names(t *testing.T, db *sql.DB, typ, like string) []string {
	t.Helper()
	var out []string
	for _, r := range query(t, db, fmt.Sprintf(`SELECT name FROM sqlite_schema WHERE type = '%s' AND name LIKE '%s' ORDER BY name`, typ, like)) {
		out = append(out, r[0])
	}
	return out
}

// The ledger folder of an earlier version is imported straight into
// version 2: its records are rows with their columns, and its jobs stand
// where their last records say.
func TestTheLedgerFolderOfAnEarlierVersionBecomesVersion2(t *testing.T) {
	dir, _ := oldFolder(t)
	s := openT(t, dir)
	assert.EqualValues(t, 2, pragma(t, s.db, "user_version"))
	assert.Equal(t, [][]string{{"3fa00000000000000000000000000001", "1", "done"}}, query(t, s.db, `SELECT job, attempt, state FROM jobs`))
	assert.Equal(t, [][]string{{"end", "done"}, {"claim", "claimed"}}, query(t, s.db, `SELECT stage, state FROM records ORDER BY key`))
	assert.Equal(t, [][]string{{"0123456789abcdef0123456789abcdef"}}, query(t, s.db, `SELECT run FROM runs`))
}

// A process of version 1 that was running when its ledger was brought to
// version 2 writes on with its own statements: its records are kept, and
// read by the Store, without columns.
func TestAWriterOfVersion1WritesOnAfterTheUpgrade(t *testing.T) {
	dir, _, _, _ := v1Ledger(t, true)
	old := rawDB(t, filepath.Join(dir, DBFile))
	_, err := old.Exec(`PRAGMA journal_mode = WAL`)
	require.NoError(t, err)
	s := openT(t, dir)
	const key = "ledger/abc/abc00000000000000000000000000009.0001.json"
	_, err = old.Exec(`INSERT INTO objects (key, data) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`, key, []byte(`{"state":"claimed"}`))
	require.NoError(t, err)
	got, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	assert.Equal(t, `{"state":"claimed"}`, string(got))
	assert.Empty(t, query(t, s.db, `SELECT * FROM jobs WHERE job = 'abc00000000000000000000000000009'`), "no columns, so not in the views")
}
