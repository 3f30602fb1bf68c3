//go:build unix

package cassette_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
)

// The child's side of TestACrashAfterKCallsKeepsK: it records n calls,
// its mode coming from CREATIVE_RECORD_MODE as in a go test line.
func crashChild(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CASSETTE_CHILD_N"))
	cas, err := cassette.Open(os.Getenv("CASSETTE_CHILD_DIR"), cassette.Replay, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := creative.New(creative.WithBaseURL(os.Getenv("CASSETTE_CHILD_URL")), creative.WithAccessKey(creativetest.DefaultAccessKey),
		creative.WithMaxRetries(0), cas.Option())
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := c.GenerateQR(context.Background(), qrRequest(i)); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("the child was to be killed before its last call ended")
}

func qrRequest(i int) creative.GenerateQRRequest {
	return creative.GenerateQRRequest{URL: "https://example.com/" + strconv.Itoa(i), Prompt: "flowers"}
}

// qrAnswer answers generate-qr as the service does, with a small PNG.
func qrAnswer(w http.ResponseWriter) {
	img := image.NewGray(image.Rect(0, 0, 8, 8))
	img.Set(1, 1, color.White)
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"success":true,"message":"done","data":{"base64":%q}}`, base64.StdEncoding.EncodeToString(b.Bytes()))
}

func TestACrashAfterKCallsKeepsKAndARerunPaysTheRest(t *testing.T) {
	if os.Getenv("CASSETTE_CHILD") == "1" {
		crashChild(t)
		return
	}
	const n, k = 5, 3
	srv := creativetest.Start(t)
	var calls atomic.Int64
	var child atomic.Pointer[os.Process]
	var killAt atomic.Int64
	killAt.Store(k + 1)
	srv.Handle("image/generate-qr", func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == killAt.Load() {
			// The service has the (k+1)th call; its caller dies before
			// the answer comes.
			_ = child.Load().Kill() // SIGKILL
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		qrAnswer(w)
	})
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestACrashAfterKCallsKeepsKAndARerunPaysTheRest$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CASSETTE_CHILD=1", "CASSETTE_CHILD_N="+strconv.Itoa(n), "CASSETTE_CHILD_DIR="+dir,
		"CASSETTE_CHILD_URL="+srv.URL, cassette.EnvMode+"=record")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Store(cmd.Process)
	err := cmd.Wait()
	if st, ok := cmd.ProcessState.Sys().(interface{ Signaled() bool }); !ok || !st.Signaled() {
		t.Fatalf("the child was not killed: %v\n%s", err, out.String())
	}
	// Calls are counted by the fake's handler as they arrive, before the
	// kill: the last one's record in srv.Requests may come later.
	firstRun := calls.Load()
	lines := 0
	f, err := os.Open(filepath.Join(dir, "cassette.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines++
	}
	f.Close()
	if lines != k {
		t.Fatalf("the killed recorder kept %d recordings, want %d", lines, k)
	}

	// The same line, in record-missing: the k recorded calls replay, the
	// rest are paid.
	killAt.Store(-1)
	calls.Store(0)
	rerun := open(t, dir, cassette.RecordMissing, srv)
	c := srv.Client(rerun.Option(), creative.WithMaxRetries(0))
	for i := range n {
		if _, err := c.GenerateQR(context.Background(), qrRequest(i)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if paid := calls.Load(); firstRun != k+1 || paid != n-k || rerun.Replayed() != k {
		t.Errorf("the killed run reached the service %d times; the rerun paid %d calls and replayed %d, want %d, %d and %d", firstRun, paid, rerun.Replayed(), k+1, n-k, k)
	}
	t.Logf("n=%d k=%d: the killed run reached the service %d times (k answered, 1 in flight when killed) and kept %d; the rerun in record-missing paid %d and replayed %d",
		n, k, firstRun, lines, calls.Load(), rerun.Replayed())
}
