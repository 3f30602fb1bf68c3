package sqliteledger

import (
	"testing"
)

// TestALedgerKeepsOneIdentity: a ledger's identity is made with its
// schema and read the same by every opening of it; another ledger has
// another; a ledger made before the identity gets one when first asked,
// and keeps it.
func TestALedgerKeepsOneIdentity(t *testing.T) {
	dir := t.TempDir()
	id := func(dir string) string {
		t.Helper()
		l, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		id, err := l.ID(t.Context())
		if err != nil || len(id) != 32 {
			t.Fatalf("ID = %q, %v", id, err)
		}
		return id
	}
	first := id(dir)
	if again := id(dir); again != first {
		t.Fatalf("a second opening reads %s, the first %s", again, first)
	}
	if other := id(t.TempDir()); other == first {
		t.Fatalf("two ledgers share the identity %s", first)
	}
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.DB().Exec(`DROP TABLE ledger`); err != nil {
		t.Fatal(err)
	}
	l.Close()
	made := id(dir)
	if made == first || id(dir) != made {
		t.Fatalf("a ledger without an identity: %s, then %s", made, id(dir))
	}
}
