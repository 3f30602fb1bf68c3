// Package storetest checks that a batch.Store keeps the contract the
// ledger relies on: exclusive creates under concurrency, atomic replaces,
// lexical listing that shows every write at once (a run reads the ledger
// from one listing), writers that show nothing until they close whole,
// and keys that cannot escape the store.
//
// A Store implementation runs it from its own tests:
//
//	func TestMyStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) batch.Store { return openMine(t) })
//	}
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/creativegen/creative-go/batch"
)

// Run runs the conformance suite. open returns a new, empty store for one
// subtest; it is closed by the suite.
func Run(t *testing.T, open func(t *testing.T) batch.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s batch.Store)
	}{
		{"Create makes an object that Get reads", createThenGet},
		{"Create of a key that exists fails with ErrExist and keeps the first", createTwice},
		{"of many concurrent Creates of one key exactly one wins", createRace},
		{"Put replaces an object whole", putReplaces},
		{"concurrent Puts leave one of the values whole", putRace},
		{"Get of a missing key fails with ErrNotExist", getMissing},
		{"Exists and Delete", existsDelete},
		{"List yields the keys under a prefix in lexical order", listOrder},
		{"List can be stopped early", listStops},
		{"List of a prefix that matches nothing yields nothing", listNothing},
		{"List shows at once what was created, put, written and deleted", listAfterWrites},
		{"ListDir, where a Store has it, lists a folder without its sub-folders", listDir},
		{"a writer's object is visible only after Close", writerVisibleAfterClose},
		{"a writer whose context is cancelled leaves nothing", writerCancelled},
		{"a writer of a large object streams it", writerLarge},
		{"keys that escape the store are refused", escapingKeys},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s)
		})
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

func get(t *testing.T, s batch.Store, key string) string {
	t.Helper()
	b, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return string(b)
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func createThenGet(t *testing.T, s batch.Store) {
	must(t, s.Create(ctx(t), "ledger/ab/job/0001.json", []byte(`{"state":"claimed"}`)), "Create")
	if got := get(t, s, "ledger/ab/job/0001.json"); got != `{"state":"claimed"}` {
		t.Errorf("Get = %q", got)
	}
	must(t, s.Create(ctx(t), "empty", nil), "Create of an empty object")
	if got := get(t, s, "empty"); got != "" {
		t.Errorf("Get of an empty object = %q", got)
	}
}

func createTwice(t *testing.T, s batch.Store) {
	must(t, s.Create(ctx(t), "a/b", []byte("first")), "Create")
	err := s.Create(ctx(t), "a/b", []byte("second"))
	if !errors.Is(err, batch.ErrExist) {
		t.Fatalf("second Create: %v, want an error matching batch.ErrExist", err)
	}
	if got := get(t, s, "a/b"); got != "first" {
		t.Errorf("after a refused Create, Get = %q, want the first bytes", got)
	}
	must(t, s.Put(ctx(t), "c", []byte("put")), "Put")
	if err := s.Create(ctx(t), "c", []byte("x")); !errors.Is(err, batch.ErrExist) {
		t.Errorf("Create over a Put: %v, want ErrExist", err)
	}
}

func createRace(t *testing.T, s batch.Store) {
	const workers, rounds = 16, 20
	for round := range rounds {
		key := fmt.Sprintf("race/%02d/claim.json", round)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []int
		var other []error
		start := make(chan struct{})
		for w := range workers {
			wg.Go(func() {
				<-start
				err := s.Create(ctx(t), key, []byte(fmt.Sprint(w)))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won = append(won, w)
				case !errors.Is(err, batch.ErrExist):
					other = append(other, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(other) > 0 {
			t.Fatalf("round %d: Creates failed other than with ErrExist: %v", round, other)
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d of %d concurrent Creates succeeded (%v), want exactly 1", round, len(won), workers, won)
		}
		if got := get(t, s, key); got != fmt.Sprint(won[0]) {
			t.Fatalf("round %d: the object holds %q, the winner wrote %d", round, got, won[0])
		}
	}
}

func putReplaces(t *testing.T, s batch.Store) {
	must(t, s.Put(ctx(t), "k", []byte("one")), "Put")
	must(t, s.Put(ctx(t), "k", []byte("two, longer")), "Put")
	must(t, s.Put(ctx(t), "k", []byte("3")), "Put")
	if got := get(t, s, "k"); got != "3" {
		t.Errorf("Get = %q, want the last Put", got)
	}
}

func putRace(t *testing.T, s batch.Store) {
	values := make([][]byte, 8)
	for i := range values {
		values[i] = bytes.Repeat([]byte{byte('a' + i)}, 64<<10)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var torn error
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := s.Get(ctx(t), "k")
			if errors.Is(err, batch.ErrNotExist) {
				continue
			}
			if err != nil || !slices.ContainsFunc(values, func(v []byte) bool { return bytes.Equal(v, b) }) {
				torn = fmt.Errorf("a reader saw %d bytes that are no value written (err %v)", len(b), err)
				return
			}
		}
	}()
	for i := range values {
		wg.Go(func() {
			for range 5 {
				if err := s.Put(ctx(t), "k", values[i]); err != nil {
					t.Errorf("Put: %v", err)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-readerDone
	if torn != nil {
		t.Fatal(torn)
	}
}

func getMissing(t *testing.T, s batch.Store) {
	_, err := s.Get(ctx(t), "no/such/key")
	if !errors.Is(err, batch.ErrNotExist) {
		t.Errorf("Get of a missing key: %v, want ErrNotExist", err)
	}
}

func existsDelete(t *testing.T, s batch.Store) {
	ok, err := s.Exists(ctx(t), "x/y")
	must(t, err, "Exists")
	if ok {
		t.Fatal("Exists of a missing key is true")
	}
	must(t, s.Put(ctx(t), "x/y", []byte("1")), "Put")
	ok, err = s.Exists(ctx(t), "x/y")
	must(t, err, "Exists")
	if !ok {
		t.Fatal("Exists after Put is false")
	}
	must(t, s.Delete(ctx(t), "x/y"), "Delete")
	if _, err := s.Get(ctx(t), "x/y"); !errors.Is(err, batch.ErrNotExist) {
		t.Errorf("Get after Delete: %v", err)
	}
	must(t, s.Delete(ctx(t), "x/y"), "Delete of a missing key")
	must(t, s.Create(ctx(t), "x/y", []byte("2")), "Create after Delete")
}

func list(t *testing.T, s batch.Store, prefix string) []string {
	t.Helper()
	var keys []string
	for k, err := range s.List(ctx(t), prefix) {
		must(t, err, "List")
		keys = append(keys, k)
	}
	return keys
}

func listOrder(t *testing.T, s batch.Store) {
	keys := []string{"b.png", "a/2", "a/10", "a/1", "a-1.png", "a.png", "ledger/0f/x/0002.json", "ledger/0f/x/0001.json", "ledger/10/y/0001.json", "ledgers"}
	for _, k := range keys {
		must(t, s.Put(ctx(t), k, []byte(k)), "Put")
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if got := list(t, s, ""); !slices.Equal(got, want) {
		t.Errorf("List(\"\") = %q, want %q", got, want)
	}
	if got := list(t, s, "ledger/"); !slices.Equal(got, []string{"ledger/0f/x/0001.json", "ledger/0f/x/0002.json", "ledger/10/y/0001.json"}) {
		t.Errorf("List(\"ledger/\") = %q", got)
	}
	if got := list(t, s, "ledger/0f/x/"); !slices.Equal(got, []string{"ledger/0f/x/0001.json", "ledger/0f/x/0002.json"}) {
		t.Errorf("List(\"ledger/0f/x/\") = %q", got)
	}
	if got := list(t, s, "a"); !slices.Equal(got, []string{"a-1.png", "a.png", "a/1", "a/10", "a/2"}) {
		t.Errorf("List(\"a\") = %q", got)
	}
	if got := list(t, s, "ledger"); len(got) != 4 || got[3] != "ledgers" {
		t.Errorf("List(\"ledger\") = %q", got)
	}
}

func listStops(t *testing.T, s batch.Store) {
	for i := range 1000 {
		must(t, s.Put(ctx(t), fmt.Sprintf("many/%04d", i), nil), "Put")
	}
	n := 0
	for k, err := range s.List(ctx(t), "many/") {
		must(t, err, "List")
		if want := fmt.Sprintf("many/%04d", n); k != want {
			t.Fatalf("key %d is %q, want %q", n, k, want)
		}
		n++
		if n == 10 {
			break
		}
	}
	if n != 10 {
		t.Errorf("List yielded %d keys before the break, want 10", n)
	}
	if got := len(list(t, s, "many/")); got != 1000 {
		t.Errorf("List yielded %d keys, want 1000", got)
	}
}

func listNothing(t *testing.T, s batch.Store) {
	must(t, s.Put(ctx(t), "a/b", nil), "Put")
	if got := list(t, s, "z/"); len(got) != 0 {
		t.Errorf("List(\"z/\") = %q", got)
	}
}

func listAfterWrites(t *testing.T, s batch.Store) {
	must(t, s.Create(ctx(t), "ledger/abc/x.0001.json", []byte("c")), "Create")
	must(t, s.Put(ctx(t), "ledger/runs/r.json", []byte("p")), "Put")
	w, err := s.NewWriter(ctx(t), "out.png", nil)
	must(t, err, "NewWriter")
	_, _ = io.WriteString(w, "png")
	must(t, w.Close(), "Close")
	want := []string{"ledger/abc/x.0001.json", "ledger/runs/r.json", "out.png"}
	if got := list(t, s, ""); !slices.Equal(got, want) {
		t.Fatalf("List right after the writes = %q, want %q", got, want)
	}
	must(t, s.Delete(ctx(t), "out.png"), "Delete")
	must(t, s.Delete(ctx(t), "ledger/runs/r.json"), "Delete")
	if got := list(t, s, ""); !slices.Equal(got, want[:1]) {
		t.Errorf("List right after the deletes = %q, want %q", got, want[:1])
	}
}

func listDir(t *testing.T, s batch.Store) {
	d, ok := s.(batch.DirLister)
	if !ok {
		t.Skip("the Store has no ListDir")
	}
	for _, k := range []string{"b.png", "a.png", "ledger/abc/x.json", "ledger/runs/r.json", "ledgers", "results/1.jsonl"} {
		must(t, s.Put(ctx(t), k, []byte(k)), "Put")
	}
	var got []string
	for k, err := range d.ListDir(ctx(t), "") {
		must(t, err, "ListDir")
		got = append(got, k)
	}
	if want := []string{"a.png", "b.png", "ledgers"}; !slices.Equal(got, want) {
		t.Errorf("ListDir(\"\") = %q, want %q", got, want)
	}
	got = nil
	for k, err := range d.ListDir(ctx(t), "ledger/") {
		must(t, err, "ListDir")
		got = append(got, k)
	}
	if len(got) != 0 {
		t.Errorf("ListDir(\"ledger/\") = %q, want nothing (every key is in a sub-folder)", got)
	}
}

func writerVisibleAfterClose(t *testing.T, s batch.Store) {
	w, err := s.NewWriter(ctx(t), "out/file.bin", map[string]string{"job": "j"})
	must(t, err, "NewWriter")
	_, err = io.WriteString(w, "half")
	must(t, err, "Write")
	if ok, _ := s.Exists(ctx(t), "out/file.bin"); ok {
		t.Fatal("the object is visible before Close")
	}
	if got := list(t, s, ""); len(got) != 0 {
		t.Fatalf("List before Close = %q, want nothing", got)
	}
	_, err = io.WriteString(w, " and the rest")
	must(t, err, "Write")
	must(t, w.Close(), "Close")
	if got := get(t, s, "out/file.bin"); got != "half and the rest" {
		t.Errorf("Get = %q", got)
	}
	// A second writer replaces the object whole on Close.
	w, err = s.NewWriter(ctx(t), "out/file.bin", nil)
	must(t, err, "NewWriter")
	_, _ = io.WriteString(w, "new")
	if got := get(t, s, "out/file.bin"); got != "half and the rest" {
		t.Errorf("before Close, Get = %q, want the old object", got)
	}
	must(t, w.Close(), "Close")
	if got := get(t, s, "out/file.bin"); got != "new" {
		t.Errorf("Get = %q", got)
	}
}

func writerCancelled(t *testing.T, s batch.Store) {
	c, cancel := context.WithCancel(ctx(t))
	w, err := s.NewWriter(c, "out/cancelled.bin", nil)
	must(t, err, "NewWriter")
	_, _ = io.WriteString(w, "some bytes")
	cancel()
	_, _ = io.WriteString(w, "more")
	if err := w.Close(); err == nil {
		t.Error("Close after the context was cancelled returned nil")
	}
	if ok, _ := s.Exists(ctx(t), "out/cancelled.bin"); ok {
		t.Error("a cancelled writer left its object")
	}
	if got := list(t, s, ""); len(got) != 0 {
		t.Errorf("a cancelled writer left %q", got)
	}
}

func writerLarge(t *testing.T, s batch.Store) {
	w, err := s.NewWriter(ctx(t), "big.bin", nil)
	must(t, err, "NewWriter")
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	for range 64 {
		_, err := w.Write(chunk)
		must(t, err, "Write")
	}
	must(t, w.Close(), "Close")
	b := get(t, s, "big.bin")
	if len(b) != 64*len(chunk) || !strings.HasPrefix(b, "0123456789abcdef") {
		t.Errorf("read %d bytes back, want %d", len(b), 64*len(chunk))
	}
}

func escapingKeys(t *testing.T, s batch.Store) {
	for _, key := range []string{"", "/etc/passwd", "../up", "a/../../up", "a/./b", "a//b", `a\..\b`, ".", "..", "a/"} {
		if err := s.Put(ctx(t), key, []byte("x")); err == nil {
			t.Errorf("Put(%q) succeeded", key)
		}
		if err := s.Create(ctx(t), key, []byte("x")); err == nil {
			t.Errorf("Create(%q) succeeded", key)
		}
		if _, err := s.Get(ctx(t), key); err == nil {
			t.Errorf("Get(%q): %v, want a refusal", key, err)
		}
		if w, err := s.NewWriter(ctx(t), key, nil); err == nil {
			_ = w.Close()
			t.Errorf("NewWriter(%q) succeeded", key)
		}
	}
	if got := list(t, s, ""); len(got) != 0 {
		t.Errorf("refused keys left %q", got)
	}
}
