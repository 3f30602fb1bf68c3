package memnet

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// A server and a client on a Listener live in one bubble: with a
// connection idle in the client's pool, the clock still moves, and a
// handler's sleep takes no real time.
func TestAnHTTPServerAndItsClientShareABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := Listen()
		srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Hour)
			_, _ = io.WriteString(w, "late")
		})}}
		srv.Start()
		defer srv.Close()
		hc := &http.Client{Transport: ln.Transport()}
		defer hc.CloseIdleConnections()

		start := time.Now()
		for range 2 { // the second request reuses the idle connection
			resp, err := hc.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if string(b) != "late" {
				t.Fatalf("got %q", b)
			}
		}
		if got := time.Since(start); got != 2*time.Hour {
			t.Errorf("two answers an hour late took %v of the bubble's time, want 2h", got)
		}
	})
}

func TestADialToAnotherAddressOrAClosedListenerIsRefused(t *testing.T) {
	ln := Listen()
	if _, err := ln.Dial(context.Background(), "tcp", "127.0.0.1:1"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("another address: got %v, want ECONNREFUSED", err)
	}
	_ = ln.Close()
	if _, err := ln.Dial(context.Background(), "tcp", ln.Addr().String()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a closed listener: got %v, want ECONNREFUSED", err)
	}
}
