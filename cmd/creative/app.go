package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/ids"
)

// Exit statuses.
const (
	exitOK    = 0
	exitAPI   = 1 // the service answered with an error, or the network failed
	exitUsage = 2 // usage, configuration or validation: nothing was sent
)

// app is one run of the command, with its streams and environment.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	progress       bool // stderr is a terminal: show elapsed time and bytes
}

// globals are the flags every operation takes.
type globals struct {
	baseURL    string
	out        string
	fake       bool
	json       bool
	noDownload bool
	timeout    time.Duration
	retries    int
	verbose    bool
}

// usageError is a mistake in the command line, reported with exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// boolFlags are the flags that take no value.
var boolFlags = map[string]bool{"fake": true, "json": true, "no-download": true, "v": true, "help": true, "h": true}

// split separates positional words from flags, so that flags may come
// before or after them; a flag that takes a value keeps the word after it.
func split(args []string) (words, flags []string) {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			words = append(words, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			words = append(words, arg)
			continue
		}
		flags = append(flags, arg)
		name := strings.TrimLeft(arg, "-")
		if strings.Contains(name, "=") || boolFlags[name] {
			continue
		}
		if i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return words, flags
}

func (a *app) run(args []string) int {
	words, flags := split(args)
	if len(words) == 0 || words[0] == "help" {
		if len(words) > 1 {
			return a.commandHelp(words[1:])
		}
		a.help(a.stdout)
		if len(words) == 0 && !contains(flags, "-h", "--help", "-help") {
			return exitUsage
		}
		return exitOK
	}
	switch words[0] {
	case "version":
		fmt.Fprintln(a.stdout, "creative", creative.Version)
		return exitOK
	case "ids":
		return a.listIDs(words[1:])
	}
	if len(words) != 2 {
		return a.fail(usagef("want <area> <operation>, such as: creative image text-to-image --prompt ... (see creative help)"))
	}
	cmd, ok := findCommand(words[0], words[1])
	if !ok {
		return a.fail(usagef("unknown command %q (see creative help)", strings.Join(words, " ")))
	}
	fs := flag.NewFlagSet(cmd.path(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g := &globals{}
	fs.StringVar(&g.baseURL, "base-url", a.getenv(creative.EnvBaseURL), "base URL of the service")
	fs.StringVar(&g.out, "out", ".", "directory to write results to")
	fs.BoolVar(&g.fake, "fake", false, "run against the built-in fake service")
	fs.BoolVar(&g.json, "json", false, "print the result as JSON instead of writing files")
	fs.BoolVar(&g.noDownload, "no-download", false, "print generated files' URLs instead of downloading them")
	fs.DurationVar(&g.timeout, "timeout", 5*time.Minute, "bound on the whole call, retries included")
	fs.IntVar(&g.retries, "retries", creative.DefaultMaxRetries, "how many times a failed attempt is retried")
	fs.BoolVar(&g.verbose, "v", false, "log each attempt and retry on stderr (the key is never logged)")
	call := cmd.flags(fs)
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			cmd.usage(a.stdout, fs)
			return exitOK
		}
		return a.fail(usagef("%s: %v", cmd.path(), err))
	}
	return a.execute(cmd, g, call)
}

func contains(list []string, any ...string) bool {
	for _, v := range list {
		for _, w := range any {
			if v == w {
				return true
			}
		}
	}
	return false
}

// execute makes the client, calls the operation and writes its result.
func (a *app) execute(cmd *command, g *globals, call caller) int {
	opts := []creative.Option{creative.WithTimeout(g.timeout), creative.WithMaxRetries(g.retries), creative.WithUserAgent("creative-cli")}
	if g.verbose {
		opts = append(opts, creative.WithLogger(slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	var client *creative.Client
	if g.fake {
		srv := creativetest.NewServer()
		defer srv.Close()
		fmt.Fprintf(a.stderr, "creative: using the built-in fake service at %s\n", srv.URL)
		client = srv.Client(opts...)
	} else {
		if g.baseURL == "" {
			return a.fail(usagef("no base URL: set %s or give --base-url (or try --fake)", creative.EnvBaseURL))
		}
		c, err := creative.New(append(opts, creative.WithBaseURL(g.baseURL), creative.WithAccessKey(a.getenv(creative.EnvAccessKey)))...)
		if err != nil {
			return a.fail(&usageError{err.Error()})
		}
		client = c
	}
	defer client.CloseIdleConnections()
	if !g.json {
		if err := os.MkdirAll(g.out, 0o755); err != nil {
			return a.fail(usagef("--out: %v", err))
		}
	}

	ctx := context.Background()
	p := &progress{}
	stop := a.showProgress(cmd.path(), p)
	res, err := call(ctx, client, p)
	stop()
	if err != nil {
		return a.fail(err)
	}
	w := &writer{app: a, g: g, c: client, op: cmd.name}
	if err := w.write(ctx, res); err != nil {
		return a.fail(err)
	}
	return exitOK
}

// fail prints err on one line and returns its exit status.
func (a *app) fail(err error) int {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if !strings.HasPrefix(msg, "creative: ") {
		msg = "creative: " + msg
	}
	fmt.Fprintln(a.stderr, msg)
	var usage *usageError
	var invalid *creative.ValidationError
	if errors.As(err, &usage) || errors.As(err, &invalid) {
		return exitUsage
	}
	return exitAPI
}

func (a *app) help(w io.Writer) {
	fmt.Fprint(w, `creative calls the Creative Generation Service.

Usage:
  creative <area> <operation> [flags]
  creative <area> <operation> --help
  creative ids [kind]
  creative version

Operations:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-32s %s\n", c.area+" "+c.name, c.summary)
	}
	fmt.Fprint(w, `
Global flags (before or after the words):
  --base-url URL     the service (default $CREATIVE_BASE_URL)
  --out DIR          where results are written (default .)
  --fake             use the built-in fake service: no key, no network
  --json             print the result as JSON instead of writing files
  --no-download      print generated files' URLs instead of downloading them
  --timeout D        bound on the whole call, retries included (default 5m)
  --retries N        retries of a failed attempt (default 2)
  -v                 log attempts and retries on stderr

The access key is read from CREATIVE_ACCESS_KEY.
Exit status: 0 success, 1 API or network error, 2 usage or validation error.
`)
}

func (a *app) commandHelp(words []string) int {
	if len(words) != 2 {
		a.help(a.stdout)
		return exitOK
	}
	cmd, ok := findCommand(words[0], words[1])
	if !ok {
		return a.fail(usagef("unknown command %q (see creative help)", strings.Join(words, " ")))
	}
	fs := flag.NewFlagSet(cmd.path(), flag.ContinueOnError)
	cmd.flags(fs)
	cmd.usage(a.stdout, fs)
	return exitOK
}

// listIDs prints the ids of one kind, or of all kinds.
func (a *app) listIDs(words []string) int {
	kinds := ids.Kinds()
	if len(words) > 0 {
		if _, err := ids.Entries(words[0]); err != nil {
			return a.fail(&usageError{err.Error()})
		}
		kinds = []string{words[0]}
	}
	for _, k := range kinds {
		es, _ := ids.Entries(k)
		for _, e := range es {
			fmt.Fprintf(a.stdout, "%s\t%s\t%s\n", e.Kind, e.ID, e.Label)
		}
	}
	return exitOK
}

// jsonOut prints v as indented JSON.
func jsonOut(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
