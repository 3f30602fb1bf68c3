package pgledger

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A URL that Open refuses, or cannot reach, is named in the error without
// any password: not in an opaque URL (postgres: without //), a fragment,
// or the sslpassword of the client's key.
func TestOpenNamesNoPassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres:app:s3cretpw@db.internal/creative",
		"postgresql:/app:s3cretpw@db.internal/creative",
		"postgres://app:s3cretpw@127.0.0.1:1/creative#s3cretpw",
		"postgres://app@127.0.0.1:1/creative?sslpassword=s3cretpw&connect_timeout=5",
		"postgres://app@127.0.0.1:1/creative?PASSWORD=s3cretpw&connect_timeout=5",
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		l, err := Open(ctx, dsn)
		cancel()
		if err == nil {
			l.Close()
			t.Errorf("Open(%s) = nil error", redact(dsn))
			continue
		}
		if strings.Contains(err.Error(), "s3cretpw") {
			t.Errorf("Open: the error holds the password: %v", err)
		}
	}
}
