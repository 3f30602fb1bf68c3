//go:build linux

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/sqliteledger"
)

// The endless benchmark runs a batch of eight image jobs at concurrency 8
// against a server whose answers never end (an envelope whose base64 goes
// on without a Content-Length), with every default: the figure is the
// child's peak RSS, which the process's answer budget bounds. The server
// runs in the parent, so the child's memory is the batch's alone.

func init() {
	if os.Getenv("BENCH_ENDLESS_CHILD") != "" {
		os.Exit(endlessChild())
	}
}

func endlessChild() int {
	c, err := creative.New(creative.WithBaseURL(os.Getenv("BENCH_ENDLESS_URL")), creative.WithAccessKey(key))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir := os.Getenv("BENCH_ENDLESS_DIR")
	ledger, err := sqliteledger.Open(filepath.Join(dir, "out"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ledger.Close()
	store, err := batch.OpenFolder(filepath.Join(dir, "out"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer store.Close()
	r, err := batch.New(c, ledger, store, batch.Options{Concurrency: 8, Base: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var jobs []batch.Job
	for i := range 8 {
		jobs = append(jobs, batch.Job{Op: "image/text-to-image", Fields: map[string]any{"prompt": fmt.Sprintf("endless %d", i)}})
	}
	ctx := context.Background()
	checked, err := r.Check(ctx, batch.Values(slices.Values(jobs)))
	var res childResult
	if err == nil {
		res.Summary, err = r.Run(ctx, checked)
	}
	if err != nil {
		res.Err = err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

func BenchmarkEndlessAnswers(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"success":true,"data":[{"base64":"`)
		chunk := strings.Repeat("QUFB", 16<<10)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	var peak int64
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), "BENCH_ENDLESS_CHILD=1", "BENCH_ENDLESS_URL="+srv.URL, "BENCH_ENDLESS_DIR="+b.TempDir())
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatal(err)
		}
		var res childResult
		if err := json.Unmarshal(out, &res); err != nil || res.Err != "" || res.Summary.Done != 0 || res.Summary.Jobs != 8 {
			b.Fatalf("%v %q: %+v", err, res.Err, res.Summary)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = max(peak, ru.Maxrss*1024) // kilobytes on Linux
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
	if peak > 1<<30 {
		b.Errorf("peak RSS %d MiB, want at most 1024", peak>>20)
	}
}
