package bucket

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/creativegen/creative-go/cmd/creative/internal/s3test"
)

// Environment of the child process that BenchmarkStream1GiB measures.
const (
	streamURLEnv   = "CREATIVE_STREAM_URL"
	streamBytesEnv = "CREATIVE_STREAM_BYTES"
)

// BenchmarkStream1GiB streams 1 GiB through Store.NewWriter to a real S3
// server, in a child process whose peak RSS is read from the kernel, and
// compares it with the same child streaming 1 MiB: an output is never
// staged whole in memory, so the difference stays within a few parts.
func BenchmarkStream1GiB(b *testing.B) {
	srv := s3test.Start(b)
	for b.Loop() {
		small, _ := streamChild(b, srv, 1<<20)
		mid, _ := streamChild(b, srv, 256<<20)
		large, elapsed := streamChild(b, srv, 1<<30)
		b.Logf("peak RSS: %d MiB streaming 1 MiB, %d MiB streaming 256 MiB, %d MiB streaming 1 GiB", small>>20, mid>>20, large>>20)
		b.ReportMetric(float64(large)/(1<<20), "peak-RSS-MiB")
		b.ReportMetric(float64(large-mid)/(1<<20), "growth-256MiB-to-1GiB-MiB")
		b.ReportMetric(1024/elapsed.Seconds(), "MiB/s")
		// The S3 uploader keeps three parts of 8 MiB, and garbage comes
		// and goes with the collector: measured 83-92 MiB at 256 MiB and
		// 92-108 MiB at 1 GiB (95 MiB at 2 GiB). 192 MiB and 64 MiB are
		// generous bounds that a staged 1 GiB (768 MiB more) would break.
		if large > 192<<20 || large-mid > 64<<20 {
			b.Fatalf("peak RSS %d MiB streaming 1 GiB, %d MiB more than streaming 256 MiB: the output is being staged in memory", large>>20, (large-mid)>>20)
		}
	}
}

// streamChild runs TestStreamChild in a child process that streams n bytes,
// and returns its peak RSS in bytes and how long it took.
func streamChild(b *testing.B, srv *s3test.Server, n int64) (int64, time.Duration) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStreamChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), srv.Env()...)
	cmd.Env = append(cmd.Env, streamURLEnv+"="+srv.URL(fmt.Sprintf("stream%d", n)), streamBytesEnv+"="+strconv.FormatInt(n, 10))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	elapsed := time.Since(start)
	if err != nil {
		b.Fatalf("child streaming %d bytes: %v\n%s", n, err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Skip("peak RSS is not reported on this system")
	}
	return ru.Maxrss << 10, elapsed // Linux reports KiB
}

// TestStreamChild is the child of BenchmarkStream1GiB: it streams the number
// of bytes it is given to the bucket it is given, and checks the object's
// size. Run on its own it has nothing to do.
func TestStreamChild(t *testing.T) {
	u, n := os.Getenv(streamURLEnv), os.Getenv(streamBytesEnv)
	if u == "" {
		t.Skip("the child process of BenchmarkStream1GiB")
	}
	size, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, u)
	w, err := s.NewWriter(t.Context(), "video.mp4", map[string]string{"job": "big"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(w, pattern{}, size); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	attrs, err := s.b.Attributes(t.Context(), "video.mp4")
	if err != nil || attrs.Size != size {
		t.Fatalf("the object has %v bytes (%v), want %d", attrs, err, size)
	}
}

// pattern is an endless reader of bytes that allocates nothing.
type pattern struct{}

func (pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i * 7)
	}
	return len(p), nil
}
