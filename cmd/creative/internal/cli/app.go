package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
	"github.com/creativegen/creative-go/internal/fake"
)

// Exit statuses.
const (
	exitOK        = 0
	exitAPI       = 1   // the service answered with an error, or the network failed
	exitUsage     = 2   // usage, configuration or validation: nothing was sent
	exitKept      = 3   // paid, and the answer not saved as promised: its links or bytes are kept (see stderr)
	exitInterrupt = 130 // Ctrl-C or SIGTERM, as shells report a SIGINT
	exitAtOnce    = 131 // a second Ctrl-C or SIGTERM ended the process at once
)

// defaultGrace is how long calls and downloads in flight may go on after
// the first Ctrl-C or SIGTERM, well inside the 30 s a container's manager
// waits before it kills.
const defaultGrace = 10 * time.Second

// app is one run of the command, with its streams and environment.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	progress       bool // stderr is a terminal: show progress on it
	stdoutTerminal bool // stdout is a terminal: no binary output on it
	// signals delivers Ctrl-C and SIGTERM; nil when nobody sends them.
	signals <-chan os.Signal
	// sending is set once the command may send a call or download: from
	// then on the first signal gives what is in flight its grace, and
	// before, it ends the process at once (see relaySignals).
	sending atomic.Bool
	// endBy is when, after a signal, the process ends whatever still runs
	// (unix nanoseconds; 0 before a signal): see relaySignals.
	endBy atomic.Int64
	stdin io.Reader // for a jobs file "-"; nil: none
	// buckets opens bucket URLs: nil in creative, which hands a command
	// that names one over to creative-cloud through handOver (nil: none
	// can be run, and such a command is refused).
	buckets  *Buckets
	handOver func() error
	// hc, when set, carries every call and download: in tests, to a fake
	// on an in-memory network, so that a run's waits are virtual.
	hc *http.Client

	g   globals
	con *console // stderr, shared with the progress display
}

// globals are the flags every command takes.
type globals struct {
	baseURL string
	fake    bool
	timeout time.Duration
	retries int
	verbose bool
	links   int // --max-links
	// maxDownload bounds each file an answer links to
	// (--max-download-bytes).
	maxDownload int64
	grace       time.Duration // --grace
}

func (a *app) run(args []string) int {
	a.con = &console{w: a.stderr}
	if err := a.checkCaller(); err != nil {
		fmt.Fprintln(a.con, "creative: "+err.Error())
		return exitUsage
	}
	root := a.commands()
	if args == nil {
		args = []string{}
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	return a.fail(cmd, err)
}

// fail prints err on stderr and returns its exit status.
func (a *app) fail(cmd *cobra.Command, err error) int {
	if code, ok := handedOver(err); ok {
		return code
	}
	if errors.Is(err, cmdutil.ErrInterrupted) {
		if ie, ok := errors.AsType[*interruptedError](err); ok {
			for _, line := range ie.lines() {
				fmt.Fprintln(a.con, cmdutil.Printable(line))
			}
		}
		fmt.Fprintln(a.con, "creative: interrupted")
		return exitInterrupt
	}
	var ran *cmdutil.RanError
	if !errors.As(err, &ran) {
		// cobra found it: an unknown command or flag, a missing flag.
		msg := err.Error()
		if cmd != nil {
			msg += " (see " + cmd.CommandPath() + " --help)"
		}
		fmt.Fprintln(a.con, "creative: "+cmdutil.OneLine(msg))
		return exitUsage
	}
	msg := cmdutil.OneLine(err.Error())
	if !strings.HasPrefix(msg, "creative: ") {
		msg = "creative: " + msg
	}
	fmt.Fprintln(a.con, cmdutil.Printable(msg))
	if errors.Is(err, creative.ErrOutcomeUnknown) {
		fmt.Fprintln(a.con, "creative: the service may have done this work and charged for it; it was not repeated: check before running it again")
	}
	var usage *cmdutil.UsageError
	var invalid *creative.ValidationError
	if errors.As(err, &usage) || errors.As(err, &invalid) {
		return exitUsage
	}
	if kept(err) {
		return exitKept
	}
	return exitAPI
}

// kept reports whether err is a paid answer that was not saved as
// promised and whose links or bytes are kept: a rejected file, a link
// file.
func kept(err error) bool {
	_, rejected := errors.AsType[*rejectedError](err)
	_, links := errors.AsType[*paidLinksError](err)
	return rejected || links
}

// An interruptedError ends a command that a signal stopped: err is what
// the command met (nil when what was in flight ended within the grace),
// and sentNoAnswer says that a call went out and was abandoned with no
// answer: it may have been paid.
type interruptedError struct {
	err          error
	sentNoAnswer bool
	// cutAnswer is the request id of an answer that came and whose
	// streamed bytes were cut off (speech): paid, and not saved.
	cutAnswer string
	// left says what was left and how to go on, when the error does not.
	left string
}

func (e *interruptedError) Error() string {
	if e.err == nil {
		return cmdutil.ErrInterrupted.Error()
	}
	return cmdutil.ErrInterrupted.Error() + ": " + e.err.Error()
}

// Is makes the error match errInterrupted.
func (e *interruptedError) Is(target error) bool { return target == cmdutil.ErrInterrupted }

// Unwrap returns what the command met.
func (e *interruptedError) Unwrap() error { return e.err }

// lines are what is printed before "interrupted": what was left, and how
// to go on.
func (e *interruptedError) lines() []string {
	var out []string
	if e.err != nil && !errors.Is(e.err, context.Canceled) || kept(e.err) {
		msg := cmdutil.OneLine(e.err.Error())
		if !strings.HasPrefix(msg, "creative: ") {
			msg = "creative: " + msg
		}
		out = append(out, msg)
	}
	if e.sentNoAnswer {
		out = append(out, "creative: the call in flight was abandoned after it was sent: the service may have done it and charged for it; check before running it again")
	}
	if e.cutAnswer != "" {
		out = append(out, "creative: the call was answered (request id "+e.cutAnswer+") and paid for; its answer was still streaming when it was abandoned, and is not saved")
	}
	if e.left != "" {
		out = append(out, e.left)
	}
	return out
}

// checkGlobals refuses values of the global flags that cannot work, naming
// the flag, before anything else happens.
func (a *app) checkGlobals() error {
	if a.g.retries < 0 {
		return cmdutil.Usagef("--retries must be 0 or more, got %d", a.g.retries)
	}
	if a.g.grace < 0 {
		return cmdutil.Usagef("--grace must be 0 (abandon at once) or more, got %v", a.g.grace)
	}
	if a.g.maxDownload <= 0 {
		return cmdutil.Usagef("--max-download-bytes must be above 0, got %d", a.g.maxDownload)
	}
	if a.g.timeout < 0 {
		return cmdutil.Usagef("--timeout must be 0 (no bound) or more, got %v", a.g.timeout)
	}
	if a.g.fake && a.g.baseURL != "" {
		return cmdutil.Usagef("--fake and --base-url cannot go together: --fake runs against the built-in fake service, --base-url names a real one")
	}
	if a.g.baseURL == "" {
		a.g.baseURL = a.getenv(creative.EnvBaseURL)
	}
	return nil
}

// downloadOpts are opts, a call's options, for the downloads of its
// answer's links: each bounded to --max-download-bytes.
func (a *app) downloadOpts(opts []creative.Option) []creative.Option {
	return append(opts[:len(opts):len(opts)], creative.WithMaxResponseBytes(a.g.maxDownload))
}

// newClient returns the client the run's calls go through: the built-in
// fake's, or one made from the flags and environment. close releases it.
func (a *app) newClient(extra ...creative.Option) (c *creative.Client, close func(), err error) {
	opts := []creative.Option{creative.WithTimeout(a.g.timeout), creative.WithMaxRetries(a.g.retries), creative.WithUserAgent("creative-cli"), creative.WithMaxLinks(a.g.links)}
	if h := a.logHandler(); h != nil {
		opts = append(opts, creative.WithLogger(slog.New(h)))
	}
	opts = append(opts, extra...)
	cas, err := a.openCassette()
	if err != nil {
		return nil, nil, &cmdutil.UsageError{Msg: err.Error()}
	}
	if cas != nil {
		opts = append(opts, cas.Option())
		defer func() { close = closeCassette(cas, close, err) }()
	}
	if a.hc != nil {
		opts = append(opts, creative.WithHTTPClient(a.hc))
	}
	if a.g.fake {
		srv := fake.NewServer()
		// Said when the first request goes out, so that a mistake found
		// before anything is sent is reported alone.
		var said sync.Once
		banner := creative.WithMiddleware(func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
			said.Do(func() { fmt.Fprintf(a.con, "creative: using the built-in fake service at %s\n", srv.URL) })
			return next(req)
		})
		c, err := creative.New(append([]creative.Option{creative.WithBaseURL(srv.URL), creative.WithAccessKey(srv.AccessKey), banner}, opts...)...)
		if err != nil {
			srv.Close()
			return nil, nil, &cmdutil.UsageError{Msg: err.Error()}
		}
		return c, func() { c.CloseIdleConnections(); srv.Close() }, nil
	}
	key := replayKey(cas, a.getenv(creative.EnvAccessKey))
	if a.g.baseURL == "" && key == "" {
		return nil, nil, cmdutil.Usagef("no base URL and no access key: set %s (or give --base-url) and %s, or try --fake", creative.EnvBaseURL, creative.EnvAccessKey)
	}
	if a.g.baseURL == "" {
		return nil, nil, cmdutil.Usagef("no base URL: set %s or give --base-url (or try --fake)", creative.EnvBaseURL)
	}
	if u, err := url.Parse(a.g.baseURL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, nil, cmdutil.Usagef("the base URL %q (from --base-url or %s) is not an http(s) URL with a host", a.g.baseURL, creative.EnvBaseURL)
	}
	if key == "" {
		return nil, nil, cmdutil.Usagef("no access key: set %s (or try --fake)", creative.EnvAccessKey)
	}
	c, err = creative.New(append([]creative.Option{creative.WithBaseURL(a.g.baseURL), creative.WithAccessKey(key)}, opts...)...)
	if err != nil {
		return nil, nil, &cmdutil.UsageError{Msg: err.Error()}
	}
	return c, c.CloseIdleConnections, nil
}

// logHandler is where the client's records go: stderr with -v, else
// nowhere (nil).
func (a *app) logHandler() slog.Handler {
	if !a.g.verbose {
		return nil
	}
	return slog.NewTextHandler(a.con, &slog.HandlerOptions{Level: slog.LevelDebug})
}

// watchSignals gives a call in flight its grace on the first Ctrl-C or
// SIGTERM: when sent reports that nothing went out yet, cancel is called
// at once; else after --grace, or at a second signal. The returned func
// stops watching and reports the signal, nil when none came.
func (a *app) watchSignals(cancel context.CancelFunc, sent func() bool) (stop func() *signalled) {
	done := make(chan struct{})
	var got atomic.Pointer[signalled]
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-a.signals:
		case <-done:
			return
		}
		sg := &signalled{}
		got.Store(sg)
		a.atLineStart()
		if sent == nil || !sent() {
			cancel()
			return
		}
		fmt.Fprintf(a.con, "creative: stopping: the call in flight gets up to %v to end (--grace); Ctrl-C again to end it now\n", a.g.grace)
		timer := time.NewTimer(a.g.grace)
		defer timer.Stop()
		select {
		case <-timer.C:
			sg.abandoned.Store(true)
			fmt.Fprintln(a.con, "creative: the grace ended: abandoning what is in flight")
		case <-a.signals:
			sg.abandoned.Store(true)
		case <-done:
			return
		}
		cancel()
	}()
	return func() *signalled {
		close(done)
		wg.Wait()
		return got.Load()
	}
}

// signalled is a Ctrl-C or SIGTERM that came during a command.
type signalled struct {
	abandoned atomic.Bool // what was in flight was cut off (the grace ended, or a second signal)
}

// lineStart is what moves a terminal's cursor to the start of its line.
func (a *app) lineStart() string {
	if a.progress {
		return "\r"
	}
	return ""
}

// relaySignals hands the process's signals, from, to the command: before
// the command may send anything (it is reading its input, say from a
// pipe that never ends), a signal ends the process at once with status
// 130; after, the first is handed on (to), and the command gives what is
// in flight its grace; a second ends the process at once with status 131,
// leaving the ledger as it stands: a call in flight stays claimed there
// (maybe paid), an answer's links stay recorded.
//
// Once handed, the process ends at the latest afterGrace past the end of
// the grace, whatever still holds it: a ledger another process keeps
// locked, a disk or a pipe that takes no more bytes; what was in flight
// stands as the command left it (a batch's calls claimed, maybe paid; a
// single command's links in its .link.json file).
func (a *app) relaySignals(from <-chan os.Signal, to chan<- os.Signal, exit func(int)) {
	handed := false
	for s := range from {
		switch {
		case !handed && a.sending.Load():
			handed = true
			a.endBy.Store(time.Now().Add(a.g.grace + afterGrace).UnixNano())
			time.AfterFunc(a.g.grace+afterGrace, func() {
				a.sayAndExit(a.lineStart()+"creative: what was in flight did not end within "+afterGrace.String()+" of the grace's end (a locked ledger, a full disk or a pipe held it): ended now; "+maybePaidWhere, exitInterrupt, exit)
			})
			to <- s
		case !handed:
			a.sayAndExit(a.lineStart()+"creative: interrupted", exitInterrupt, exit)
		default:
			a.sayAndExit(a.lineStart()+"creative: ended at once by a second signal: "+maybePaidWhere, exitAtOnce, exit)
		}
	}
}

// afterGrace is how long after the grace a command told to stop may take
// to record what it abandoned before the process ends regardless: within
// the grace and 2 s of the signal.
const afterGrace = time.Second

// maybePaidWhere says where a command ended early left what may have been
// paid.
const maybePaidWhere = "a call in flight may have been paid (creative batch status lists a batch's; a single command's links are in its .link.json file)"

// sayAndExit prints line on stderr and ends the process with code. A
// stderr that takes no bytes (a pipe nobody reads, a write of another
// goroutine stuck on it) holds the end back a moment at most.
func (a *app) sayAndExit(line string, code int, exit func(int)) {
	said := make(chan struct{})
	go func() {
		fmt.Fprintln(a.stderr, line)
		close(said)
	}()
	select {
	case <-said:
	case <-time.After(200 * time.Millisecond):
	}
	exit(code)
}

// stopBy returns ctx bounded to end before the process is ended after a
// signal (relaySignals), leaving time to report: work done after a
// signal, such as the results page, waits for the next run rather than
// being cut off mid-way.
func (a *app) stopBy(ctx context.Context) (context.Context, context.CancelFunc) {
	end := a.endBy.Load()
	if end == 0 {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, time.Unix(0, end).Add(-afterGrace/2))
}
