// Package batchcmd is creative batch: the run of a jobs file and its
// summary (batch.go), batch status, the results log (batch_log.go) and
// the opening of the outputs' folder and the ledger (store.go). New makes
// the command; the command line around it gives it what it shares with
// every other command through Env.
package batchcmd

import (
	"context"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"

	creative "github.com/creativegen/creative-go"
)

// Env is what the batch commands take from the command line they are part
// of. It is asked for when a command runs, after its flags are parsed.
type Env struct {
	Stdout io.Writer
	// Console is stderr, shared with the progress display; GuardConsole
	// replaces the writer under it by what wrap makes of it.
	Console      io.Writer
	GuardConsole func(wrap func(io.Writer) io.Writer)
	Stdin        io.Reader // for a jobs file "-"; nil: none
	Getenv       func(string) string
	// Signals delivers Ctrl-C and SIGTERM; nil when nobody sends them.
	Signals <-chan os.Signal
	// Sending is set once the command may send a call or download.
	Sending *atomic.Bool
	// Timeout bounds each call (0: none); Grace is how long what is in
	// flight may go on after the first signal.
	Timeout, Grace time.Duration
	// MaxDownload bounds each file an answer links to
	// (--max-download-bytes, a flag of every command).
	MaxDownload int64
	// Fake says that the calls go to the built-in fake service, where
	// paying again costs nothing.
	Fake bool
	// Buckets opens bucket URLs; nil: none can be opened.
	Buckets *Buckets
	// AtLineStart ends the progress line, if one is shown, before a
	// message.
	AtLineStart func()
	// StartDisplay starts the progress display (or none): counter adds a
	// bar counting to total, stop ends it.
	StartDisplay func() (counter func(total int64, text func() string) *mpb.Bar, stop func())
	// StopBy bounds ctx to end before the process is ended after a
	// signal, leaving time to report.
	StopBy func(ctx context.Context) (context.Context, context.CancelFunc)
	// NewClient is the client of the global flags and extra.
	NewClient func(extra ...creative.Option) (c *creative.Client, close func(), err error)
}

// New is the command creative batch, with its subcommand status and more.
func New(env func() Env, more ...*cobra.Command) *cobra.Command {
	a := &app{env: env}
	cmd := a.batchCommand()
	cmd.AddCommand(more...)
	return cmd
}

// app is one run of a batch command: Env, read when the command runs.
type app struct {
	env          func() Env
	stdout, con  io.Writer
	guardConsole func(wrap func(io.Writer) io.Writer)
	stdin        io.Reader
	getenv       func(string) string
	signals      <-chan os.Signal
	sending      *atomic.Bool
	g            struct {
		timeout, grace time.Duration
		fake           bool
		maxDownload    int64
	}
	buckets      *Buckets
	atLineStart  func()
	startDisplay func() *display
	newClient    func(extra ...creative.Option) (*creative.Client, func(), error)
	stopBy       func(ctx context.Context) (context.Context, context.CancelFunc)
}

// display is the progress display of a run.
type display struct {
	counter func(total int64, text func() string) *mpb.Bar
	stop    func()
}

// load reads the Env.
func (a *app) load() {
	e := a.env()
	a.stdout, a.con, a.guardConsole, a.stdin = e.Stdout, e.Console, e.GuardConsole, e.Stdin
	a.getenv, a.signals, a.sending = e.Getenv, e.Signals, e.Sending
	a.g.timeout, a.g.grace, a.g.fake, a.g.maxDownload = e.Timeout, e.Grace, e.Fake, e.MaxDownload
	a.buckets, a.atLineStart, a.newClient, a.stopBy = e.Buckets, e.AtLineStart, e.NewClient, e.StopBy
	a.startDisplay = func() *display {
		counter, stop := e.StartDisplay()
		return &display{counter: counter, stop: stop}
	}
}
