package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
	"github.com/creativegen/creative-go/internal/ops"
)

// stdoutName is the --out that writes the result to stdout instead of a
// directory, so that it can be piped to a player or an image viewer.
const stdoutName = "-"

// toStdout refuses, before anything is sent, a call whose result --out -
// cannot write: several files, or bytes that would land on a terminal.
func (a *app) toStdout(p *params) error {
	if a.stdoutTerminal {
		return cmdutil.Usagef("binary output to a terminal: redirect it (> %s) or pipe it (| mpv -), or give --out a directory", exampleFile(p.op))
	}
	return oneResult(p)
}

// exampleFile is a file name to suggest for the result of op.
func exampleFile(op ops.Op) string {
	switch {
	case op.Result == ops.Audio:
		return op.Verb() + ".mp3"
	case op.Result == ops.Image || op.Result == ops.Images:
		return op.Verb() + ".png"
	case op.Area() == "video":
		return op.Verb() + ".mp4"
	}
	return op.Verb() + ".wav"
}

// oneResult refuses, before anything is sent, a call whose result would be
// several files when --out - can write only one.
func oneResult(p *params) error {
	n, _ := p.vals["numberOfResults"].(float64)
	switch {
	case p.op.Result == ops.URLs:
		return cmdutil.Usagef("--out - writes one result to stdout, and %s makes several files: give --out a directory", p.op.Verb())
	case p.op.Result == ops.Images && n > 1:
		return cmdutil.Usagef("--out - writes one result to stdout, and %s %v asks for more: give --out a directory", p.name("numberOfResults"), n)
	}
	return nil
}

// writeOne writes the one result of a call to w: speech as it streams, an
// image's bytes, a generated file as it downloads (without the key). A
// result the service made of several files is an error, after the call.
func writeOne(ctx context.Context, w io.Writer, c *creative.Client, res any, status *callStatus, opts []creative.Option) error {
	switch v := res.(type) {
	case *creative.Audio:
		defer v.Close()
		_, err := io.Copy(w, v)
		return err
	case creative.Image:
		_, err := v.WriteTo(w)
		return err
	case []creative.Image:
		if len(v) != 1 {
			return fmt.Errorf("creative: the service made %d images and --out - writes one: give --out a directory", len(v))
		}
		_, err := v[0].WriteTo(w)
		return err
	case creative.URL:
		status.attempt.Store(0) // the attempts of this download
		_, err := c.Download(ctx, v, w, opts...)
		if err != nil {
			// No folder to keep a link file in: the link goes to stderr.
			id := "not given"
			if p := status.requestID.Load(); p != nil && *p != "" {
				id = *p
			}
			return &paidLinksError{err: err, links: []string{string(v)}, id: id, fileErr: errors.New("--out - writes no files")}
		}
		return nil
	}
	return fmt.Errorf("creative: no way to write a %T to stdout", res)
}

// fakeLinksNote warns, when the links printed came from the built-in fake,
// that they stop working when the command ends, as the fake does.
func (a *app) fakeLinksNote() {
	if a.g.fake {
		fmt.Fprintln(a.con, "creative: these links are served by the built-in fake service, which stops when this command ends: they will not open afterwards (leave out --no-download to save the files)")
	}
}
