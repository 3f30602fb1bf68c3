// Package s3test starts a real S3-compatible server for tests: versitygw,
// a Go S3 gateway over a local folder, on 127.0.0.1, stopped when the test
// ends. .ci/run installs it from the module proxy; outside CI a machine
// without it skips the tests that need it, and in CI (CI=true) its absence
// fails them.
package s3test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// s3Access and s3Secret are the credentials of the test's own S3 server.
const (
	s3Access = "creative-test-access"
	s3Secret = "creative-test-secret-0123456789"
)

// versitygw finds the S3 gateway that .ci/run installs (VERSITYGW names it,
// or PATH).
func versitygw(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("VERSITYGW"); p != "" {
		return p
	}
	p, err := exec.LookPath("versitygw")
	if err == nil {
		return p
	}
	msg := "versitygw not found on PATH (bash .ci/run installs it: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// A Server is a real S3-compatible server (versitygw over a local folder)
// on 127.0.0.1, started by the test and stopped when it ends.
type Server struct {
	// Endpoint is the server's URL, http://127.0.0.1:port.
	Endpoint string
	// Root is the folder it serves: one subfolder per bucket.
	Root string
}

// Start starts versitygw with one bucket, "creative", and sets, for the
// test, the credentials the AWS SDK reads from the environment.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := versitygw(t)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "creative"), 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--access", s3Access, "--secret", s3Secret, "--port", addr, "posix", root)
	log := &syncBuf{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	waitListening(t, addr, exited, log)
	for _, kv := range [][2]string{
		{"AWS_ACCESS_KEY_ID", s3Access}, {"AWS_SECRET_ACCESS_KEY", s3Secret},
		{"AWS_REGION", "us-east-1"}, {"AWS_EC2_METADATA_DISABLED", "true"},
		{"AWS_CONFIG_FILE", filepath.Join(root, "none")}, {"AWS_SHARED_CREDENTIALS_FILE", filepath.Join(root, "none")},
	} {
		if setenv, ok := t.(interface{ Setenv(k, v string) }); ok {
			setenv.Setenv(kv[0], kv[1])
		}
	}
	return &Server{Endpoint: "http://" + addr, Root: root}
}

// URL names prefix in the server's bucket as an s3:// URL.
func (s *Server) URL(prefix string) string {
	return fmt.Sprintf("s3://creative/%s?endpoint=%s&use_path_style=true&region=us-east-1", prefix, s.Endpoint)
}

// Env is the environment a child process needs to reach the server, as
// KEY=value.
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s3Access, "AWS_SECRET_ACCESS_KEY=" + s3Secret,
		"AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// waitListening waits, for at most 20 s, until addr accepts a connection,
// failing at once if the server exits first.
func waitListening(t testing.TB, addr string, exited <-chan error, log fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("versitygw exited: %v\n%s", err, log)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("versitygw did not listen on %s within 20 s\n%s", addr, log)
}

// syncBuf is a server's output, read by the test while the server writes.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
