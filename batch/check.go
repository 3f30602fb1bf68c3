package batch

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/ops"
	"github.com/creativegen/creative-go/internal/suggest"
)

// A task is a checked job: its operation, its resolved fields, its
// identity and the name of its files.
type task struct {
	job     Job
	op      ops.Op
	vals    map[string]any    // resolved: ids as ids, numbers as float64
	paths   map[string]string // file fields: the path in the FS (nil: none)
	content string            // the canonical form the identity hashes, without the occurrence
	key     string            // the identity: 32 hex digits
	last    *record           // its last attempt in the ledger, when read
	live    bool              // last is a claim of a run the engine holds live
}

// idPattern is what a job's id may be: it names files.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// A checker turns jobs into tasks, checking every field as the SDK does
// before a call; it is safe for concurrent use.
type checker struct{ files *files }

func lineErr(j Job, field string, format string, args ...any) error {
	return &LineError{Line: j.Line, Field: field, Err: fmt.Errorf(format, args...)}
}

// check turns j into a task, resolving its fields by the table of
// operations and validating its request, or returns a *LineError.
func (c *checker) check(j Job) (*task, error) {
	if j.Op == "" {
		return nil, lineErr(j, "op", `must name the operation, such as "image/text-to-image"`)
	}
	op, ok := ops.Lookup(j.Op)
	if !ok {
		return nil, lineErr(j, "op", "unknown operation %q%s", j.Op,
			didYouMean(ops.Nearest(j.Op), ` (an operation is an API path, such as "image/text-to-image")`))
	}
	if j.ID != "" && (!idPattern.MatchString(j.ID) || strings.Trim(j.ID, "0123456789") == "") {
		return nil, lineErr(j, "id", `must be letters, digits, ".", "_" or "-", starting with a letter or digit and not digits only (it names files), got %q`, j.ID)
	}
	t := &task{job: j, op: op, vals: make(map[string]any, len(j.Fields))}
	for _, name := range slices.Sorted(maps.Keys(j.Fields)) {
		f, ok := op.Field(name)
		if !ok {
			return nil, noSuchField(j, op, name)
		}
		if err := c.set(t, f, j.Fields[name]); err != nil {
			return nil, &LineError{Line: j.Line, Field: name, Err: err}
		}
	}
	// One form for the lines the SDK sends alike, so that leaving a field
	// out and giving what it means are one job, paid once.
	ops.Canonical(op, t.vals)
	if err := c.validate(t); err != nil {
		return nil, err
	}
	return t, nil
}

// noSuchField refuses a field op does not take, naming the fields nearest
// to it ("id" included) and those op takes.
func noSuchField(j Job, op ops.Op, name string) error {
	var names []string
	for _, f := range op.Fields {
		names = append(names, f.Name)
	}
	near := suggest.Nearest(name, append([]string{"id"}, names...))
	return lineErr(j, name, "%s takes no such field%s (it takes: %s)", op.Name, didYouMean(near, ""), strings.Join(names, ", "))
}

// didYouMean names the near names, or says otherwise when there are none.
func didYouMean(near []string, otherwise string) string {
	if len(near) == 0 {
		return otherwise
	}
	for i, n := range near {
		near[i] = strconv.Quote(n)
	}
	return "; did you mean " + strings.Join(near, " or ") + "?"
}

// set checks and stores one field.
func (c *checker) set(t *task, f ops.Field, v any) error {
	switch f.Type {
	case ops.Number:
		return setNumber(t, f, v)
	case ops.Array:
		if _, ok := v.([]any); !ok {
			return errors.New("must be an array")
		}
		t.vals[f.Name] = v
		return nil
	}
	rv := reflect.ValueOf(v) // a string, or of a named string type: ids.StyleAnime, creative.UseCase
	if rv.Kind() != reflect.String {
		return errors.New("must be a string")
	}
	s := rv.String()
	var err error
	switch f.Type {
	case ops.ID:
		s, err = ids.Parse(f.IDKind, s)
	case ops.File:
		if t.paths == nil {
			t.paths = map[string]string{}
		}
		t.paths[f.Name], err = c.files.check(s)
	}
	t.vals[f.Name] = s
	return err
}

// setNumber checks a number: a number of any Go type, finite, and neither
// 0 nor null where the spec gives a default the service applies (that
// would silently be the default). The SDK's request says whether it must
// be whole.
func setNumber(t *task, f ops.Field, v any) error {
	specDefault := !f.Required && f.Default != 0
	if v == nil {
		if specDefault {
			return fmt.Errorf("is null: leave it out for the service's default (%v)", f.Default)
		}
		return errors.New("must be a number, not null")
	}
	n, ok := toFloat(v)
	if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
		return fmt.Errorf("must be a number, got %s", shown(v))
	}
	if n == 0 && specDefault {
		return fmt.Errorf("is 0: leave it out for the service's default (%v)", f.Default)
	}
	t.vals[f.Name] = n
	return nil
}

// toFloat reads a number of any Go type.
func toFloat(v any) (float64, bool) {
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanFloat():
		return rv.Float(), true
	case rv.CanInt():
		return float64(rv.Int()), true
	case rv.CanUint():
		return float64(rv.Uint()), true
	}
	return 0, false
}

// shown is v as the line wrote it (JSON), cut to 40 runes: the value an
// error names.
func shown(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v) // NaN or an infinity given from Go
	}
	if r := []rune(string(b)); len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return string(b)
}

// validate runs the SDK's own checks on the task's request (its Validate),
// then identifies the task.
func (c *checker) validate(t *task) error {
	req, closeFiles, err := c.files.request(t)
	if err == nil {
		err = req.Validate()
		closeFiles()
	}
	if err != nil {
		return lineError(t.job.Line, err)
	}
	return c.identify(t)
}

// lineError is err, a failure to make or validate a job's request, as the
// *LineError of its line: the field at fault and why.
func lineError(line int, err error) *LineError {
	if le, ok := errors.AsType[*LineError](err); ok {
		return le
	}
	if ve, ok := errors.AsType[*creative.ValidationError](err); ok {
		why := ve.Rule
		if ve.Value != "" {
			why += ", got " + ve.Value
		}
		return &LineError{Line: line, Field: ve.Field, Err: errors.New(why)}
	}
	field, why, ok := strings.Cut(err.Error(), ": ")
	if !ok {
		return &LineError{Line: line, Err: err}
	}
	return &LineError{Line: line, Field: field, Err: errors.New(why)}
}

// identify computes the task's canonical content: its operation and
// resolved fields, each file field replaced by the SHA-256 of the file's
// content, as JSON with sorted keys.
func (c *checker) identify(t *task) error {
	canon := t.vals // Content adds "op", which no field is named, taken out below
	if len(t.paths) > 0 {
		canon = maps.Clone(t.vals)
	}
	defer delete(canon, "op")
	for field, p := range t.paths {
		sum, err := c.files.hash(p)
		if err != nil {
			return &LineError{Line: t.job.Line, Field: field, Err: err}
		}
		canon[field] = "sha256:" + sum
	}
	content, err := ops.Content(t.op.Name, canon)
	if err != nil {
		return &LineError{Line: t.job.Line, Err: err}
	}
	t.content = content
	return nil
}

// identity tells jobs apart, their occurrence aside: the hash of the id,
// else of the content.
func identity(id, content string) [32]byte {
	if id != "" {
		return sha256.Sum256([]byte("id\x00" + id))
	}
	return sha256.Sum256([]byte("content\x00" + content))
}

// setOccurrence gives t its key: the identity of its id, or of its content
// and its occurrence among jobs of identical content (from 1).
func (t *task) setOccurrence(n int) {
	sum := identity(t.job.ID, t.content+"\x00"+strconv.Itoa(n))
	t.key = hex.EncodeToString(sum[:16])
}

// A seen set tells, in fixed memory, which identities may occur more than
// once in a pass over the jobs: a Bloom filter of 2^24 bits (2 MiB) says
// whether an identity was maybe met before, and only those (the true
// repeats, and about 0.2% false alarms at a million jobs) are kept exactly.
// A later pass counts the occurrences of the kept ones exactly.
type seen struct {
	bits  []uint64
	cands map[[32]byte]int // maybe repeated identities -> occurrences counted so far
}

const seenBits = 1 << 24

func newSeen() *seen { return &seen{bits: make([]uint64, seenBits/64), cands: map[[32]byte]int{}} }

// add records an identity; it reports whether it may have been met before
// (then it becomes a candidate).
func (s *seen) add(id [32]byte) bool {
	all := true
	for i := range 4 {
		b := binary.LittleEndian.Uint64(id[i*8:]) % seenBits
		if s.bits[b/64]&(1<<(b%64)) == 0 {
			all = false
			s.bits[b/64] |= 1 << (b % 64)
		}
	}
	if all {
		s.cands[id] = 0
	}
	return all
}

// count counts one more occurrence of id and returns its number (from 1):
// 1 for an identity that was never a candidate.
func (s *seen) count(id [32]byte) int {
	n, ok := s.cands[id]
	if !ok {
		return 1
	}
	s.cands[id] = n + 1
	return n + 1
}

// reset forgets the counts of a pass, for the next.
func (s *seen) reset() {
	for id := range s.cands {
		s.cands[id] = 0
	}
}
