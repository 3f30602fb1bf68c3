package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/jsonsyntax"
	"github.com/creativegen/creative-go/internal/opcall"
	"github.com/creativegen/creative-go/internal/ops"
)

// params are the fields of one call, named as on the wire, as a command
// line gave them; request makes the SDK's request of them.
type params struct {
	op   ops.Op
	vals map[string]any // string (text, links, resolved ids, file paths), float64, []any
	// name says how the user named a field: "--number-of-results" on the
	// command line, "numberOfResults" in a batch file.
	name func(field string) string
	// The writer tool's CoverLetter shorthand flags.
	jobRole, jobSkills string
}

func newParams(op ops.Op, name func(string) string) *params {
	return &params{op: op, vals: map[string]any{}, name: name}
}

// request builds the SDK's request from the fields given, files opened by
// their paths; a value the request cannot hold is a usage error naming its
// flag.
func (p *params) request(b binding) (opcall.Request, error) {
	fields := make(map[string]any, len(p.vals))
	for name, v := range p.vals {
		f, _ := p.op.Field(name)
		if err := f.CheckGiven(v); err != nil {
			return nil, cmdutil.Usagef("%s %v", p.name(name), err)
		}
		if f.Type == ops.File {
			v = creative.FileFromPath(v.(string))
		}
		fields[name] = v
	}
	if b.prepare != nil {
		if err := b.prepare(p, fields); err != nil {
			return nil, err
		}
	}
	req, err := opcall.Build(p.op, fields)
	if err != nil {
		field, why, _ := strings.Cut(err.Error(), ": ")
		return nil, cmdutil.Usagef("%s %s", p.name(field), why)
	}
	if err := req.Validate(); err != nil {
		var ve *creative.ValidationError
		if errors.As(err, &ve) {
			if _, isFlag := p.op.Field(ve.Field); isFlag {
				return nil, &invalidFlag{ve, p.name(ve.Field)}
			}
		}
		return nil, err
	}
	return req, nil
}

// An invalidFlag is the SDK's *creative.ValidationError of a field given as
// a flag, worded with the flag's name.
type invalidFlag struct {
	ve   *creative.ValidationError
	flag string
}

// Error reads as the SDK's error, the flag in place of the field:
// "creative: image/text-to-image: --number-of-results must be between 1
// and 10, got 11".
func (e *invalidFlag) Error() string {
	msg := "creative: " + e.ve.Operation + ": " + e.flag + " " + e.ve.Rule
	if e.ve.Value != "" {
		msg += ", got " + e.ve.Value
	}
	return msg
}

// Unwrap returns the SDK's error.
func (e *invalidFlag) Unwrap() error { return e.ve }

// setText sets a field of any type from a command-line word.
func (p *params) setText(f ops.Field, s string) error {
	switch f.Type {
	case ops.Number:
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("not a number")
		}
		p.vals[f.Name] = v
	case ops.ID:
		id, err := ids.Parse(f.IDKind, s)
		if err != nil {
			return err
		}
		p.vals[f.Name] = id
	case ops.Array:
		var a []any
		if err := json.Unmarshal([]byte(s), &a); err != nil || a == nil {
			if off, what, ok := jsonsyntax.Describe([]byte(s)); ok {
				return fmt.Errorf("not a JSON array: column %d: %s: %s", jsonsyntax.Column([]byte(s), off), what, jsonsyntax.Excerpt([]byte(s), off))
			}
			return fmt.Errorf(`not a JSON array such as '[{"topic":"foxes"}]'`)
		}
		p.vals[f.Name] = a
	default:
		p.vals[f.Name] = s
	}
	return nil
}

// kebab turns a wire name into a flag name: numberOfResults becomes
// number-of-results, imageSizeId image-size-id.
func kebab(name string) string {
	var b strings.Builder
	for i, r := range name {
		if 'A' <= r && r <= 'Z' {
			if i > 0 {
				b.WriteByte('-')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
