package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/vbauerster/mpb/v8"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/cmd/creative/internal/batchcmd"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/ops"
	"github.com/creativegen/creative-go/internal/suggest"
)

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
		PersistentPreRunE: cmdutil.Ran(func(cmd *cobra.Command, args []string) error {
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
	pf.Int64Var(&a.g.maxDownload, "max-download-bytes", batch.DefaultMaxDownloadBytes, "most bytes of each file an answer links to: a larger one is not written and its paid link is kept (a single command's in its .link.json file, exit status 3; a batch's in its ledger), for creative fetch or a rerun with a higher bound, which pays nothing again")
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
	more := []*cobra.Command{batchcmd.New(a.batchEnv, a.batchFieldsCommand()), a.fetchCommand(), a.idsCommand(), version}
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
		msg += fmt.Sprintf("; did you mean %s?", strings.Join(cmdutil.QuoteAll(s), " or "))
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

// idsCommand lists the ids of one kind, or of all kinds.
func (a *app) idsCommand() *cobra.Command {
	return &cobra.Command{
		Use:       "ids [kind]",
		Short:     "List the ids and labels that id flags accept",
		Long:      "List the ids of one kind (" + strings.Join(ids.Kinds(), ", ") + ") or of all kinds, as: kind, id, label, and where the service's public docs label an id otherwise, their label. Id flags take the id or either label.",
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: ids.Kinds(),
		RunE: cmdutil.Ran(func(cmd *cobra.Command, args []string) error {
			kinds := ids.Kinds()
			if len(args) > 0 {
				if _, err := ids.Entries(args[0]); err != nil {
					return &cmdutil.UsageError{Msg: err.Error()}
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
// escaped (cmdutil.PrintableJSON).
func jsonOut(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(cmdutil.PrintableJSON(b.Bytes()))
	return err
}

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
		MaxDownload: a.g.maxDownload,
		Grace:       a.g.grace,
		Fake:        a.g.fake,
		Buckets:     a.buckets,
		AtLineStart: a.atLineStart,
		StartDisplay: func() (func(int64, func() string) *mpb.Bar, func()) {
			d := a.startDisplay()
			return d.counter, d.stop
		},
		NewClient: a.newClient,
		StopBy:    a.stopBy,
	}
}
