//go:build unix

// Package pgtest starts a throwaway PostgreSQL server for tests, from the
// server binaries on the machine (initdb and postgres: $PGBIN, then
// $PATH, then /usr/lib/postgresql/*/bin), in a temporary folder of its
// own, on a free port of 127.0.0.1, with its unix socket in that folder.
// As root it runs the server as the postgres user, since PostgreSQL
// refuses to run as root.
//
// [Database] gives each test a fresh database on one server shared by the
// test binary (started on first use, stopped by [Main]); [Start] gives a
// test a server of its own, which it may stop and restart. Where no
// binaries are found the test is skipped with one line, except with
// CI=true, where it fails.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startTimeout bounds a server's start (initdb, then accepting
// connections) on a loaded machine.
const startTimeout = 2 * time.Minute

// A Server is a PostgreSQL server started by a test: its data folder is
// temporary and its only user, postgres, logs in without a password from
// 127.0.0.1.
type Server struct {
	bin  string // folder of initdb and postgres
	dir  string // temporary folder: data, socket, log
	port int
	cred *syscall.Credential // the postgres user's, when run as root

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// ErrNoServer reports that no PostgreSQL server binaries were found.
var ErrNoServer = errors.New("pgtest: no PostgreSQL server binaries (initdb, postgres) in $PGBIN, $PATH or /usr/lib/postgresql/*/bin: install Debian's postgresql package")

// binDir finds the folder that holds initdb and postgres.
func binDir() (string, error) {
	var candidates []string
	if d := os.Getenv("PGBIN"); d != "" {
		candidates = append(candidates, d)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			candidates = append(candidates, filepath.Dir(real))
		}
	}
	versions, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(versions, func(a, b string) int { return version(b) - version(a) })
	candidates = append(candidates, versions...)
	for _, d := range candidates {
		if executable(filepath.Join(d, "initdb")) && executable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", ErrNoServer
}

// version reads the major version of /usr/lib/postgresql/<v>/bin.
func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// unavailable skips the test (fails it where CI=true) for want of a server.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(err)
	}
	t.Skip(err)
}

// Start starts a server of the test's own, stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := New()
	if errors.Is(err, ErrNoServer) {
		unavailable(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// New initialises a data folder and starts a server on it. Close stops
// it and removes the folder. It returns [ErrNoServer] where no binaries
// are found.
func New() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		if s.cred, err = postgresUser(); err != nil {
			return nil, err
		}
	}
	if s.dir, err = os.MkdirTemp("", "pgtest-"); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if err := s.init(); err != nil {
		_ = os.RemoveAll(s.dir)
		return nil, err
	}
	for try := 0; ; try++ {
		if s.port, err = freePort(); err != nil {
			break
		}
		if err = s.Restart(); err == nil || try == 4 || !s.portTaken() {
			break
		}
	}
	if err != nil {
		_ = os.RemoveAll(s.dir)
		return nil, err
	}
	return s, nil
}

// postgresUser is the credential the server runs under when the test
// runs as root.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL refuses root: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// command runs a server binary as the server's user.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	return cmd
}

// init makes the data folder: trust from 127.0.0.1 and the socket, no
// fsync (the tests crash processes, never the machine).
func (s *Server) init() error {
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	cmd := s.command("initdb", "-D", s.data(), "-U", "postgres", "--auth=trust",
		"--no-sync", "-E", "UTF8", "--locale=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	return nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// LogPath is the server's log file.
func (s *Server) LogPath() string { return filepath.Join(s.dir, "postgres.log") }

// Addr is the server's address, 127.0.0.1:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the connection URL of database db (postgres when empty).
func (s *Server) URL(db string) string {
	if db == "" {
		db = "postgres"
	}
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: s.Addr(), Path: "/" + db,
		RawQuery: "sslmode=disable"}
	return u.String()
}

// Restart starts the server if it is stopped (by [Server.Stop] or
// [Server.Crash]) and waits until it accepts connections.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	logf, err := os.OpenFile(s.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	cmd := s.command("postgres", "-D", s.data(), "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.dir,
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=300",
		"-c", "shared_buffers=32MB", "-c", "log_min_messages=warning")
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	if err := s.waitReady(exited); err != nil {
		s.stopLocked(syscall.SIGQUIT)
		return err
	}
	return nil
}

// waitReady waits until the server accepts a connection.
func (s *Server) waitReady(exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		c, err := pgx.Connect(ctx, s.URL(""))
		if err == nil {
			return c.Close(ctx)
		}
		select {
		case <-exited:
			return fmt.Errorf("pgtest: postgres exited at start: %s", s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("pgtest: postgres not accepting connections after %v: %w: %s", startTimeout, err, s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// portTaken says whether the last start failed for its port.
func (s *Server) portTaken() bool {
	return bytes.Contains([]byte(s.logTail()), []byte("could not bind"))
}

// logTail is the end of the server's log, for an error.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.LogPath())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Stop shuts the server down (fast: sessions are ended, what is
// committed stays) and waits until it has exited.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked(syscall.SIGINT)
}

// Crash stops the server at once, as a crash does (immediate shutdown:
// it recovers from its WAL at the next start), and waits until it has
// exited.
func (s *Server) Crash() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked(syscall.SIGQUIT)
}

func (s *Server) stopLocked(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(startTimeout):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	s.cmd = nil
}

// Close stops the server and removes its folder.
func (s *Server) Close() error {
	s.Stop()
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	return nil
}

// freePort is a port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// The server a test binary shares.
var (
	sharedOnce sync.Once
	shared     *Server
	sharedErr  error
	dbSeq      atomic.Int64
)

// Shared is the server the test binary shares, started on first use and
// stopped by [Main].
func Shared(t testing.TB) *Server {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = New() })
	if errors.Is(sharedErr, ErrNoServer) {
		unavailable(t, sharedErr)
	}
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// Database creates a fresh database on the shared server and returns its
// URL; the database is dropped when the test ends.
func Database(t testing.TB) string {
	t.Helper()
	return Shared(t).Database(t)
}

// Database creates a fresh database on s and returns its URL; the
// database is dropped when the test ends.
func (s *Server) Database(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	s.exec(t, "CREATE DATABASE "+name)
	t.Cleanup(func() { s.exec(t, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	return s.URL(name)
}

func (s *Server) exec(t testing.TB, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := pgx.Connect(ctx, s.URL(""))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// Main runs a package's tests and then stops the shared server, if they
// started it: call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}
