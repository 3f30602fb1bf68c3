package cli

import (
	"io"

	"github.com/vbauerster/mpb/v8"

	"github.com/creativegen/creative-go/cmd/creative/internal/batchcmd"
)

// batchEnv is what creative batch takes from this run of the command line.
func (a *app) batchEnv() batchcmd.Env {
	return batchcmd.Env{
		Stdout:  a.stdout,
		Console: a.con,
		GuardConsole: func(wrap func(io.Writer) io.Writer) {
			a.con.mu.Lock()
			a.con.w = wrap(a.con.w)
			a.con.mu.Unlock()
		},
		Stdin:       a.stdin,
		Getenv:      a.getenv,
		Signals:     a.signals,
		Sending:     &a.sending,
		Timeout:     a.g.timeout,
		Grace:       a.g.grace,
		Buckets:     a.buckets,
		AtLineStart: a.atLineStart,
		StartDisplay: func() (func(int64, func() string) *mpb.Bar, func()) {
			d := a.startDisplay()
			return d.counter, d.stop
		},
		NewClient: a.newClient,
	}
}
