package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
	"github.com/creativegen/creative-go/internal/ops"
)

// batchFieldsCommand lists what a line of a jobs file may hold, for every
// operation or one: each field with its type and whether it is required,
// then an example line. Everything comes from the table in internal/ops
// and the operation's binding, the example line from the binding's
// command-line example, so the list cannot drift from what batch checks.
func (a *app) batchFieldsCommand() *cobra.Command {
	var names []string
	for _, op := range ops.All {
		names = append(names, op.Name)
	}
	return &cobra.Command{
		Use:   "fields [OP]",
		Short: "List each operation's fields for a jobs file, with an example line",
		Long: `List the fields a line of a jobs file may hold, for every operation or
for the one named (such as image/text-to-image): each field's name as in
the API, its type (text, number, url, id, path, array), whether it is
required or its default, what it is, and an example line.

An id field takes the id or its label (creative ids lists them); a path is
a file inside the folder of the jobs file; a number left out takes its
default. Every line may also have an "id" naming the job and its files.`,
		Example:   "  creative batch fields\n  creative batch fields image/text-to-image",
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: names,
		RunE: cmdutil.Ran(func(cmd *cobra.Command, args []string) error {
			list := ops.All
			if len(args) == 1 {
				op, ok := ops.Lookup(args[0])
				if !ok {
					return unknownOp(args[0])
				}
				list = []ops.Op{op}
			}
			for i, op := range list {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				if err := writeJobFields(a.stdout, op, bindings[op.Name]); err != nil {
					return err
				}
			}
			return nil
		}),
	}
}

// unknownOp refuses a name that is no operation, with the nearest names.
func unknownOp(name string) error {
	msg := fmt.Sprintf("batch fields: no operation %q", name)
	if near := ops.Nearest(name); len(near) > 0 {
		msg += "; did you mean " + strings.Join(cmdutil.QuoteAll(near), " or ") + "?"
	} else {
		msg += " (creative batch fields lists them all)"
	}
	return cmdutil.Usagef("%s", msg)
}

// writeJobFields writes op's block of the list: its name and summary, a
// line per field, and an example line.
func writeJobFields(w io.Writer, op ops.Op, b binding) error {
	line, err := exampleLine(op, b)
	if err != nil {
		return fmt.Errorf("creative: %s: the example %q: %w", op.Name, b.example, err)
	}
	fmt.Fprintf(w, "%s: %s\n", op.Name, op.Summary)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range op.Fields {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", f.Name, jobType(f), jobNeed(f), jobHelp(b, f))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "  e.g. %s\n", line)
	return err
}

// jobType names the kind of JSON value a field takes.
func jobType(f ops.Field) string {
	switch f.Type {
	case ops.Number:
		return "number"
	case ops.Link:
		return "url"
	case ops.ID:
		return "id"
	case ops.File:
		return "path"
	case ops.Array:
		return "array"
	}
	return "text"
}

// jobNeed says whether a line must give the field, or what leaving it out
// means.
func jobNeed(f ops.Field) string {
	switch {
	case f.Default != 0:
		return "default " + strconv.FormatFloat(f.Default, 'f', -1, 64)
	case f.Required:
		return "required"
	}
	return "optional"
}

// jobHelp says what a field is, in words for a jobs file.
func jobHelp(b binding, f ops.Field) string {
	h, ok := b.jobHelp[f.Name]
	if !ok {
		h = b.help[f.Name]
	}
	switch f.Type {
	case ops.ID:
		if h == "" {
			h = strings.ReplaceAll(f.IDKind, "-", " ")
		}
		h += " (an id or its label: creative ids " + f.IDKind + ")"
	case ops.File:
		h += " (a path inside the jobs file's folder)"
	}
	return h
}

// exampleLine is the binding's command-line example as a line of a jobs
// file: each flag that names a field becomes the field, the other flags
// (the writer's --job-role) are put into fields as the command does.
func exampleLine(op ops.Op, b binding) (string, error) {
	words, err := shellWords(b.example)
	if err != nil {
		return "", err
	}
	words = words[3:] // creative <area> <operation>
	p := newParams(op, func(field string) string { return field })
	extra := pflag.NewFlagSet(op.Name, pflag.ContinueOnError)
	if b.extra != nil {
		b.extra(extra, p)
	}
	fields := map[string]any{}
	for i := 0; i < len(words); i += 2 {
		name, ok := strings.CutPrefix(words[i], "--")
		if !ok || i+1 == len(words) {
			return "", fmt.Errorf("%q is not a flag with a value", words[i])
		}
		if err := setExample(op, extra, fields, name, words[i+1]); err != nil {
			return "", err
		}
	}
	if b.prepare != nil {
		if err := b.prepare(p, fields); err != nil {
			return "", err
		}
	}
	return renderLine(op, fields)
}

// setExample sets the field a flag names, as a jobs file would give it
// (an id by the label given), or else the extra flag.
func setExample(op ops.Op, extra *pflag.FlagSet, fields map[string]any, flag, value string) error {
	for _, f := range op.Fields {
		if kebab(f.Name) != flag {
			continue
		}
		switch f.Type {
		case ops.Number:
			n, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return fmt.Errorf("--%s: %w", flag, err)
			}
			fields[f.Name] = n
		case ops.Array:
			var v []any
			if err := json.Unmarshal([]byte(value), &v); err != nil {
				return fmt.Errorf("--%s: %w", flag, err)
			}
			fields[f.Name] = v
		default:
			fields[f.Name] = value
		}
		return nil
	}
	return extra.Set(flag, value)
}

// renderLine writes a job as one JSON line: "op" first, then the fields
// in the table's order.
func renderLine(op ops.Op, fields map[string]any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	encode := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		return nil
	}
	add := func(name string, v any) error {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if err := encode(name); err != nil {
			return err
		}
		b.WriteByte(':')
		return encode(v)
	}
	if err := add("op", op.Name); err != nil {
		return "", err
	}
	for _, f := range op.Fields {
		if v, ok := fields[f.Name]; ok {
			if err := add(f.Name, v); err != nil {
				return "", err
			}
		}
	}
	return "{" + b.String() + "}", nil
}

// shellWords splits a command line as a shell would split a simple one:
// words separated by spaces, a double-quoted word kept whole.
func shellWords(s string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, word.String())
				word.Reset()
			}
			inWord = false
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("a quote is not closed")
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}
