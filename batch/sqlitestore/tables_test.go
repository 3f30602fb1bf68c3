package sqlitestore

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// plan is the query plan SQLite makes for q, a step a line.
func plan(t *testing.T, s *Store, q string) string {
	t.Helper()
	rows, err := s.db.Query(`EXPLAIN QUERY PLAN ` + q)
	require.NoError(t, err, q)
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &notUsed, &detail))
		steps = append(steps, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(steps, "\n")
}

// The questions people and the ledger ask of the jobs are answered from
// indexes: jobs by state, the jobs in one state, and a job's records and
// its last record (by their keys, as the triggers find them), none by a
// scan of the records or a sort of them.
func TestTheJobsAreReadThroughIndexes(t *testing.T) {
	s := openT(t, t.TempDir())
	const job = `key > 'ledger/3fa/3fa00000000000000000000000000001.' AND key < 'ledger/3fa/3fa00000000000000000000000000001/'`
	for _, c := range []struct{ query, want string }{
		{`SELECT state, count(*) FROM jobs GROUP BY state`, "SCAN objects USING COVERING INDEX jobs_by_state"},
		{`SELECT line, id, op, state FROM jobs WHERE state = 'unknown'`, "SEARCH objects USING INDEX jobs_by_state (state=?"},
		{`SELECT * FROM objects WHERE ` + job + ` AND last IS NOT NULL`, "SEARCH objects USING INDEX sqlite_autoindex_objects_1 (key>? AND key<?)"},
		{`SELECT * FROM records WHERE ` + job + ` ORDER BY key`, "SEARCH objects USING INDEX sqlite_autoindex_objects_1 (key>? AND key<?)"},
	} {
		p := plan(t, s, c.query)
		assert.Contains(t, p, c.want, c.query)
		assert.NotContains(t, p, "TEMP B-TREE", c.query)
		assert.NotRegexp(t, `(?m)^SCAN objects$`, p, c.query)
	}
}

// Each job's last record (by attempt, then stage, then the one written
// last) is the one marked so, whatever is created, replaced or deleted,
// in any order: checked against the same computed from the records, after
// each of a few hundred random writes.
func TestEachJobsLastRecordFollowsEveryWrite(t *testing.T) {
	s := openT(t, t.TempDir())
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(36, 2))
	jobs := []string{"3fa00000000000000000000000000001", "3fa00000000000000000000000000002", "abc00000000000000000000000000003"}
	stages := []string{"", ".answered", ".done.end", ".unknown.end", ".failed.end", ".end"}
	states := []string{"claimed", "answered", "done", "unknown", "failed"}
	var keys []string
	for i := range 400 {
		job := jobs[rng.IntN(len(jobs))]
		attempt := 1 + rng.IntN(3)
		key := fmt.Sprintf("ledger/%s/%s.%04d%s.json", job[:3], job, attempt, stages[rng.IntN(len(stages))])
		data := fmt.Sprintf(`{"job":%q,"attempt":%d,"state":%q}`, job, attempt, states[rng.IntN(len(states))])
		if rng.IntN(8) == 0 {
			data = fmt.Sprintf(`{"state":%q}`, states[rng.IntN(len(states))]) // no attempt
		}
		switch op := rng.IntN(10); {
		case op < 5:
			if err := s.Create(ctx, key, []byte(data)); err == nil {
				keys = append(keys, key)
			}
		case op < 7:
			require.NoError(t, s.Put(ctx, key, []byte(data)))
			keys = append(keys, key)
		case op < 8:
			require.NoError(t, s.Put(ctx, key, []byte("not JSON")), "a record's key may hold any bytes")
		case len(keys) > 0:
			require.NoError(t, s.Delete(ctx, keys[rng.IntN(len(keys))]))
		}
		want := query(t, s.db, `SELECT job, key, state FROM (SELECT job, key, state, row_number() OVER (PARTITION BY job ORDER BY attempt DESC, rank DESC, seq DESC) AS n
			FROM objects WHERE stage IS NOT NULL) WHERE n = 1 ORDER BY job`)
		require.Equal(t, want, query(t, s.db, `SELECT job, key, state FROM objects WHERE last IS NOT NULL ORDER BY job`), "after write %d", i)
	}
}

// A record's columns hold what json_extract reads from its JSON, as the
// views of version 1 read them, whatever the JSON holds (as the column's
// type takes it: a number in a TEXT column is its text); bytes that are
// not a JSON object, or a key that is not a record's, fill no column.
func TestARecordsColumnsHoldWhatItsJSONSays(t *testing.T) {
	s := openT(t, t.TempDir())
	ctx := t.Context()
	const key = "ledger/3fa/3fa00000000000000000000000000001.0002.failed.end.json"
	paths := []string{"attempt", "line", "id", "op", "kind", "state", "lost", "requests", "requestId", "error", "worker", "run", "time"}
	for i, data := range []string{
		`{"job":"3fa00000000000000000000000000001","attempt":2,"line":7,"id":"a\u00e9\"b","op":"image/text-to-image","kind":"call","state":"failed","lost":true,"requests":3,"requestId":"req-1","error":"HTTP 400: \ud83d\ude00","worker":"w","run":"r","time":"2026-11-26T21:33:34Z"}`,
		`{"attempt":2.5,"line":-1,"lost":false,"requests":1e3,"state":null,"error":{"b": [1, 2]},"worker":["x"],"time":12345678901234}`,
		`{"attempt":"2","line":true,"id":7}`,
		`{}`,
	} {
		require.NoError(t, s.Put(ctx, key, []byte(data)))
		var want []string
		for _, p := range paths {
			want = append(want, fmt.Sprintf("json_extract(CAST(data AS TEXT), '$.%s')", p))
		}
		cols := "attempt, line, id, op, kind, state, lost, requests, request_id, error, worker, run, time"
		wantRow := query(t, s.db, `SELECT `+strings.Join(want, ", ")+`, 'end', '3fa00000000000000000000000000001' FROM objects WHERE key = '`+key+`'`)
		gotRow := query(t, s.db, `SELECT `+cols+`, stage, job FROM objects WHERE key = '`+key+`'`)
		assert.Equal(t, wantRow, gotRow, data)
		if i == 0 { // a record as the ledger writes it: its columns' types are json_extract's too
			types := query(t, s.db, `SELECT typeof(`+strings.Join(want, "), typeof(")+`) FROM objects WHERE key = '`+key+`'`)
			gotTypes := query(t, s.db, `SELECT typeof(`+strings.ReplaceAll(cols, ", ", "), typeof(")+`) FROM objects WHERE key = '`+key+`'`)
			assert.Equal(t, types, gotTypes, "types of %s", data)
		}
	}
	for key, data := range map[string]string{
		key: `not JSON`,
		"ledger/3fa/3fa00000000000000000000000000001.0003.json":     `[1, 2]`,
		"ledger/3fb/3fa00000000000000000000000000001.0003.json":     `{"state":"done"}`, // under another job's folder
		"ledger/3fa/3fa0000000000000000000000000000.0003.json":      `{"state":"done"}`,
		"ledger/3fa/3FA00000000000000000000000000001.0003.json":     `{"state":"done"}`,
		"ledger/3fa/3fa00000000000000000000000000001.003.json":      `{"state":"done"}`,
		"ledger/3fa/3fa00000000000000000000000000001.0003.x.json":   `{"state":"done"}`,
		"ledger/budget/calls/3fa00000000000000000000000000001.json": `{"state":"done"}`,
	} {
		require.NoError(t, s.Put(ctx, key, []byte(data)))
		assert.Equal(t, [][]string{{"1"}}, query(t, s.db, `SELECT stage IS NULL AND job IS NULL AND state IS NULL FROM objects WHERE key = '`+key+`'`), "%s: %s", key, data)
	}
}
