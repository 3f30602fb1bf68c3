package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/ops"
)

// params are the fields of one call, named as on the wire, as a command
// line or a line of a batch file gave them. Per-operation code (see
// bindings) reads them into the SDK's request struct.
type params struct {
	op   ops.Op
	vals map[string]any // string (text, links, resolved ids, file paths), float64, []any
	// name says how the user named a field: "--number-of-results" on the
	// command line, "numberOfResults" in a batch file.
	name func(field string) string
	bad  error
	// The writer tool's CoverLetter shorthand flags.
	jobRole, jobSkills string
}

func newParams(op ops.Op, name func(string) string) *params {
	return &params{op: op, vals: map[string]any{}, name: name}
}

// failf records the first problem met while reading the fields.
func (p *params) failf(field, format string, args ...any) {
	if p.bad == nil {
		p.bad = usagef("%s %s", p.name(field), fmt.Sprintf(format, args...))
	}
}

// str returns a text, link, id or file path ("" when not given).
func (p *params) str(field string) string {
	s, _ := p.vals[field].(string)
	return s
}

// num returns a number (0 when not given, which the SDK reads as unset).
func (p *params) num(field string) float64 {
	f, _ := p.vals[field].(float64)
	return f
}

// whole returns a number that must be a whole one.
func (p *params) whole(field string) int {
	f := p.num(field)
	if f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		p.failf(field, "must be a whole number, got %s", strconv.FormatFloat(f, 'g', -1, 64))
		return 0
	}
	return int(f)
}

// array returns a JSON array (nil when not given).
func (p *params) array(field string) []any {
	a, _ := p.vals[field].([]any)
	return a
}

// file returns an upload of the file at the field's path; the SDK reports
// a file it cannot read before sending anything.
func (p *params) file(field string) creative.File {
	if path := p.str(field); path != "" {
		return creative.FileFromPath(path)
	}
	return creative.File{}
}

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
			return fmt.Errorf("not a JSON array")
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
