//go:build unix

package batchcmd

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
	"github.com/creativegen/creative-go/batch/sqliteledger"
	"github.com/creativegen/creative-go/cmd/creative/internal/s3test"
)

// openOnce opens --out and --ledger as a run (record) or a status does,
// and closes what it opened at once.
func openOnce(t *testing.T, out, ledger string, record bool) error {
	t.Helper()
	p, err := testBuckets.openPlace(t.Context(), out, ledger, record)
	if err == nil {
		_ = p.Close()
	}
	return err
}

// A copy of an SQLite ledger (ledger.db copied to another folder, or to
// another machine) has the identity of the one it was copied from: the
// outputs that name the first must refuse the copy, or both would be sent
// the same jobs.
func TestACopiedSQLiteLedgerIsRefused(t *testing.T) {
	out, first, copied := t.TempDir(), t.TempDir(), t.TempDir()
	if err := openOnce(t, out, first, true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(first, sqliteledger.File))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copied, sqliteledger.File), b, 0o644); err != nil {
		t.Fatal(err)
	}
	err = openOnce(t, out, copied, true)
	if err == nil || !strings.Contains(err.Error(), "--ledger") || !strings.Contains(err.Error(), first) {
		t.Fatalf("a run with a copy of the ledger = %v, want a refusal naming --ledger and %s", err, first)
	}
	// Copied into --out itself, it is the folder's own ledger, which the
	// folder does not name either.
	if err := os.WriteFile(filepath.Join(out, sqliteledger.File), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := openOnce(t, out, "", true); err == nil || !strings.Contains(err.Error(), first) {
		t.Fatalf("a run with a copy of the ledger in --out = %v, want a refusal naming %s", err, first)
	}
	if err := openOnce(t, out, first, true); err == nil {
		t.Fatal("a run with the recorded ledger beside a copy of it in --out was accepted")
	}
	if err := os.Remove(filepath.Join(out, sqliteledger.File)); err != nil {
		t.Fatal(err)
	}
	// The ledger itself, named another way, is still accepted.
	rel, err := filepath.Rel(mustGetwd(t), first)
	if err != nil {
		t.Fatal(err)
	}
	if err := openOnce(t, out, rel, true); err != nil {
		t.Fatalf("the recorded ledger by a relative path: %v", err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(first, link); err != nil {
		t.Fatal(err)
	}
	if err := openOnce(t, out, link, true); err != nil {
		t.Fatalf("the recorded ledger through a symbolic link: %v", err)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// A huge which-ledger.json is refused without being read whole: memory
// follows work, never a file's size.
func TestAHugeRecordIsRefusedWithoutReadingIt(t *testing.T) {
	out, ledger := t.TempDir(), t.TempDir()
	f, err := os.Create(filepath.Join(out, OwnerKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(256 << 20); err != nil { // sparse: no disk
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err = openOnce(t, out, ledger, true)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a run on a folder with a 256 MB which-ledger.json was accepted")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Fatalf("refusing a 256 MB which-ledger.json allocated %d MB, want a bounded read", got>>20)
	}
}

// What a hostile record says reaches the terminal only as plain text: no
// control characters (escape sequences that rewrite the screen or the
// title), which a message would otherwise carry.
func TestAHostileRecordPutsNoControlCharactersInTheMessage(t *testing.T) {
	out, ledger := t.TempDir(), t.TempDir()
	rec, _ := json.Marshal(map[string]string{
		"ledger": "0123456789abcdef0123456789abcdef", "kind": "sqlite",
		"host": "box\x1b]0;owned\x07", "where": "/srv\x1b[2J\r\nrun: rm -rf ~\x9b31m",
	})
	if err := os.WriteFile(filepath.Join(out, OwnerKey), rec, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, record := range []bool{true, false} {
		err := openOnce(t, out, ledger, record)
		if err == nil {
			t.Fatal("another ledger was accepted")
		}
		for _, r := range err.Error() {
			if r < 0x20 || r >= 0x7f && r < 0xa0 {
				t.Fatalf("the refusal holds the control character %U: %q", r, err)
			}
		}
	}
	if err := openOnce(t, out, "", false); err == nil {
		t.Fatal("a run without --ledger was accepted")
	} else if strings.ContainsAny(err.Error(), "\x1b\x07\r\n\u009b") {
		t.Fatalf("the refusal holds control characters: %q", err)
	}
}

// A keyword/value connection string given as --ledger is no folder: a
// run must not make a folder of that name and write its password into
// the record of the outputs (nor into a message).
func TestAConnectionStringLedgerLeaksNoPassword(t *testing.T) {
	t.Chdir(t.TempDir())
	out := t.TempDir()
	for _, ledger := range []string{
		"host=db.internal user=app password=s3cretpw dbname=creative",
		"postgres://app:pa/s3cretpw@db.internal/creative", // a password with a slash, not escaped: no URL
		"postgresql://app:s3cretpw@db.internal:badport/creative",
		"postgres:app:s3cretpw@db.internal/creative", // no "//": an opaque URL
		"postgres:/app:s3cretpw@db.internal/creative",
		"postgres://app:s3cretpw@127.0.0.1:1/creative#password=s3cretpw",
	} {
		err := openOnce(t, out, ledger, true)
		if err == nil {
			t.Errorf("--ledger %q was accepted", ledger)
		} else if strings.Contains(err.Error(), "s3cretpw") {
			t.Errorf("--ledger %q: the refusal holds the password: %v", ledger, err)
		}
		if b, rerr := os.ReadFile(filepath.Join(out, OwnerKey)); rerr == nil && strings.Contains(string(b), "s3cretpw") {
			t.Errorf("--ledger %q: the record holds the password:\n%s", ledger, b)
		}
	}
	es, _ := os.ReadDir(".")
	for _, e := range es {
		t.Errorf("a run made %q in the working folder", e.Name())
	}
}

// Of two first runs racing on one folder --out, one with the folder's own
// ledger (no --ledger) and one with a ledger elsewhere, at most one may
// go on: the first would make ledger.db there, the other record the
// ledger elsewhere, and each pay for the same jobs.
func TestRacingOwnAndOtherLedgerOnAFolder(t *testing.T) {
	for round := range 40 {
		out, elsewhere := t.TempDir(), t.TempDir()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, ledger := range []string{"", elsewhere} {
			wg.Go(func() { errs[i] = openOnce(t, out, ledger, true) })
		}
		wg.Wait()
		if errs[0] == nil && errs[1] == nil {
			t.Fatalf("round %d: both the folder's own ledger and %s were accepted for %s", round, elsewhere, out)
		}
	}
}

// Of first runs racing on a new bucket, each with its own SQLite ledger,
// exactly one is accepted.
func TestRacingFirstRunsOnABucket(t *testing.T) {
	srv := s3test.Start(t)
	for round := range 5 {
		out := srv.URL(fmt.Sprintf("race%d", round))
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			ledger := t.TempDir()
			wg.Go(func() { errs[i] = openOnce(t, out, ledger, true) })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d of %d first runs with their own ledgers were accepted, want 1: %v", round, ok, n, errs)
		}
	}
}

// The record of a PostgreSQL ledger names its server and database only:
// never the password or the user, wherever the URL holds them.
func TestAPostgresRecordHoldsNoSecret(t *testing.T) {
	srv := pgtest.Start(t)
	db := func() string { u, _ := url.Parse(srv.Database(t)); return u.Path }
	for i, ledger := range []string{
		"postgres://postgres:s3cretpw@" + srv.Addr() + db() + "?sslmode=disable",
		"postgres://" + srv.Addr() + db() + "?sslmode=disable&password=s3cretpw&user=postgres",
		"postgres://postgres:s3cret%70w@" + srv.Addr() + db() + "?sslmode=disable&application_name=s3cretpw",
		"postgresql:///" + strings.TrimPrefix(db(), "/") + "?host=127.0.0.1&port=" + srv.Addr()[strings.LastIndex(srv.Addr(), ":")+1:] + "&user=postgres&password=s3cretpw&sslmode=disable",
	} {
		out := t.TempDir()
		if err := openOnce(t, out, ledger, true); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		b, err := os.ReadFile(filepath.Join(out, OwnerKey))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "s3cret") || strings.Contains(string(b), "postgres@") || !strings.Contains(string(b), srv.Addr()) {
			t.Errorf("%d: the record of %s holds a secret or no server:\n%s", i, redactURL(ledger), b)
		}
		// Another ledger, and no ledger, are refused, naming the server.
		for _, other := range []string{t.TempDir(), ""} {
			err := openOnce(t, out, other, true)
			if err == nil || !strings.Contains(err.Error(), srv.Addr()) || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%d: --ledger %q = %v, want a refusal naming %s", i, other, err, srv.Addr())
			}
		}
		if err := openOnce(t, out, ledger, false); err != nil {
			t.Errorf("%d: status with the recorded ledger: %v", i, err)
		}
	}
}

// A bucket's record is bounded, checked and shown as a folder's is: a
// huge object is refused without being read whole, a hostile one never
// lets another ledger in, a copy of the recorded SQLite ledger is another
// ledger, and a folder where the object would be is no record.
func TestABucketRecordIsReadWithCare(t *testing.T) {
	srv := s3test.Start(t)
	object := func(prefix string) string { return filepath.Join(srv.Root, "creative", prefix, OwnerKey) }

	// Huge, written straight into the server's folder (sparse).
	if err := os.MkdirAll(filepath.Dir(object("huge")), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(object("huge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(256 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err = openOnce(t, srv.URL("huge"), t.TempDir(), true)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a bucket with a 256 MB which-ledger.json was accepted")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Fatalf("refusing a 256 MB which-ledger.json allocated %d MB, want a bounded read", got>>20)
	}

	// A folder in the object's place.
	if err := os.MkdirAll(filepath.Join(object("dir"), "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	first := t.TempDir()
	if err := openOnce(t, srv.URL("dir"), first, true); err == nil {
		if err := openOnce(t, srv.URL("dir"), t.TempDir(), true); err == nil {
			t.Fatal("with a folder where which-ledger.json would be, two ledgers were accepted")
		}
	}

	// Duplicate keys, odd escapes, another case: one reading, never two.
	own := t.TempDir()
	if err := openOnce(t, srv.URL("own"), own, true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(object("own"))
	if err != nil {
		t.Fatal(err)
	}
	var rec owner
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := openOnce(t, srv.URL("other"), other, true); err != nil {
		t.Fatal(err)
	}
	ob, _ := os.ReadFile(object("other"))
	var orec owner
	_ = json.Unmarshal(ob, &orec)
	for i, hostile := range []string{
		`{"ledger":"` + rec.Ledger + `","ledger":"` + orec.Ledger + `","kind":"sqlite","host":"` + rec.Host + `","where":"` + rec.Where + `"}`,
		`{"LEDGER":"` + strings.ToUpper(rec.Ledger) + `","kind":"sqlite","host":"` + rec.Host + `","where":"` + rec.Where + `"}`,
		`{"ledger":"\u0030` + rec.Ledger[1:] + `","kind":"sqlite","host":"` + rec.Host + `","where":"` + rec.Where + `"}` + "\n" + `{"ledger":"` + orec.Ledger + `"}`,
		`{"ledger":"` + rec.Ledger + `\u0000","kind":"sqlite","host":"` + rec.Host + `","where":"` + rec.Where + `"}`,
		`null`, `[]`, `"` + rec.Ledger + `"`, ``, `{"ledger":` + strings.Repeat("[", 4000) + `}`,
	} {
		prefix := fmt.Sprintf("hostile%d", i)
		if err := os.MkdirAll(filepath.Dir(object(prefix)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(object(prefix), []byte(hostile), 0o644); err != nil {
			t.Fatal(err)
		}
		a, b := openOnce(t, srv.URL(prefix), own, true), openOnce(t, srv.URL(prefix), other, true)
		if a == nil && b == nil {
			t.Errorf("%d: %q: both ledgers were accepted", i, hostile)
		}
	}
}

// A status without --ledger on a folder that names its ledger elsewhere
// says which to give.
func TestAStatusWithoutLedgerNamesTheRecordedLedger(t *testing.T) {
	out, elsewhere := t.TempDir(), t.TempDir()
	if err := openOnce(t, out, elsewhere, true); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	err := runStatus(t, &stdout, &stderr, "--out", out)
	if err == nil || !strings.Contains(err.Error(), "--ledger") || !strings.Contains(err.Error(), elsewhere) {
		t.Fatalf("batch status --out %s = %v, want a refusal naming --ledger and %s", out, err, elsewhere)
	}
}

// runStatus runs creative batch status with args.
func runStatus(t *testing.T, stdout, stderr io.Writer, args ...string) error {
	t.Helper()
	cmd := New(func() Env {
		return Env{Stdout: stdout, Console: stderr, Getenv: func(string) string { return "" }, Buckets: testBuckets}
	})
	cmd.SetArgs(append([]string{"status"}, args...))
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.ExecuteContext(t.Context())
}

// An identity changed by hand in the ledger (sqlite3: emptied, dropped,
// upper-cased, made no hex) makes another ledger, which the outputs
// refuse; none of it crashes or lets two ledgers in.
func TestAnIdentityChangedByHandIsRefused(t *testing.T) {
	for _, change := range []string{
		`DELETE FROM ledger`,
		`DROP TABLE ledger`,
		`UPDATE ledger SET id = upper(id)`,
		`UPDATE ledger SET id = 'zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz'`,
		`UPDATE ledger SET id = '"}{"ledger":"0123456789abcdef012'`,
	} {
		out, ledger := t.TempDir(), t.TempDir()
		if err := openOnce(t, out, ledger, true); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", filepath.Join(ledger, sqliteledger.File))
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.Exec(change)
		db.Close()
		if err != nil {
			t.Fatalf("%s: %v", change, err)
		}
		if err := openOnce(t, out, ledger, true); err == nil {
			t.Errorf("after %s the ledger was still accepted", change)
		}
		// On new outputs the changed ledger records itself or is refused,
		// and another is refused after it.
		fresh := t.TempDir()
		if openOnce(t, fresh, ledger, true) == nil && openOnce(t, fresh, t.TempDir(), true) == nil {
			t.Errorf("after %s two ledgers were accepted for new outputs", change)
		}
	}
}

// Of first runs racing on a new folder, each with a ledger elsewhere,
// exactly one is accepted; with one ledger shared, every one is.
func TestRacingFirstRunsOnAFolder(t *testing.T) {
	for round := range 10 {
		out, shared := t.TempDir(), t.TempDir()
		const n = 6
		errs := make([]error, 2*n)
		var wg sync.WaitGroup
		for i := range n {
			ledger := t.TempDir()
			wg.Go(func() { errs[i] = openOnce(t, out, ledger, true) })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs[:n] {
			if err == nil {
				ok++
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d of %d first runs with their own ledgers were accepted, want 1: %v", round, ok, n, errs)
		}
		out = t.TempDir()
		for i := range n {
			wg.Go(func() { errs[n+i] = openOnce(t, out, shared, true) })
		}
		wg.Wait()
		for _, err := range errs[n:] {
			if err != nil {
				t.Fatalf("round %d: a run with the one shared ledger was refused: %v", round, err)
			}
		}
	}
}

// A which-ledger.json in a folder that is a link (to a record outside
// --out, or a dangling one), a folder or a FIFO is refused, whichever
// ledger is given, and is left as it is.
func TestAFolderRecordThatIsNoFileIsRefused(t *testing.T) {
	ledger := t.TempDir()
	recorded := t.TempDir()
	if err := openOnce(t, recorded, ledger, true); err != nil {
		t.Fatal(err)
	}
	for _, plant := range []func(p string) error{
		func(p string) error { return os.Symlink(filepath.Join(recorded, OwnerKey), p) },
		func(p string) error { return os.Symlink(filepath.Join(recorded, "none"), p) },
		func(p string) error { return os.Mkdir(p, 0o755) },
		func(p string) error { return syscall.Mkfifo(p, 0o644) },
	} {
		out := t.TempDir()
		p := filepath.Join(out, OwnerKey)
		if err := plant(p); err != nil {
			t.Fatal(err)
		}
		before, _ := os.Lstat(p)
		for _, l := range []string{ledger, t.TempDir(), ""} {
			if err := openOnce(t, out, l, true); err == nil {
				t.Errorf("%s: --ledger %q was accepted", before.Mode(), l)
			}
		}
		if after, err := os.Lstat(p); err != nil || after.Mode() != before.Mode() {
			t.Errorf("%s: the planted %s was changed: %v", before.Mode(), OwnerKey, err)
		}
	}
}
