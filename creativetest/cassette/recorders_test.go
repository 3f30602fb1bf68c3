package cassette_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
)

// recorderEnv, set, makes TestOneRecorderProcess a recorder of
// TestManyRecordersOneCassette: the cassette's folder, the service's base
// URL and key, and the letter's job role, tab-separated.
const recorderEnv = "CASSETTE_TEST_RECORDER"

func letter(role string) creative.CoverLetterRequest {
	return creative.CoverLetterRequest{JobRole: role, JobSkills: "go", Language: "English", Tone: "formal"}
}

// TestOneRecorderProcess is one recorder process of
// TestManyRecordersOneCassette; run alone, it does nothing.
func TestOneRecorderProcess(t *testing.T) {
	spec := os.Getenv(recorderEnv)
	if spec == "" {
		t.Skip("a recorder process of TestManyRecordersOneCassette")
	}
	f := strings.Split(spec, "\t")
	cas, err := cassette.Open(f[0], cassette.RecordMissing, &cassette.Options{IgnoreEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := creative.New(creative.WithBaseURL(f[1]), creative.WithAccessKey(f[2]), creative.WithMaxRetries(0), cas.Option())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoverLetter(context.Background(), letter(f[3])); err != nil {
		t.Fatal(err)
	}
	if err := cas.Close(); err != nil {
		t.Fatal(err)
	}
}

// Recorders in several processes at once, each with record-missing, into
// one cassette folder: they hold their calls at the service together (it
// answers none until all three arrived), each appends its interaction to
// the index under the folder's lock, and none rewrites the index or
// deletes a body when it stops. Three paid calls, counted at the fake,
// leave three lines, and each of the three replays, with no request.
func TestManyRecordersOneCassette(t *testing.T) {
	if os.Getenv(recorderEnv) != "" {
		t.Skip("this is a recorder process")
	}
	const recorders = 3
	var paid atomic.Int64
	together := make(chan struct{})
	var once sync.Once
	srv := creativetest.Start(t)
	srv.Handle("text/writer-tool", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if paid.Add(1) == recorders {
			once.Do(func() { close(together) })
		}
		select {
		case <-together:
		case <-time.After(30 * time.Second): // generous: the processes start on a shared machine
		}
		role := "?"
		if i := strings.Index(string(body), "role "); i >= 0 {
			role = string(body[i : i+len("role 1")])
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"success":true,"message":"ok","data":{"language":"English","useCase":"CoverLetter","word_count":2,"text":{"choices":[{"text":"letter for %s","index":0,"word_count":2}]}}}`, role)
	})
	dir := filepath.Join(t.TempDir(), "shared")
	var wg sync.WaitGroup
	outs := make([][]byte, recorders)
	errs := make([]error, recorders)
	for i := range recorders {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestOneRecorderProcess$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), recorderEnv+"="+strings.Join([]string{dir, srv.URL, srv.AccessKey, fmt.Sprintf("role %d", i+1)}, "\t"),
				cassette.EnvMode+"=", creative.EnvAccessKey+"=")
			outs[i], errs[i] = cmd.CombinedOutput()
		})
	}
	wg.Wait()
	for i := range recorders {
		if errs[i] != nil || !strings.Contains(string(outs[i]), "--- PASS: TestOneRecorderProcess") {
			t.Fatalf("recorder %d: %v\n%s", i+1, errs[i], outs[i])
		}
	}
	if n := paid.Load(); n != recorders {
		t.Fatalf("the service was paid %d times, want %d", n, recorders)
	}
	index, err := os.ReadFile(filepath.Join(dir, "cassette.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(index), "\n"), "\n")
	if len(lines) != recorders {
		t.Fatalf("the index holds %d lines, want %d:\n%s", len(lines), recorders, index)
	}
	t.Setenv(cassette.EnvMode, "")
	var sent atomic.Int64
	rep := open(t, dir, cassette.Replay, nil)
	c := offline(t, rep, &sent)
	for i := range recorders {
		res, err := c.CoverLetter(context.Background(), letter(fmt.Sprintf("role %d", i+1)))
		if err != nil {
			t.Errorf("replay %d: %v", i+1, err)
			continue
		}
		if want := fmt.Sprintf("letter for role %d", i+1); res.Text() != want {
			t.Errorf("replay %d gave %q, want %q", i+1, res.Text(), want)
		}
	}
	if sent.Load() != 0 {
		t.Errorf("%d requests reached the network in replay", sent.Load())
	}
}
