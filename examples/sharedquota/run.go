package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/ids"
)

// config is one run of the fleet.
type config struct {
	redis          string
	workers, calls int
	rate, burst    int
}

// report is what the service saw over a run, and what each worker did.
type report struct {
	config
	arrivals []time.Time // when each call arrived at the service, in order
	workers  []string    // each worker's own account, one line each
}

// span is the time from the first call's arrival to the last's.
func (r *report) span() time.Duration {
	if len(r.arrivals) < 2 {
		return 0
	}
	return r.arrivals[len(r.arrivals)-1].Sub(r.arrivals[0])
}

// perSecond is the rate the service saw: calls after the first over the
// span.
func (r *report) perSecond() float64 {
	if r.span() <= 0 {
		return 0
	}
	return float64(len(r.arrivals)-1) / r.span().Seconds()
}

// busiestSecond is the most calls that arrived within any one second.
func (r *report) busiestSecond() int {
	most := 0
	j := 0
	for i, t := range r.arrivals {
		for t.Sub(r.arrivals[j]) >= time.Second {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

func (r *report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d workers, %d calls each, one quota of %d calls/s (burst %d) in Redis\n", r.config.workers, r.calls, r.rate, r.burst)
	for _, w := range r.workers {
		fmt.Fprintln(&b, w)
	}
	fmt.Fprintf(&b, "the service saw %d calls in %.2fs: %.2f calls/s, at most %d in any one second\n",
		len(r.arrivals), r.span().Seconds(), r.perSecond(), r.busiestSecond())
	return b.String()
}

// run starts the fake service behind a counter, starts c.workers worker
// processes that share one quota in Redis, waits for them and reports what
// the service saw.
func run(ctx context.Context, c config) (*report, error) {
	fake := creativetest.NewServer()
	defer fake.Close()
	front, err := newCounter(fake.URL)
	if err != nil {
		return nil, err
	}
	defer front.close()

	var r [8]byte
	_, _ = rand.Read(r[:])
	key := "sharedquota:" + hex.EncodeToString(r[:]) // a fresh quota for this run
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	outs := make([]bytes.Buffer, c.workers)
	cmds := make([]*exec.Cmd, c.workers)
	for i := range cmds {
		cmd := exec.CommandContext(ctx, self, "worker",
			"-name", fmt.Sprintf("worker %d", i+1), "-redis", c.redis, "-key", key,
			"-calls", fmt.Sprint(c.calls), "-rate", fmt.Sprint(c.rate), "-burst", fmt.Sprint(c.burst))
		// The key goes by the environment, never on a command line that
		// any user of the machine can read.
		cmd.Env = append(os.Environ(), creative.EnvBaseURL+"="+front.url, creative.EnvAccessKey+"="+fake.AccessKey)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		cmds[i] = cmd
	}
	var errs []error
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("worker %d: %w: %s", i+1, err, outs[i].String()))
		}
	}
	rep := &report{config: c, arrivals: front.times()}
	for i := range outs {
		rep.workers = append(rep.workers, strings.TrimSpace(outs[i].String()))
	}
	return rep, errors.Join(errs...)
}

// worker makes its calls, each paced by the shared quota, and prints how
// many it made and for how long.
func worker(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	name := fs.String("name", "worker", "name in the report")
	addr := fs.String("redis", "127.0.0.1:6379", "Redis address")
	key := fs.String("key", "sharedquota", "the quota's key in Redis")
	calls := fs.Int("calls", 20, "calls to make")
	perSecond := fs.Int("rate", 10, "calls per second for the whole fleet")
	burst := fs.Int("burst", 1, "calls the fleet may make at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: *addr})
	defer rdb.Close()
	client, err := creative.New(creative.WithRateLimiter(newRedisLimiter(rdb, *key, *perSecond, *burst)))
	if err != nil {
		return err
	}
	start := time.Now()
	for i := range *calls {
		_, err := client.TextToSpeech(ctx, creative.TextToSpeechRequest{
			Prompt: fmt.Sprintf("%s, call %d", *name, i+1), VoiceID: ids.VoiceFemale1,
		})
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%s: %d calls in %.2fs\n", *name, *calls, time.Since(start).Seconds())
	return nil
}

// counter is the service as the fleet reaches it: it notes when each call
// arrives (its body read to the end) and hands it to the fake.
type counter struct {
	url string
	srv *http.Server
	mu  sync.Mutex
	at  []time.Time
}

func newCounter(target string) (*counter, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &counter{url: "http://" + l.Addr().String()}
	proxy := httputil.NewSingleHostReverseProxy(u)
	c.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/files/") {
			c.mu.Lock()
			c.at = append(c.at, time.Now())
			c.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = c.srv.Serve(l) }()
	return c, nil
}

func (c *counter) times() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.at...)
}

func (c *counter) close() { _ = c.srv.Close() }
