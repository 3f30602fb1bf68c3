//go:build unix

package pgledger

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// silent listens on 127.0.0.1 and accepts connections, saying nothing on
// them, until the test ends.
func silent(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return ln.Addr().String()
}

// A server that accepts and never answers fails Open within its bound (the
// URL's connect_timeout, or 10 s), saying that the ledger did not answer,
// with no password in the error.
func TestOpenOfALedgerThatDoesNotAnswerFailsWithinItsBound(t *testing.T) {
	for _, c := range []struct {
		name  string
		query string
		bound time.Duration
	}{
		{"connect_timeout", "&connect_timeout=1", time.Second},
		{"default", "", 2 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.query == "" {
				was := answerWait
				answerWait = c.bound
				t.Cleanup(func() { answerWait = was })
			}
			ctx, cancel := context.WithTimeout(t.Context(), c.bound+8*time.Second) // the test's own bound
			defer cancel()
			start := time.Now()
			_, err := Open(ctx, "postgres://u:secret@"+silent(t)+"/db?sslmode=disable"+c.query)
			took := time.Since(start)
			require.Error(t, err)
			assert.ErrorContains(t, err, "the ledger did not answer within "+c.bound.String())
			assert.NotContains(t, err.Error(), "secret")
			assert.GreaterOrEqual(t, took, c.bound)
			assert.Less(t, took, c.bound+8*time.Second, "bounded")
		})
	}
}
