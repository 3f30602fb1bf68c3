package sqlitestore

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkUpgrade brings a ledger of version 1 holding
// BENCH_UPGRADE_JOBS image jobs (default 1,000), each a claim, an end and
// an output as creative batch writes them, to version 2, and reports the
// time it took and the database's size before and after.
func BenchmarkUpgrade(b *testing.B) {
	jobs := 1000
	if n, err := strconv.Atoi(os.Getenv("BENCH_UPGRADE_JOBS")); err == nil && n > 0 {
		jobs = n
	}
	for i := range b.N {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
		mustB(b, os.MkdirAll(dir, 0o755))
		file := filepath.Join(dir, DBFile)
		db, err := sql.Open("sqlite", file)
		mustB(b, err)
		_, err = db.Exec(schemaV1 + fmt.Sprintf("PRAGMA user_version = 1; PRAGMA application_id = %d;", applicationID))
		mustB(b, err)
		tx, err := db.Begin()
		mustB(b, err)
		for n := range jobs {
			job := fmt.Sprintf("%032x", uint64(n)*0x9e3779b97f4a7c15)
			stem := fmt.Sprintf("%06d-text-to-image-%s", n+1, job[:6])
			rec := func(state string) []byte {
				return fmt.Appendf(nil, `{"job":%q,"line":%d,"op":"image/text-to-image","attempt":1,"state":%q,"fields":{"prompt":"a fox in the snow, number %d","styleId":"5f0c4e2a9b1d3c7e8a6f4b2d"},"files":[%q],"lost":false,"requests":1,"requestId":"req-%d","worker":"bench:1234","time":"2026-11-26T21:33:34.846681137Z","seconds":0.013,"run":"25a2c243869fbb94ee64270c80f48768","kind":"call","stem":%q}`,
					job, n+1, state, n, stem+".png", n, stem)
			}
			for _, row := range []struct {
				key  string
				data []byte
			}{
				{fmt.Sprintf("ledger/%s/%s.0001.json", job[:3], job), rec("claimed")},
				{fmt.Sprintf("ledger/%s/%s.0001.done.end.json", job[:3], job), rec("done")},
				{stem + ".png", nil},
			} {
				_, err = tx.Exec(`INSERT INTO objects (key, data) VALUES (?, ?)`, row.key, row.data)
				mustB(b, err)
			}
		}
		mustB(b, tx.Commit())
		mustB(b, db.Close())
		before := size(b, dir)

		b.StartTimer()
		start := time.Now()
		s, err := Open(dir)
		took := time.Since(start)
		mustB(b, err)
		mustB(b, s.Close())
		after := size(b, dir)
		b.ReportMetric(took.Seconds(), "upgrade-s")
		b.ReportMetric(float64(before)/float64(jobs), "v1-B/job")
		b.ReportMetric(float64(after)/float64(jobs), "v2-B/job")
		b.Logf("%d jobs: upgraded in %v; ledger.db %.1f MiB before, %.1f MiB after (the old table's pages free for later writes)",
			jobs, took.Round(time.Millisecond), float64(before)/(1<<20), float64(after)/(1<<20))
	}
}

func mustB(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// size is the size of the database's files in dir.
func size(b *testing.B, dir string) int64 {
	b.Helper()
	var n int64
	for _, name := range []string{DBFile, DBFile + "-wal"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil {
			n += st.Size()
		}
	}
	return n
}
