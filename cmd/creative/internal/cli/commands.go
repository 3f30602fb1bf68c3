package cli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/opcall"
	"github.com/creativegen/creative-go/internal/ops"
	"github.com/creativegen/creative-go/internal/outdir"
)

// A binding is what the command line adds to an operation of the table in
// internal/ops: an example, and help words where the field's name says too
// little. Names, fields, types, defaults and which fields are required come
// from the table; the request is built from the SDK's request type (see
// internal/opcall).
type binding struct {
	example string
	help    map[string]string // field -> flag help
	// jobHelp replaces help in the list of a jobs file's fields (creative
	// batch fields) where the flag's words speak of the command line.
	jobHelp map[string]string
	// filled are fields the wire requires that shorthand flags, or the SDK,
	// fill in when they can; the SDK reports them when they cannot.
	filled []string
	// extra registers flags beyond the operation's fields, and prepare
	// puts what they say into the fields.
	extra   func(fs *pflag.FlagSet, p *params)
	prepare func(p *params, fields map[string]any) error
}

// required reports whether the user must give field f.
func (b binding) required(f ops.Field) bool {
	return f.Required && f.Default == 0 && !slices.Contains(b.filled, f.Name)
}

// bindings holds one binding per operation of ops.All, by name.
var bindings = map[string]binding{
	"text/writer-tool": {
		example: `creative text writer-tool --job-role "Backend engineer" --job-skills "Go, SQL" --language English --tone formal`,
		help: map[string]string{
			"inputs":   `inputs as a JSON array (for CoverLetter: [{"jobRole":...,"jobSkills":...}])`,
			"useCase":  "use case (default CoverLetter with --job-role)",
			"action":   "action (default generate_writenow for CoverLetter)",
			"number":   "number of texts",
			"language": "language to write in, such as English",
			"tone":     "tone of the text, such as formal",
		},
		jobHelp: map[string]string{
			"inputs":  `the use case's inputs; for CoverLetter [{"jobRole":...,"jobSkills":...}]`,
			"useCase": "use case, such as CoverLetter",
			"action":  "action; may be left out with CoverLetter, which takes generate_writenow",
		},
		filled: []string{"inputs", "useCase", "action"},
		extra: func(fs *pflag.FlagSet, p *params) {
			fs.StringVar(&p.jobRole, "job-role", "", "CoverLetter shorthand: the job role")
			fs.StringVar(&p.jobSkills, "job-skills", "", "CoverLetter shorthand: the job skills")
		},
		prepare: func(p *params, fields map[string]any) error {
			if p.jobRole != "" || p.jobSkills != "" {
				inputs, _ := fields["inputs"].([]any)
				fields["inputs"] = append(inputs, creative.CoverLetterInput{JobRole: p.jobRole, JobSkills: p.jobSkills})
				if fields["useCase"] == nil {
					fields["useCase"] = string(creative.UseCaseCoverLetter)
				}
			}
			if fields["inputs"] == nil {
				return cmdutil.Usagef("no inputs: give --job-role and --job-skills for a cover letter, or --inputs as a JSON array")
			}
			return nil
		},
	},
	"audio/text-to-music": {
		example: `creative audio text-to-music --prompt "calm piano by the sea" --duration 12`,
		help:    map[string]string{"prompt": "text to turn into music", "duration": "length in seconds"},
	},
	"image/text-to-image": {
		example: `creative image text-to-image --prompt "a fox in the snow" --number-of-results 2 --image-size-id 16:9 --style-id anime`,
		help:    map[string]string{"prompt": "text to turn into images", "numberOfResults": "number of images, 1 to 10"},
	},
	"image/generate-logo": {
		example: `creative image generate-logo --prompt "a coffee shop called Bean There" --number-of-results 2`,
		help:    map[string]string{"prompt": "text to turn into logos", "numberOfResults": "number of logos, 1 to 4"},
	},
	"image/generate-qr": {
		example: `creative image generate-qr --url https://example.com --prompt "spring flowers"`,
		help:    map[string]string{"url": "link the code encodes", "prompt": "text that styles the code"},
	},
	"image/up-scale": {
		example: `creative image up-scale --url https://example.com/cat.png --scale 2`,
		help:    map[string]string{"url": "link of the image", "scale": "size factor (default: the service's)"},
	},
	"audio/enhance": {
		example: `creative audio enhance --audio talk.wav --type-id podcast`,
		help:    map[string]string{"audio": "audio file to enhance", "typeId": "kind of recording"},
	},
	"video/infinite-zoom": {
		example: `creative video infinite-zoom --prompt "a spiral galaxy" --number-of-iteration 3`,
		help:    map[string]string{"prompt": "text to turn into an image to zoom into", "numberOfIteration": "zoom steps"},
	},
	"image/re-imagine": {
		example: `creative image re-imagine --image cat.png`,
		help:    map[string]string{"image": "image file: PNG, JPEG or WebP, at most 1024x1024"},
	},
	"audio/split-audio": {
		example: `creative audio split-audio --audio song.wav`,
		help:    map[string]string{"audio": "audio file to split"},
	},
	"image/remove-background": {
		example: `creative image remove-background --url https://example.com/in.png`,
		help:    map[string]string{"url": "link of the image"},
	},
	"image/color-image": {
		example: `creative image color-image --url https://example.com/in.png`,
		help:    map[string]string{"url": "link of the image"},
	},
	"image/enhance": {
		example: `creative image enhance --url https://example.com/in.png`,
		help:    map[string]string{"url": "link of the image"},
	},
	"video/remove-background": {
		example: `creative video remove-background --url https://example.com/in.mp4`,
		help:    map[string]string{"url": "link of the video"},
	},
	"audio/text-to-speech": {
		example: `creative audio text-to-speech --prompt "Hello there" --voice-id female-1`,
		help:    map[string]string{"prompt": "text to speak"},
	},
	"image/change-background": {
		example: `creative image change-background --image cat.png --prompt "a beach at sunset"`,
		help:    map[string]string{"image": "image file: PNG, JPEG or WebP", "prompt": "the new background"},
	},
}

// fieldHelp is a flag's help: the binding's words, or words made from the
// field's type.
func fieldHelp(b binding, f ops.Field) string {
	h := b.help[f.Name]
	if h == "" {
		switch f.Type {
		case ops.ID:
			h = strings.ReplaceAll(f.IDKind, "-", " ")
		case ops.Link:
			h = "link (an http or https URL)"
		case ops.File:
			h = "path of the file to upload"
		default:
			h = f.Name
		}
	}
	if f.Type == ops.ID {
		h += " (an id or its label; see creative ids " + f.IDKind + ")"
	}
	switch {
	case f.Default != 0 && f.Required:
		h += fmt.Sprintf(" (default %v)", f.Default)
	case f.Default != 0:
		h += fmt.Sprintf(" (default: the service's, %v)", f.Default)
	}
	if b.required(f) {
		h += " (required)"
	}
	return h
}

// fieldValue is a flag that sets one field of params.
type fieldValue struct {
	p *params
	f ops.Field
}

// String returns the value as given, for help's defaults.
func (v *fieldValue) String() string {
	switch x := v.p.vals[v.f.Name].(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

// Set parses a command-line word into the field.
func (v *fieldValue) Set(s string) error { return v.p.setText(v.f, s) }

// Type names the kind of value in help.
func (v *fieldValue) Type() string {
	switch v.f.Type {
	case ops.Number:
		return "number"
	case ops.ID:
		return "id"
	case ops.File:
		return "path"
	case ops.Link:
		return "url"
	case ops.Array:
		return "json"
	}
	return "string"
}

// output holds the flags that say where results go.
type output struct {
	dir string
	d   *outdir.Dir // dir, opened once writable

	json       bool
	noDownload bool
}

// opCommand is the command of one operation: a flag per field of the
// table, the output flags that apply to its kind of result, and completion
// of id labels.
func (a *app) opCommand(op ops.Op, b binding) *cobra.Command {
	p := newParams(op, func(field string) string { return "--" + kebab(field) })
	out := &output{}
	long := op.Summary + " (POST " + op.Path() + ")."
	switch op.Result {
	case ops.Writer:
		long += "\n\nThe text is printed on stdout, and saved in --out as " + op.Verb() + ".txt, or\n" + op.Verb() + "-1.txt ... (never overwriting a file); its path is printed after it."
	case ops.Audio:
		long += "\n\nThe audio is saved in --out as " + op.Verb() + ".<ext>; its path is printed."
	default:
		long += "\n\nThe result is saved in --out as " + op.Verb() + ".<ext>, or\n" + op.Verb() + "-1.<ext>, " + op.Verb() + "-2.<ext> ... when there are several\n(never overwriting a file); each path is printed."
	}
	cmd := &cobra.Command{
		Use:               op.Verb(),
		Short:             op.Summary,
		Long:              strings.ToUpper(long[:1]) + long[1:],
		Example:           "  " + b.example,
		Args:              cmdutil.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: cmdutil.Ran(func(cmd *cobra.Command, _ []string) error {
			return a.runOp(cmd.Context(), b, p, out)
		}),
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	for _, f := range op.Fields {
		name := kebab(f.Name)
		fs.Var(&fieldValue{p, f}, name, fieldHelp(b, f))
		if b.required(f) {
			_ = cmd.MarkFlagRequired(name)
		}
		switch f.Type {
		case ops.ID:
			_ = cmd.RegisterFlagCompletionFunc(name, completeIDs(f.IDKind))
		case ops.File:
			_ = cmd.MarkFlagFilename(name)
		default:
			_ = cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
		}
	}
	if b.extra != nil {
		b.extra(fs, p)
	}
	if op.Result != ops.Writer {
		fs.StringVar(&out.dir, "out", ".", `directory to write results to, or "-" to write the one result to stdout (a pipe or a file, not a terminal)`)
	} else {
		fs.StringVar(&out.dir, "out", ".", `directory to save the text to, or "-" to print it only`)
	}
	_ = cmd.MarkFlagDirname("out")
	fs.BoolVar(&out.json, "json", false, "print the result as JSON on stdout instead of writing files")
	if op.Result == ops.URL || op.Result == ops.URLs {
		fs.BoolVar(&out.noDownload, "no-download", false, "print the generated files' URLs instead of downloading them")
	}
	return cmd
}

// completeIDs completes an id flag with the labels of its kind, the
// specification's and the service's public docs', spaces written as hyphens
// (which the parser reads alike), each with its id.
func completeIDs(kind string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		entries, _ := ids.Entries(kind)
		var out []cobra.Completion
		prefix := strings.ToLower(toComplete)
		for _, e := range entries {
			for _, label := range []string{e.Label, e.DocsLabel} {
				label = strings.ReplaceAll(label, " ", "-")
				if label != "" && strings.HasPrefix(strings.ToLower(label), prefix) {
					out = append(out, cobra.CompletionWithDesc(label, e.ID))
				}
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// schemeURL matches a name that starts with a URL's scheme, such as
// s3://b/x: an operation's --out is never one, and "s3:/b/x" is no folder
// to make.
var schemeURL = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*://`)

// runOp makes one call with the fields given as flags and writes its
// result: files under --out (each path printed), the writer's text, or
// JSON with --json. The request is built and checked first, so that a
// mistake in a flag is reported as such and leaves nothing made: no --out
// folder, no client. Ctrl-C cancels the call, removes temporary files and
// clears the progress line.
func (a *app) runOp(ctx context.Context, b binding, p *params, out *output) error {
	if schemeURL.MatchString(out.dir) {
		return cmdutil.Usagef("--out of an operation takes a folder on this machine or \"-\", not a URL such as %q: buckets are for creative batch --out", out.dir)
	}
	req, err := p.request(b)
	if err != nil {
		return err
	}
	status := newCallStatus(p.op.Name)
	writesFiles := !out.json && !(out.noDownload && (p.op.Result == ops.URL || p.op.Result == ops.URLs)) &&
		!(p.op.Result == ops.Writer && out.dir == stdoutName)
	switch {
	case writesFiles && out.dir == stdoutName:
		if err := a.toStdout(p); err != nil {
			return err
		}
	}
	c, closeClient, err := a.newClient()
	if err != nil {
		return err
	}
	defer closeClient()
	if writesFiles && out.dir != stdoutName {
		// Made once the call could be sent, and proven writable before.
		if out.d, err = openOut(out.dir); err != nil {
			return err
		}
		defer out.d.Close()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.sending.Store(true)
	// In flight once an attempt went out; not while waiting to send the
	// call again, since the client retries only what was not done.
	signalled := a.watchSignals(cancel, func() bool { return status.attempt.Load() > 0 && status.retryAt.Load() == 0 })
	d := a.startDisplay()
	d.status(status.String)
	// While the display redraws its line on the terminal, stdout is held
	// back: a line printed under it would be erased with it.
	stdout := a.stdout
	var held bytes.Buffer
	if d != nil && out.dir != stdoutName {
		stdout = &held
	}
	err = a.callAndWrite(ctx, stdout, req, p, out, c, status)
	d.stop()
	if _, werr := held.WriteTo(a.stdout); err == nil {
		err = werr
	}
	if sg := signalled(); sg != nil && err != nil {
		// What was in flight was cut off, or ended in error meanwhile.
		ie := &interruptedError{err: err, sentNoAnswer: sg.abandoned.Load() && status.requestID.Load() == nil && status.attempt.Load() > 0}
		if id := status.requestID.Load(); id != nil && sg.abandoned.Load() && !kept(err) {
			ie.cutAnswer = cmp.Or(*id, "not given")
		}
		return ie
	}
	return err
}

func (a *app) callAndWrite(ctx context.Context, stdout io.Writer, req opcall.Request, p *params, out *output, c *creative.Client, status *callStatus) error {
	opts := status.track(a.logHandler())
	res, err := opcall.Call(ctx, c, p.op, req, opts...)
	if err != nil {
		return err
	}
	if out.json {
		return printJSON(stdout, res)
	}
	switch v := res.(type) {
	case *creative.WriterResult:
		for i, ch := range v.Choices {
			if i > 0 {
				fmt.Fprintln(stdout, "\n---")
			}
			text := ch.Text
			if a.stdoutTerminal {
				text = cmdutil.PrintableLines(text) // a terminal is driven by no answer
			}
			fmt.Fprintln(stdout, text)
		}
		if out.d == nil {
			return nil
		}
		return saveText(out.d, p.op.Verb(), v.Text(), stdout)
	case creative.URL:
		if out.noDownload {
			fmt.Fprintln(stdout, cmdutil.Printable(string(v)))
			a.fakeLinksNote()
			return nil
		}
	case []creative.URL:
		if out.noDownload {
			for _, u := range v {
				fmt.Fprintln(stdout, cmdutil.Printable(string(u)))
			}
			a.fakeLinksNote()
			return nil
		}
	}
	if out.dir == stdoutName {
		return writeOne(ctx, stdout, c, res, status, a.downloadOpts(opts))
	}
	s := &saver{op: p.op.Name, dir: out.d, c: c, status: status, opts: a.downloadOpts(opts), saved: func(path string) { fmt.Fprintln(stdout, cmdutil.Printable(path)) }, service: a.serviceOrigin()}
	_, err = s.save(ctx, p.op.Verb(), res)
	return err
}

// saveText saves the writer's text in the folder d as <stem>.txt, or
// <stem>-1.txt ... past the names taken, as a saver names files: written
// whole to a temporary file first, then linked to its name, never over a
// file. Its path is printed on stdout. (Text is not an answer file that
// package answer checks: it came in the answer's JSON, already checked.)
func saveText(d *outdir.Dir, stem, text string, stdout io.Writer) error {
	tmp, err := d.CreateTemp(".", tempPrefix[1:])
	if err != nil {
		return err
	}
	defer tmp.Remove()
	if _, err := io.WriteString(tmp, text+"\n"); err != nil {
		return err
	}
	if err := tmp.Flush(); err != nil {
		return err
	}
	n := namer{stem: stem}
	for {
		base := n.next() + ".txt"
		err := tmp.Link(base)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, cmdutil.Printable(d.Join(base)))
		return nil
	}
}

// jsonImage is how --json shows an image: nothing paid for is dropped.
type jsonImage struct {
	ContentType string `json:"contentType"`
	Bytes       int    `json:"bytes"`
	Base64      []byte `json:"base64"`
}

// printJSON prints a result as JSON: images and speech with their bytes
// in base64, URLs as strings, the writer's result as it is.
func printJSON(w io.Writer, res any) error {
	switch v := res.(type) {
	case creative.Image:
		return jsonOut(w, []jsonImage{{v.ContentType(), len(v.Data), v.Data}})
	case []creative.Image:
		out := make([]jsonImage, len(v))
		for i, im := range v {
			out[i] = jsonImage{im.ContentType(), len(im.Data), im.Data}
		}
		return jsonOut(w, out)
	case *creative.Audio:
		defer v.Close()
		b, err := io.ReadAll(v)
		if err != nil {
			return err
		}
		return jsonOut(w, jsonImage{v.ContentType, len(b), b})
	}
	return jsonOut(w, res)
}

// serviceOrigin is the scheme and host of the service the command calls,
// for a link file: "" for the built-in fake, whose links die with it.
func (a *app) serviceOrigin() string {
	u, err := url.Parse(a.g.baseURL)
	if a.g.fake || err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
