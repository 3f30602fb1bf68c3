package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestMain lets the test binary serve as the example's worker process, as
// the built command does: run starts os.Executable() with "worker".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		if err := worker(context.Background(), os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "sharedquota worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startRedis starts Debian's redis-server on 127.0.0.1, with nothing saved
// to disk, and stops it by its PID when the test ends.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server not found (bash .ci/run installs it: apt-get install redis-server)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return addr
		}
		select {
		case err := <-exited:
			t.Fatalf("redis-server exited: %v\n%s", err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not answer PING on %s within 10 s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestThreeWorkersShareOneQuota: three processes of 20 calls each, one
// quota of 10 calls a second in Redis. Every call arrives, and the service
// sees the fleet's rate, not three workers' worth of it.
func TestThreeWorkersShareOneQuota(t *testing.T) {
	addr := startRedis(t)
	c := config{redis: addr, workers: 3, calls: 20, rate: 10, burst: 1}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rep, err := run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	if got := len(rep.arrivals); got != c.workers*c.calls {
		t.Fatalf("the service saw %d calls, want %d", got, c.workers*c.calls)
	}
	for i, w := range rep.workers {
		if !strings.Contains(w, fmt.Sprintf("%d calls in", c.calls)) {
			t.Errorf("worker %d: %q, want %d calls made", i+1, w, c.calls)
		}
	}
	// 59 calls after the first at 10 a second take 5.9 s: three workers
	// each on a quota of their own would take a third of that.
	if r := rep.perSecond(); r > float64(c.rate)*1.1 || r < float64(c.rate)*0.7 {
		t.Errorf("the service saw %.2f calls/s, want about %d", r, c.rate)
	}
	if most := rep.busiestSecond(); most > c.rate+c.burst {
		t.Errorf("%d calls arrived within one second, want at most %d", most, c.rate+c.burst)
	}
}
