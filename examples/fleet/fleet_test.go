package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/creativegen/creative-go/creativetest"
)

// job is the part of a Kubernetes Job manifest the test reads.
type job struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Parallelism          int    `yaml:"parallelism"`
		Completions          int    `yaml:"completions"`
		CompletionMode       string `yaml:"completionMode"`
		BackoffLimit         int    `yaml:"backoffLimit"`
		BackoffLimitPerIndex int    `yaml:"backoffLimitPerIndex"`
		Template             struct {
			Spec struct {
				Containers []struct {
					Command []string `yaml:"command"`
					Env     []envVar `yaml:"env"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// envVar is one variable of a container's env.
type envVar struct {
	Name      string         `yaml:"name"`
	Value     string         `yaml:"value"`
	ValueFrom map[string]any `yaml:"valueFrom"`
}

// creativeBin builds the command line from this clone, once per test run,
// as the image holds it: creative and creative-cloud in one folder.
var creativeBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "creative-fleet-bin")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), ".", "./creative-cloud")
	cmd.Dir = filepath.Join("..", "..", "cmd", "creative")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/creative/...: %v\n%s", err, out)
	}
	return filepath.Join(dir, "creative"), nil
})

func buildCreative(t *testing.T) string {
	t.Helper()
	bin, err := creativeBin()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bin, err := creativeBin(); err == nil {
		_ = os.RemoveAll(filepath.Dir(bin))
	}
	os.Exit(code)
}

// jobsFile writes n text-to-speech jobs, each with its id, and returns its
// path.
func jobsFile(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"op":"audio/text-to-speech","id":"job-%02d","prompt":"line %d","voiceId":"female 1"}`+"\n", i, i)
	}
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// doneJobs reads the ids of the jobs results.jsonl under out records ok.
func doneJobs(t *testing.T, out string) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(out, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	done := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			ID    string `json:"id"`
			State string `json:"state"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("results.jsonl: %v: %s", err, sc.Bytes())
		}
		if r.State == "done" {
			done[r.ID]++
		}
	}
	return done
}

var kubeVar = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) as Kubernetes does in a container's command.
func expand(s string, env map[string]string) string {
	return kubeVar.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

func readJob(t *testing.T, name string) job {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var j job
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(false)
	if err := dec.Decode(&j); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if j.Kind != "Job" || len(j.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%s: want a Job with one container, got kind %q with %d", name, j.Kind, len(j.Spec.Template.Spec.Containers))
	}
	return j
}

// runPods runs the Job as its controller would: one process per pod at
// once, with the manifest's env ($(VAR) expanded), JOBS and OUT pointed at
// the test's files and the service's secrets at the fake. A pod that fails
// is started again once the others of its round have ended (the
// controller's back-off is seconds, longer than the calls in flight), and
// the Job fails when its failures pass backoffLimit (backoffLimitPerIndex
// for an Indexed Job's index). It returns the restarts.
func runPods(t *testing.T, j job, bin string, extra map[string]string) int {
	t.Helper()
	c := j.Spec.Template.Spec.Containers[0]
	if c.Command[0] != "creative" {
		t.Fatalf("the container runs %q, want creative", c.Command[0])
	}
	limit, perIndex := j.Spec.BackoffLimit, j.Spec.CompletionMode == "Indexed"
	if perIndex {
		limit = j.Spec.BackoffLimitPerIndex
	}
	pending := make([]int, j.Spec.Parallelism)
	for i := range pending {
		pending[i] = i
	}
	failures := map[int]int{} // by index, or all under 0
	restarts := 0
	for len(pending) > 0 {
		var mu sync.Mutex
		var failed []int
		var wg sync.WaitGroup
		for _, pod := range pending {
			cmd, args := podCommand(t, c.Command, c.Env, extra, perIndex, pod, bin)
			wg.Go(func() {
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Logf("pod %d: creative %s: %v\n%s", pod, strings.Join(args, " "), err, out)
					mu.Lock()
					failed = append(failed, pod)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		for _, pod := range failed {
			key := 0
			if perIndex {
				key = pod
			}
			if failures[key]++; failures[key] > limit {
				t.Fatalf("the Job fails: %d failures of %s pod, over its back-off limit %d", failures[key], map[bool]string{true: "one index's", false: "its"}[perIndex], limit)
			}
		}
		restarts += len(failed)
		pending = failed
	}
	return restarts
}

// podCommand is the container's command for one pod.
func podCommand(t *testing.T, command []string, envs []envVar, extra map[string]string, indexed bool, pod int, bin string) (*exec.Cmd, []string) {
	t.Helper()
	env := map[string]string{}
	for _, e := range envs {
		if e.ValueFrom != nil {
			if e.Value != "" {
				t.Errorf("%s has both a value and valueFrom", e.Name)
			}
			continue // secrets: the test sets the ones it needs
		}
		env[e.Name] = e.Value
	}
	for k, v := range extra {
		env[k] = v
	}
	if indexed {
		env["JOB_COMPLETION_INDEX"] = fmt.Sprint(pod)
	}
	args := make([]string, len(command)-1)
	for i, a := range command[1:] {
		args[i] = expand(a, env)
		if kubeVar.MatchString(args[i]) {
			t.Fatalf("%q refers to a variable the pod does not have", a)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd, args
}

// TestManifestsRun parses each manifest, checks what it promises (a work
// queue with no index, an Indexed Job with one shard per pod, secrets from
// Secrets and bucket URLs for the jobs file and --out), and runs its
// command against the fake service.
func TestManifestsRun(t *testing.T) {
	bin := buildCreative(t)
	const jobs = 24
	for _, tc := range []struct {
		file    string
		indexed bool
	}{
		{"job.yaml", false},
		{"indexed-job.yaml", true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			j := readJob(t, tc.file)
			if j.Spec.Parallelism < 2 {
				t.Fatalf("parallelism %d: want a fleet", j.Spec.Parallelism)
			}
			c := j.Spec.Template.Spec.Containers[0]
			cmdline := strings.Join(c.Command, " ")
			if tc.indexed {
				if j.Spec.CompletionMode != "Indexed" || j.Spec.Completions != j.Spec.Parallelism {
					t.Fatalf("want an Indexed Job with one completion per pod, got %q, %d completions", j.Spec.CompletionMode, j.Spec.Completions)
				}
				if want := fmt.Sprintf("--shard $(JOB_COMPLETION_INDEX)/%d", j.Spec.Completions); !strings.Contains(cmdline, want) {
					t.Fatalf("the command %q does not shard by %q", cmdline, want)
				}
			} else if j.Spec.CompletionMode != "" || j.Spec.Completions != 0 || strings.Contains(cmdline, "--shard") {
				t.Fatalf("want a work queue: parallelism only, no completions, index or shard; got %q", cmdline)
			}
			secrets := map[string]bool{}
			for _, e := range c.Env {
				if e.ValueFrom != nil {
					secrets[e.Name] = true
				} else if !strings.HasPrefix(e.Value, "s3://") {
					t.Errorf("%s = %q: want a bucket URL", e.Name, e.Value)
				}
			}
			for _, name := range []string{"CREATIVE_ACCESS_KEY", "CREATIVE_BASE_URL", "CREATIVE_LEDGER", "AWS_SECRET_ACCESS_KEY"} {
				if !secrets[name] {
					t.Errorf("%s does not come from a Secret", name)
				}
			}

			fake := creativetest.NewServer()
			defer fake.Close()
			out := filepath.Join(t.TempDir(), "out")
			restarts := runPods(t, j, bin, map[string]string{
				"JOBS": jobsFile(t, jobs), "OUT": out,
				"CREATIVE_BASE_URL": fake.URL, "CREATIVE_ACCESS_KEY": fake.AccessKey,
			})
			t.Logf("%d pods, %d restarted", j.Spec.Parallelism, restarts)
			checkDone(t, out, fake, jobs)
		})
	}
}

// TestLoopRuns runs the shell loop of processes on one machine.
func TestLoopRuns(t *testing.T) {
	bin := buildCreative(t)
	const jobs = 24
	fake := creativetest.NewServer()
	defer fake.Close()
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command("sh", "loop.sh")
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"N=3", "JOBS="+jobsFile(t, jobs), "OUT="+out,
		"CREATIVE_BASE_URL="+fake.URL, "CREATIVE_ACCESS_KEY="+fake.AccessKey)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("loop.sh: %v\n%s", err, b)
	}
	checkDone(t, out, fake, jobs)
}

// checkDone checks that every job is recorded done under out, and that the
// service saw one call per job: the workers claim the jobs they run, so
// none is paid twice, whether they split the file by shards or not.
func checkDone(t *testing.T, out string, fake *creativetest.Server, jobs int) {
	t.Helper()
	done := doneJobs(t, out)
	for i := range jobs {
		if id := fmt.Sprintf("job-%02d", i); done[id] == 0 {
			t.Errorf("%s is not recorded done", id)
		}
	}
	calls := fake.Count("audio/text-to-speech")
	t.Logf("%d jobs, %d calls", jobs, calls)
	if calls != jobs {
		t.Errorf("the service saw %d calls for %d jobs", calls, jobs)
	}
}

// TestAWorkerThatEndsWhileAnotherHasAJobInFlightExits0 checks what
// loop.sh and job.yaml say of a worker that finds no job left to start
// while another worker still has one in flight: it leaves that job to the
// other, says so, and exits 0; the other ends it and reports it (here the
// service refuses it, so that one exits 1).
func TestAWorkerThatEndsWhileAnotherHasAJobInFlightExits0(t *testing.T) {
	bin := buildCreative(t)
	fake := creativetest.NewServer()
	defer fake.Close()
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	fake.Handle(creativetest.OpTextToSpeech, func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"success":false,"message":"busy"}`)
	})
	for _, name := range []string{"loop.sh", "job.yaml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		comment := strings.Join(strings.Fields(strings.ReplaceAll(string(b), "\n#", " ")), " ")
		if m := saysOfInFlight.FindStringSubmatch(comment); m == nil || m[1] != "0" {
			t.Errorf("%s does not say that a worker that ends while others have jobs in flight exits 0: %q", name, m)
		}
	}
	jobs, out := jobsFile(t, 1), filepath.Join(t.TempDir(), "out")
	worker := func() *exec.Cmd {
		cmd := exec.Command(bin, "batch", jobs, "--out", out, "--retries", "0")
		cmd.Env = append(os.Environ(), "CREATIVE_BASE_URL="+fake.URL, "CREATIVE_ACCESS_KEY="+fake.AccessKey)
		return cmd
	}
	var firstOut bytes.Buffer
	first := worker()
	first.Stdout, first.Stderr = &firstOut, &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(release)
		err := first.Wait()
		if code := first.ProcessState.ExitCode(); code != 1 {
			t.Errorf("the first worker, whose job the service refused, exited %d (%v), want 1\n%s", code, err, firstOut.Bytes())
		}
		if n := fake.Count(creativetest.OpTextToSpeech); n != 1 {
			t.Errorf("the service saw %d calls, want 1", n)
		}
	}()
	select {
	case <-entered:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the first worker sent nothing\n%s", firstOut.Bytes())
	}
	b, err := worker().CombinedOutput()
	if err != nil {
		t.Fatalf("the second worker, with the only job in flight on the first: %v, want exit status 0\n%s", err, b)
	}
	if !strings.Contains(string(b), "1 in flight on another worker that is still running") {
		t.Errorf("the second worker's summary does not say where the job is:\n%s", b)
	}
}

// saysOfInFlight finds, in a manifest's or script's comment, the exit
// status it gives a worker that ends while others have jobs in flight.
var saysOfInFlight = regexp.MustCompile(`in flight[^.:]*? exits (\d)`)
