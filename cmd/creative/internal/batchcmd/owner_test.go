//go:build unix

package batchcmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/pgledger/pgtest"
	"github.com/creativegen/creative-go/cmd/creative/internal/s3test"
)

// openAt opens --out and --ledger as a run (record) or a status does,
// closing what it opened when the test ends.
func openAt(t *testing.T, out, ledger string, record bool) error {
	t.Helper()
	p, err := testBuckets.openPlace(t.Context(), out, ledger, record)
	if err == nil {
		t.Cleanup(func() { _ = p.Close() })
	}
	return err
}

// TestABucketNamesTheOneLedgerOfItsJobs: the first run on a bucket that
// holds outputs of an earlier run names its ledger there; the same ledger
// is taken again, another refused before anything is sent, whether a run,
// a dry run or a status asks, with a message naming --ledger and where the
// bucket's ledger is; a bucket given without --ledger says which to give.
func TestABucketNamesTheOneLedgerOfItsJobs(t *testing.T) {
	srv := s3test.Start(t)
	out := srv.URL("owned")
	s, err := testBuckets.Open(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	writeObject(t, s, "000001-image-text-to-image-3fa9c1.png", "an earlier run's output")

	first, other := t.TempDir(), t.TempDir()
	if err := openAt(t, out, first, true); err != nil {
		t.Fatalf("the first run: %v", err)
	}
	o, err := readOwner(t.Context(), s)
	host, _ := os.Hostname()
	if err != nil || o == nil || o.Kind != "sqlite" || o.Where != first || o.Host != host || len(o.Ledger) != 32 {
		t.Fatalf("%s = %+v, %v; want the SQLite ledger %s on %s", OwnerKey, o, err, first, host)
	}
	if err := openAt(t, out, first, true); err != nil {
		t.Fatalf("a second run with the same ledger: %v", err)
	}
	for _, record := range []bool{true, false} {
		err := openAt(t, out, other, record)
		if err == nil {
			t.Fatalf("a run (record %v) with another ledger was taken", record)
		}
		t.Logf("refused: %v", err)
		for _, want := range []string{"--ledger " + other, "nothing was sent", "the SQLite ledger in " + first + " on the machine " + host, o.Ledger, OwnerKey} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q\nwant it to say %q", err, want)
			}
		}
	}
	if o2, _ := readOwner(t.Context(), s); *o2 != *o {
		t.Fatalf("%s changed to %+v", OwnerKey, o2)
	}
	err = openAt(t, out, "", false)
	if err == nil || !strings.Contains(err.Error(), "--ledger the ledger of its jobs, the SQLite ledger in "+first) {
		t.Fatalf("a status without --ledger: %v, want it to name the bucket's ledger", err)
	}
}

// TestFirstRunsRacingOnABucketNameOneLedger: runs with ledgers of their
// own that start at once on a new bucket: one ledger is named, every run
// with another is refused; runs sharing one ledger are all taken.
func TestFirstRunsRacingOnABucketNameOneLedger(t *testing.T) {
	srv := s3test.Start(t)
	const runs = 6
	race := func(out string, ledger func(i int) string) (taken int, refusals []error) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range runs {
			wg.Go(func() {
				err := openAt(t, out, ledger(i), true)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					taken++
				} else {
					refusals = append(refusals, err)
				}
			})
		}
		wg.Wait()
		return taken, refusals
	}
	dirs := make([]string, runs)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	taken, refusals := race(srv.URL("race-own"), func(i int) string { return dirs[i] })
	if taken != 1 {
		t.Fatalf("%d runs with ledgers of their own were taken, want 1; refusals: %v", taken, refusals)
	}
	for _, err := range refusals {
		if !strings.Contains(err.Error(), "--ledger") || !strings.Contains(err.Error(), "which would pay for them again") {
			t.Errorf("refusal %q: want it to name --ledger", err)
		}
	}
	shared := t.TempDir()
	if taken, refusals := race(srv.URL("race-shared"), func(int) string { return shared }); taken != runs {
		t.Fatalf("%d of %d runs sharing one ledger were taken: %v", taken, runs, refusals)
	}
}

// TestABucketOfAPostgreSQLLedgerTakesEveryWorkerOfIt: workers sharing a
// PostgreSQL ledger are taken, from any machine; the bucket names the
// server and database without user or password; a local ledger is
// refused, told where the shared one is.
func TestABucketOfAPostgreSQLLedgerTakesEveryWorkerOfIt(t *testing.T) {
	srv := s3test.Start(t)
	pg := pgtest.Start(t)
	url := strings.Replace(pg.Database(t), "postgres://postgres@", "postgres://postgres:hunter2@", 1)
	db := strings.TrimPrefix(url[strings.LastIndex(url, "/"):strings.Index(url, "?")], "/")
	out := srv.URL("fleet")
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := openAt(t, out, url, true); err != nil {
				t.Errorf("a worker of the shared ledger: %v", err)
			}
		})
	}
	wg.Wait()
	s, err := testBuckets.Open(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw, err := s.Get(t.Context(), OwnerKey)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := readOwner(t.Context(), s)
	where := "postgres://" + pg.Addr() + "/" + db
	if o.Kind != "postgres" || o.Where != where || o.Host != "" {
		t.Errorf("%s = %s; want the server and database %s", OwnerKey, raw, where)
	}
	for _, secret := range []string{"hunter2", "postgres@", "sslmode"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("%s = %s: it holds %q of the URL", OwnerKey, raw, secret)
		}
	}
	err = openAt(t, out, t.TempDir(), true)
	if err == nil || !strings.Contains(err.Error(), "the PostgreSQL ledger at "+where) || !strings.Contains(err.Error(), "--ledger") {
		t.Fatalf("a local ledger on the fleet's bucket: %v", err)
	}
}

// TestABucketOfAnEarlierVersionsLedgerIsStillRefused: objects under
// ledger/ are an earlier version's ledger, refused before the bucket is
// given an owner.
func TestABucketOfAnEarlierVersionsLedgerIsStillRefused(t *testing.T) {
	srv := s3test.Start(t)
	out := srv.URL("earlier")
	s, err := testBuckets.Open(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	writeObject(t, s, "ledger/3fa/0123456789abcdef0123456789abcdef.1.json", "{}")
	err = openAt(t, out, t.TempDir(), true)
	if err == nil || !strings.Contains(err.Error(), "earlier version") {
		t.Fatalf("a bucket of an earlier version's ledger: %v", err)
	}
	if o, err := readOwner(t.Context(), s); o != nil || err != nil {
		t.Fatalf("%s = %+v, %v: written for a refused run", OwnerKey, o, err)
	}
}

func writeObject(t *testing.T, s batch.Store, key, data string) {
	t.Helper()
	w, err := s.NewWriter(t.Context(), key, nil)
	if err == nil {
		_, err = io.WriteString(w, data)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(fmt.Errorf("writing %s: %w", key, err))
	}
}

// TestAFolderWhoseLedgerIsElsewhereNamesIt: a folder --out run with a
// ledger elsewhere names it as a bucket does; another ledger is refused,
// and so is a run that would begin a ledger of its own in the folder,
// before that ledger is made; --start-over is refused while the name is
// there (that ledger's runs may be live), and moves the earlier outputs
// once the user removed it.
func TestAFolderWhoseLedgerIsElsewhereNamesIt(t *testing.T) {
	out, first := t.TempDir(), t.TempDir()
	if err := openAt(t, out, first, true); err != nil {
		t.Fatalf("the first run: %v", err)
	}
	if err := openAt(t, out, first, true); err != nil {
		t.Fatalf("a second run with the same ledger: %v", err)
	}
	where := "the SQLite ledger in " + first
	if err := openAt(t, out, t.TempDir(), true); err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), "--ledger") {
		t.Fatalf("another ledger: %v", err)
	}
	if err := openAt(t, out, "", true); err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), "Give --ledger") {
		t.Fatalf("a ledger of the folder's own: %v", err)
	}
	if err := openAt(t, out, out, true); err == nil || !strings.Contains(err.Error(), where) {
		t.Fatalf("--ledger naming the folder itself: %v", err)
	}
	if hasLedger(out, "") {
		t.Fatal("a refused run made a ledger in the folder")
	}
	if err := os.WriteFile(filepath.Join(out, "000001-image-text-to-image-3fa9c1.png"), []byte("png"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkEarlier(io.Discard, out, "", false); err == nil || !strings.Contains(err.Error(), where) {
		t.Fatalf("a run without --ledger on the folder's outputs: %v", err)
	}
	// Its runs may still be writing: --start-over moves nothing until the
	// user removes the name.
	if err := checkEarlier(io.Discard, out, "", true); err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), "--ledger") {
		t.Fatalf("--start-over on a folder naming a ledger elsewhere: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "000001-image-text-to-image-3fa9c1.png")); err != nil {
		t.Fatalf("a refused --start-over moved the outputs: %v", err)
	}
	if err := os.Remove(filepath.Join(out, OwnerKey)); err != nil {
		t.Fatal(err)
	}
	if err := checkEarlier(io.Discard, out, "", true); err != nil {
		t.Fatal(err)
	}
	if err := openAt(t, out, "", true); err != nil {
		t.Fatalf("a new ledger once --start-over moved the earlier files: %v", err)
	}
}

// TestANameOfNoLedgerIsRefused: a which-ledger.json that names no ledger
// creative batch writes (damaged, or of something else) is refused, not
// taken for a ledger's, nor written over.
func TestANameOfNoLedgerIsRefused(t *testing.T) {
	out := t.TempDir()
	for _, bad := range []string{`{"ledger":"x\u001b[2J"}`, `not json`, `{"ledger":"` + strings.Repeat("ab", 16) + `","where":"` + strings.Repeat("x", 5000) + `"}`} {
		if err := os.WriteFile(filepath.Join(out, OwnerKey), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		err := openAt(t, out, t.TempDir(), true)
		if err == nil || !strings.Contains(err.Error(), OwnerKey) {
			t.Fatalf("%s = %.40q: %v, want a refusal naming it", OwnerKey, bad, err)
		}
		if b, _ := os.ReadFile(filepath.Join(out, OwnerKey)); string(b) != bad {
			t.Fatalf("%s written over", OwnerKey)
		}
	}
}
