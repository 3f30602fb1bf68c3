package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/fake"
	"github.com/creativegen/creative-go/internal/ops"
	"github.com/creativegen/creative-go/internal/suggest"
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
	links   int           // --max-links
	grace   time.Duration // --grace
}

// usageError is a mistake in the command line, reported with exit status 2.
type usageError struct{ msg string }

// Error returns the message.
func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// ranError marks an error returned by a command's own code, as opposed to
// one cobra found in the command line (always a usage error).
type ranError struct{ err error }

// Error returns the wrapped error's message.
func (e *ranError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *ranError) Unwrap() error { return e.err }

// interrupted reports a run ended by Ctrl-C or SIGTERM.
var errInterrupted = errors.New("interrupted")

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
	if errors.Is(err, errInterrupted) {
		if ie, ok := errors.AsType[*interruptedError](err); ok {
			for _, line := range ie.lines() {
				fmt.Fprintln(a.con, printable(line))
			}
		}
		fmt.Fprintln(a.con, "creative: interrupted")
		return exitInterrupt
	}
	var ran *ranError
	if !errors.As(err, &ran) {
		// cobra found it: an unknown command or flag, a missing flag.
		msg := err.Error()
		if cmd != nil {
			msg += " (see " + cmd.CommandPath() + " --help)"
		}
		fmt.Fprintln(a.con, "creative: "+oneLine(msg))
		return exitUsage
	}
	msg := oneLine(err.Error())
	if !strings.HasPrefix(msg, "creative: ") {
		msg = "creative: " + msg
	}
	fmt.Fprintln(a.con, printable(msg))
	if errors.Is(err, creative.ErrOutcomeUnknown) {
		fmt.Fprintln(a.con, "creative: the service may have done this work and charged for it; it was not repeated: check before running it again")
	}
	var usage *usageError
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
		return errInterrupted.Error()
	}
	return errInterrupted.Error() + ": " + e.err.Error()
}

// Is makes the error match errInterrupted.
func (e *interruptedError) Is(target error) bool { return target == errInterrupted }

// Unwrap returns what the command met.
func (e *interruptedError) Unwrap() error { return e.err }

// lines are what is printed before "interrupted": what was left, and how
// to go on.
func (e *interruptedError) lines() []string {
	var out []string
	if e.err != nil && !errors.Is(e.err, context.Canceled) || kept(e.err) {
		msg := oneLine(e.err.Error())
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

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// ran wraps a command's own code so that its errors are told apart from
// cobra's.
func ran(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := fn(cmd, args); err != nil {
			return &ranError{err}
		}
		return nil
	}
}

// commands builds the command tree: the areas and their operations from
// the table in internal/ops, then batch, ids and version.
func (a *app) commands() *cobra.Command {
	root := &cobra.Command{
		Use:   "creative",
		Short: "Call the Creative Generation Service from the shell",
		Long: `creative calls the Creative Generation Service: one command per operation,
named as the API path /<area>/v1/<operation>, and batch for many jobs.

Results are written to --out (images decoded, generated files downloaded,
speech saved) and each path is printed on its own line. The access key is
read from CREATIVE_ACCESS_KEY and the base URL from --base-url or
CREATIVE_BASE_URL; --fake runs against a built-in fake service instead.

Exit status: 0 success, 1 API or network error, 2 usage or validation
error (nothing was sent), 3 paid and not saved as promised (the links are
kept in <name>.link.json under --out, for creative fetch, or the answer
is kept as <name>.rejected.<ext>: see stderr), 130 interrupted, 131 ended
at once by a second signal.

Ctrl-C and SIGTERM: the first stops at once what has not been sent; a
call or download in flight gets --grace (10s) to end, then is abandoned
(a call then may have been paid: stderr says so; an answer's links are
kept for creative fetch), and the command exits 130. A second signal ends
it at once (131). While a command only reads its input (a jobs file, "-"
for standard input), a signal ends it at once (130).`,
		Example: `  creative image text-to-image --prompt "a fox in the snow" --style-id anime
  creative --fake audio text-to-speech --prompt "Hello" --voice-id female-1
  creative batch jobs.jsonl --out results --concurrency 8`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          subcommandArgs,
		RunE:          needSubcommand,
		PersistentPreRunE: ran(func(cmd *cobra.Command, args []string) error {
			// First: creative-cloud checks and prints everything again.
			if err := a.handOverBuckets(cmd, args); err != nil {
				return err
			}
			return a.checkGlobals()
		}),
	}
	// Set before the completion command is made: it keeps the writer.
	root.SetOut(a.stdout)
	root.SetErr(a.con)
	root.SetUsageTemplate(usageTemplate)
	// --version, as "creative version" prints it; -v stays --verbose.
	root.Version = versionText(buildInfo())
	root.SetVersionTemplate("{{.Version}}")
	root.Flags().Bool("version", false, "print the version and the revision it was built from")
	root.AddGroup(&cobra.Group{ID: "ops", Title: "Areas:"}, &cobra.Group{ID: "more", Title: "More commands:"})
	root.SetHelpCommandGroupID("more")
	root.SetCompletionCommandGroupID("more")
	root.SetFlagErrorFunc(flagError)
	pf := root.PersistentFlags()
	pf.StringVar(&a.g.baseURL, "base-url", "", "base URL of the service (default $"+creative.EnvBaseURL+")")
	pf.BoolVar(&a.g.fake, "fake", false, "use the built-in fake service: no key, no network")
	pf.DurationVar(&a.g.timeout, "timeout", 5*time.Minute, "bound on each call, retries included (0: none)")
	pf.IntVar(&a.g.retries, "retries", creative.DefaultMaxRetries, "retries of a failed attempt (0: none)")
	pf.BoolVarP(&a.g.verbose, "verbose", "v", false, "log attempts and retries on stderr (the key is never logged)")
	pf.IntVar(&a.g.links, "max-links", creative.DefaultMaxLinks, "most links an answer may list (split-audio's stems), each a download")
	pf.DurationVar(&a.g.grace, "grace", defaultGrace, "after the first Ctrl-C or SIGTERM, how long calls and downloads in flight may go on before they are abandoned (a call then may have been paid); a second signal ends at once")

	areas := map[string]*cobra.Command{}
	for _, op := range ops.All {
		area := areas[op.Area()]
		if area == nil {
			area = &cobra.Command{
				Use:     op.Area(),
				Short:   "The " + op.Area() + " operations",
				Long:    "The " + op.Area() + " operations of the service, one command each (POST /" + op.Area() + "/v1/<operation>).",
				Args:    subcommandArgs,
				RunE:    needSubcommand,
				GroupID: "ops",
			}
			areas[op.Area()] = area
			root.AddCommand(area)
		}
		area.AddCommand(a.opCommand(op, bindings[op.Name]))
	}
	version := &cobra.Command{
		Use:   "version",
		Short: "Print the version and the revision it was built from",
		Args:  cobra.NoArgs,
		Long:  "Print the version of the command and the revision it was built from, for a bug report (as creative --version does).",
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprint(cmd.OutOrStdout(), cmd.Root().Version) },
	}
	more := []*cobra.Command{a.batchCommand(), a.fetchCommand(), a.idsCommand(), version}
	for _, c := range more {
		c.GroupID = "more"
	}
	root.AddCommand(more...)
	root.Long += "\n\n" + operationList()
	shareBoolFlags(root)
	strictCompletion(root)
	return root
}

// operationList lists the operations for creative --help, grouped by area
// in the table's order of areas.
func operationList() string {
	var areas []string
	byArea := map[string][]ops.Op{}
	for _, op := range ops.All {
		if byArea[op.Area()] == nil {
			areas = append(areas, op.Area())
		}
		byArea[op.Area()] = append(byArea[op.Area()], op)
	}
	var b strings.Builder
	b.WriteString("Operations (creative <area> <operation>), by area:")
	for _, area := range areas {
		fmt.Fprintf(&b, "\n  %s", area)
		for _, op := range byArea[area] {
			fmt.Fprintf(&b, "\n    %-23s %s", op.Verb(), op.Summary)
		}
	}
	return b.String()
}

// flagError is how a flag cobra cannot parse is reported. A command that
// only leads to others ("creative image") takes no operation's flags: when
// a word that names no command came before the flag, the word is the
// mistake ("creative image text-to-imag --prompt x"), and it is reported
// with suggestions as it would be without flags. An unknown flag is
// reported with the command's flags nearest to it.
func flagError(cmd *cobra.Command, err error) error {
	if words := cmd.Flags().Args(); leadsOnly(cmd) && len(words) > 0 {
		return subcommandArgs(cmd, words)
	}
	var unknown *pflag.NotExistError
	if !errors.As(err, &unknown) || unknown.GetSpecifiedShortnames() != "" {
		return err
	}
	if near := nearestFlags(cmd, unknown.GetSpecifiedName()); len(near) > 0 {
		return fmt.Errorf("%w (did you mean %s?)", err, strings.Join(near, " or "))
	}
	return err
}

// leadsOnly reports whether cmd only leads to the commands below it, as
// "creative image" does: its Use names no arguments of its own, as
// "batch JOBS.jsonl" does.
func leadsOnly(cmd *cobra.Command) bool {
	return cmd.HasAvailableSubCommands() && cmd.Use == cmd.Name()
}

// nearestFlags returns the flags of cmd, its own and the global ones,
// nearest to name, each as "--name".
func nearestFlags(cmd *cobra.Command, name string) []string {
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Deprecated == "" {
			names = append(names, f.Name)
		}
	})
	near := suggest.Nearest(name, names)
	for i, n := range near {
		near[i] = "--" + n
	}
	return near
}

// strictCompletion makes "creative completion" refuse a shell it has no
// script for, as a usage error, instead of printing its help and
// succeeding.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	comp, _, err := root.Find([]string{"completion"})
	if err != nil || comp == root {
		return
	}
	var shells []string
	for _, sub := range comp.Commands() {
		shells = append(shells, sub.Name())
	}
	comp.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		return fmt.Errorf("no completion script for %q: give one of %s", args[0], strings.Join(shells, ", "))
	}
	comp.RunE = needSubcommand
	comp.Short = "Print a script that completes commands, flags and id labels in your shell"
	comp.Long = completionHelp
}

// completionHelp is the completion command's help: what each shell needs
// first, bash above all, whose script fails without bash-completion.
const completionHelp = `Print a script that makes your shell complete creative's commands, flags
and id labels (--style-id an<TAB> gives anime).

bash needs the bash-completion package, version 2, loaded first:
  Debian, Ubuntu:  apt install bash-completion
  Homebrew:        brew install bash-completion@2   (bash 4 or later; add
                   the line its caveats give to ~/.bash_profile; macOS's
                   own bash 3.2 takes brew install bash-completion)
Without it, Tab says "_get_comp_words_by_ref: command not found". Then:

  source <(creative completion bash)     # in this shell
  creative completion bash > ~/.local/share/bash-completion/completions/creative   # in every new one

zsh (with compinit on: autoload -U compinit; compinit):
  source <(creative completion zsh)

fish:
  creative completion fish | source

PowerShell:
  creative completion powershell | Out-String | Invoke-Expression

"creative completion SHELL --help" says how to load it in every new shell.`

// usageTemplate is cobra's, without a "creative image [flags]" line for
// commands that only lead to others (whose Use names no arguments).
const usageTemplate = `Usage:{{if or (not .HasAvailableSubCommands) (ne .Use .Name)}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}{{$cmds := .Commands}}{{if eq (len .Groups) 0}}

Available Commands:{{range $cmds}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{else}}{{range $group := .Groups}}

{{.Title}}{{range $cmds}}{{if (and (eq .GroupID $group.ID) (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if not .AllChildCommandsHaveGroup}}

Additional Commands:{{range $cmds}}{{if (and (eq .GroupID "") (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`

// subcommandArgs refuses a word that names no command below, suggesting
// the nearest names.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := nearestCommands(cmd, args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %s?", strings.Join(quoteAll(s), " or "))
	}
	return errors.New(msg)
}

// nearestCommands returns the commands nearest to word, a word that names
// no command below cmd, each as the command line that runs it ("creative
// image text-to-image"). It looks at the commands below cmd (cobra's
// suggestions: "imgae" for image) and at every operation, by its name as
// batch writes it (ops.Nearest: "image/text-to-image", "imagetext-to-image",
// "text-to-image") and by its verb alone (package suggest: "text2image",
// "creative audio text-to-image"). Of those, it keeps the ones at the least
// edit distance from word, and of those the commands below cmd when there
// are some.
func nearestCommands(cmd *cobra.Command, word string) []string {
	type near struct {
		path  string
		dist  int
		below bool
	}
	var found []near
	add := func(name, path string, below bool) {
		for _, f := range found {
			if f.path == path {
				return
			}
		}
		found = append(found, near{path, suggest.Distance(strings.ToLower(word), name), below})
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	for _, name := range cmd.SuggestionsFor(word) {
		add(name, cmd.CommandPath()+" "+name, true)
	}
	verbs := make([]string, len(ops.All))
	for i, op := range ops.All {
		verbs[i] = op.Verb()
	}
	nearVerbs := suggest.Nearest(word, verbs)
	nearNames := ops.Nearest(word)
	root := cmd.Root().CommandPath()
	for _, op := range ops.All {
		path := root + " " + op.Area() + " " + op.Verb()
		below := strings.HasPrefix(path, cmd.CommandPath()+" ")
		if slices.Contains(nearVerbs, op.Verb()) {
			add(op.Verb(), path, below)
		}
		if slices.Contains(nearNames, op.Name) {
			add(op.Name, path, below)
		}
	}
	slices.SortStableFunc(found, func(a, b near) int {
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		if a.below != b.below {
			if a.below {
				return -1
			}
			return 1
		}
		return 0
	})
	var out []string
	for _, f := range found {
		if f.dist == found[0].dist && f.below == found[0].below {
			out = append(out, f.path)
		}
	}
	return out
}

// noArgs refuses words after an operation.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected %q after %q: values are given with flags", args[0], cmd.CommandPath())
	}
	return nil
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// needSubcommand is what creative and an area do alone: show their help
// on stderr and fail, since there is nothing to run.
func needSubcommand(cmd *cobra.Command, _ []string) error {
	cmd.SetOut(cmd.ErrOrStderr())
	_ = cmd.Help()
	return errors.New("a command is needed")
}

// shareBoolFlags tells each command with subcommands about the flags below
// it that take no value, hidden, so that such a flag given before the words
// ("creative --json image ...") is not taken to consume the next word.
func shareBoolFlags(root *cobra.Command) {
	var walk func(c *cobra.Command) map[string]bool
	walk = func(c *cobra.Command) map[string]bool {
		below := map[string]bool{}
		for _, sub := range c.Commands() {
			for name := range walk(sub) {
				below[name] = true
			}
			sub.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
				if f.NoOptDefVal != "" {
					below[f.Name] = true
				}
			})
		}
		for name := range below {
			if c.Flags().Lookup(name) == nil && c.PersistentFlags().Lookup(name) == nil {
				c.Flags().Bool(name, false, "")
				_ = c.Flags().MarkHidden(name)
			}
		}
		return below
	}
	walk(root)
}

// checkGlobals refuses values of the global flags that cannot work, naming
// the flag, before anything else happens.
func (a *app) checkGlobals() error {
	if a.g.retries < 0 {
		return usagef("--retries must be 0 or more, got %d", a.g.retries)
	}
	if a.g.grace < 0 {
		return usagef("--grace must be 0 (abandon at once) or more, got %v", a.g.grace)
	}
	if a.g.timeout < 0 {
		return usagef("--timeout must be 0 (no bound) or more, got %v", a.g.timeout)
	}
	if a.g.fake && a.g.baseURL != "" {
		return usagef("--fake and --base-url cannot go together: --fake runs against the built-in fake service, --base-url names a real one")
	}
	if a.g.baseURL == "" {
		a.g.baseURL = a.getenv(creative.EnvBaseURL)
	}
	return nil
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
		return nil, nil, &usageError{err.Error()}
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
			return nil, nil, &usageError{err.Error()}
		}
		return c, func() { c.CloseIdleConnections(); srv.Close() }, nil
	}
	key := replayKey(cas, a.getenv(creative.EnvAccessKey))
	if a.g.baseURL == "" && key == "" {
		return nil, nil, usagef("no base URL and no access key: set %s (or give --base-url) and %s, or try --fake", creative.EnvBaseURL, creative.EnvAccessKey)
	}
	if a.g.baseURL == "" {
		return nil, nil, usagef("no base URL: set %s or give --base-url (or try --fake)", creative.EnvBaseURL)
	}
	if u, err := url.Parse(a.g.baseURL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, nil, usagef("the base URL %q (from --base-url or %s) is not an http(s) URL with a host", a.g.baseURL, creative.EnvBaseURL)
	}
	if key == "" {
		return nil, nil, usagef("no access key: set %s (or try --fake)", creative.EnvAccessKey)
	}
	c, err = creative.New(append([]creative.Option{creative.WithBaseURL(a.g.baseURL), creative.WithAccessKey(key)}, opts...)...)
	if err != nil {
		return nil, nil, &usageError{err.Error()}
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

// idsCommand lists the ids of one kind, or of all kinds.
func (a *app) idsCommand() *cobra.Command {
	return &cobra.Command{
		Use:       "ids [kind]",
		Short:     "List the ids and labels that id flags accept",
		Long:      "List the ids of one kind (" + strings.Join(ids.Kinds(), ", ") + ") or of all kinds, as: kind, id, label, and where the service's public docs label an id otherwise, their label. Id flags take the id or either label.",
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: ids.Kinds(),
		RunE: ran(func(cmd *cobra.Command, args []string) error {
			kinds := ids.Kinds()
			if len(args) > 0 {
				if _, err := ids.Entries(args[0]); err != nil {
					return &usageError{err.Error()}
				}
				kinds = args[:1]
			}
			for _, k := range kinds {
				es, _ := ids.Entries(k)
				for _, e := range es {
					line := e.Kind + "\t" + e.ID + "\t" + e.Label
					if e.DocsLabel != "" {
						line += "\t" + e.DocsLabel
					}
					fmt.Fprintln(cmd.OutOrStdout(), line)
				}
			}
			return nil
		}),
	}
}

// jsonOut prints v as indented JSON, with what would drive a terminal
// escaped (printableJSON).
func jsonOut(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(printableJSON(b.Bytes()))
	return err
}
