//go:build unix

package pgledger

import (
	"context"
	"strings"
	"testing"
	"time"
)

// No error of Open names the URL's password, however the URL is wrong.
func TestAttackOpenErrorsNeverNameThePassword(t *testing.T) {
	const pw = "s3cr3tPW"
	for _, dsn := range []string{
		"postgres://u:" + pw + "@127.0.0.1:1/db?connect_timeout=1",
		"postgres://u:" + pw + "@127.0.0.1:notaport/db",
		"postgres://u@127.0.0.1:1/db?connect_timeout=1&PassWord=" + pw,
		"postgres://u@127.0.0.1:1/db?sslmode=bogus&sslpassword=" + pw,
		"postgres://u@127.0.0.1:1/db?sslmode=bogus&pass%77ord=" + pw,
		"postgres://u:" + pw + "@127.0.0.1:1/db?sslmode=bogus",
		"postgres://u:" + pw + "@127.0.0.1:1/db?connect_timeout=abc",
		"postgres://u:" + pw + "@[::1/db",
		"postgres://u:" + pw + "#x@127.0.0.1:1/db",
		"postgres://u:s3cr%33tPW@127.0.0.1:1/db?connect_timeout=1",
		"postgres://u:" + pw + "@127.0.0.1:1/db?connect_timeout=1&sslmode=verify-full&sslrootcert=/nonexistent",
		"postgres://u:" + pw + "@127.0.0.1:1/db?connect_timeout=1&service=nosuch",
		"postgres://u:" + pw + "@127.0.0.1:1/db?connect_timeout=1&sslkey=/nonexistent&sslcert=/nonexistent",
		"postgres://u:" + pw + "@/db?host=/nonexistent&connect_timeout=1",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		l, err := Open(ctx, dsn)
		cancel()
		if err == nil {
			_ = l.Close()
			t.Errorf("%s: opened", dsn)
			continue
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "s3cr%33tPW") {
			t.Errorf("the error names the password: %v", err)
		}
	}
}
