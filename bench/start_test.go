//go:build linux

package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkCLIStart measures what a person feels at every command and at
// every TAB of shell completion, which runs the binary: the time from
// start to exit and the peak RSS of creative for --version, help and a
// completion, and of creative-cloud, the helper that bucket commands are
// handed to, for --version. The floor is an empty Go program. The
// binaries are built as releases are (CGO_ENABLED=0, creative-cloud with
// -tags disable_grpc_modules).
//
// A child's peak RSS on Linux is at least that of the process that
// started it (the child shares or copies its memory until exec), so the
// runs are started by a small launcher, not by this test binary: the
// floor's peak is the launcher's own, and a figure near it means "no
// more than that".
func BenchmarkCLIStart(b *testing.B) {
	dir := b.TempDir()
	writeModule(b, filepath.Join(dir, "src", "empty"), "package main\n\nfunc main() {}\n")
	writeModule(b, filepath.Join(dir, "src", "launch"), launcher)
	for _, m := range []struct{ src, out string }{
		{filepath.Join(dir, "src", "empty"), "empty"},
		{filepath.Join(dir, "src", "launch"), "launch"},
		{"../cmd/creative", "creative"},
		{"../cmd/creative/creative-cloud", "creative-cloud"},
	} {
		cmd := exec.Command("go", "build", "-tags", "disable_grpc_modules", "-o", filepath.Join(dir, m.out), ".")
		cmd.Dir, cmd.Env = m.src, append(os.Environ(), "CGO_ENABLED=0")
		if text, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", m.src, err, text)
		}
	}

	var floor float64 // the floor's time a start, measured first
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"floor", []string{"empty"}},
		{"version", []string{"creative", "--version"}},
		{"help", []string{"creative", "help"}},
		{"complete", []string{"creative", "__complete", "image", ""}},
		{"cloud-version", []string{"creative-cloud", "--version"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			args := append([]string{fmt.Sprint(b.N), filepath.Join(dir, bc.args[0])}, bc.args[1:]...)
			out, err := exec.Command(filepath.Join(dir, "launch"), args...).Output()
			if err != nil {
				b.Fatalf("%v: %v", bc.args, err)
			}
			var ns, peakKiB float64
			if _, err := fmt.Sscan(string(out), &ns, &peakKiB); err != nil {
				b.Fatalf("launcher said %q: %v", out, err)
			}
			b.ReportMetric(ns/1e6, "ms/start")
			b.ReportMetric(peakKiB/1024, "peak-MiB")
			if bc.name == "floor" {
				floor = ns
			} else if floor > 0 {
				b.ReportMetric(ns/floor, "x-floor")
			}
		})
	}
}

// launcher runs a command n times, its output discarded, and prints the
// mean nanoseconds from start to exit and the largest peak RSS in KiB.
const launcher = `package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	var total time.Duration
	var peak int64
	for range max(n, 1) {
		start := time.Now()
		cmd := exec.Command(os.Args[2], os.Args[3:]...)
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		total += time.Since(start)
		peak = max(peak, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	}
	fmt.Println(int64(total)/int64(max(n, 1)), peak)
}
`

// writeModule writes a module of one main.go into dir.
func writeModule(b *testing.B, dir, main string) {
	b.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for name, text := range map[string]string{"go.mod": "module " + filepath.Base(dir) + "\n\ngo 1.25\n", "main.go": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
