// Package opcall calls any operation of the table in internal/ops by its
// row, with fields named as on the wire. It is the one mapping from named
// fields (a line of a jobs file, the flags of a command, a request the fake
// service received) to the SDK's request types, read from the types
// themselves: the method a row names takes the request type, whose json
// (or, for a form, url) tags name its fields.
package opcall

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/ops"
)

// A Request is a request of the SDK, such as creative.TextToImageRequest.
type Request interface {
	// Validate reports what would make the call fail before anything is
	// sent, as a *creative.ValidationError.
	Validate() error
}

var (
	clientType = reflect.TypeFor[*creative.Client]()
	fileType   = reflect.TypeFor[creative.File]()
)

// A shape is how an operation's request type holds its fields.
type shape struct {
	method string
	typ    reflect.Type
	fields map[string]int // wire name -> index of the struct field
}

var shapes sync.Map // op name -> *shape

// shapeOf reads the shape of op's request type from its method.
func shapeOf(op ops.Op) (*shape, error) {
	if sh, ok := shapes.Load(op.Name); ok {
		return sh.(*shape), nil
	}
	m, ok := clientType.MethodByName(op.Method)
	if !ok || m.Type.NumIn() != 4 {
		return nil, fmt.Errorf("opcall: %s: the Client has no method %q taking a request", op.Name, op.Method)
	}
	sh := &shape{method: op.Method, typ: m.Type.In(2), fields: map[string]int{}}
	for i := range sh.typ.NumField() {
		sh.fields[wireName(sh.typ.Field(i))] = i
	}
	shapes.Store(op.Name, sh)
	return sh, nil
}

// wireName is the name a struct field has on the wire: its json tag, else
// its url tag (form fields), else, for a file part, its name in lower case.
func wireName(f reflect.StructField) string {
	for _, key := range []string{"json", "url"} {
		if name, _, _ := strings.Cut(f.Tag.Get(key), ","); name != "" && name != "-" {
			return name
		}
	}
	return strings.ToLower(f.Name[:1]) + f.Name[1:]
}

// Build returns op's request with fields set. Each key names a field of op
// as the wire does; each value is a string (for ids and links too), a
// float64 (a whole one for a count), a []any (the writer's inputs) or a
// creative.File. A field the request does not hold, or a value of the
// wrong kind, is an error naming the field.
func Build(op ops.Op, fields map[string]any) (Request, error) {
	sh, err := shapeOf(op)
	if err != nil {
		return nil, err
	}
	req := reflect.New(sh.typ).Elem()
	for name, v := range fields {
		i, ok := sh.fields[name]
		if !ok {
			return nil, fmt.Errorf("%s: %s takes no such field", name, op.Name)
		}
		if err := set(req.Field(i), v); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return req.Interface().(Request), nil
}

// set stores v in the struct field f.
func set(f reflect.Value, v any) error {
	if f.Type() == fileType {
		file, ok := v.(creative.File)
		if !ok {
			return fmt.Errorf("must be a file, got %T", v)
		}
		f.Set(reflect.ValueOf(file))
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("must be a string, got %T", v)
		}
		f.SetString(s)
	case reflect.Int:
		n, ok := v.(float64)
		if !ok || n != math.Trunc(n) {
			return fmt.Errorf("must be a whole number, got %v", v)
		}
		if math.Abs(n) > math.MaxInt32 {
			return fmt.Errorf("is out of range, got %v", v)
		}
		f.SetInt(int64(n))
	case reflect.Float64:
		n, ok := v.(float64)
		if !ok {
			return fmt.Errorf("must be a number, got %T", v)
		}
		f.SetFloat(n)
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("must be an array, got %T", v)
		}
		f.Set(reflect.ValueOf(a))
	default:
		return fmt.Errorf("opcall: no way to set a %s", f.Type())
	}
	return nil
}

// Call calls op's method on c with req, a request Build made for op, and
// returns its result as the method does (creative.URL, []creative.Image,
// *creative.Audio, ...).
func Call(ctx context.Context, c *creative.Client, op ops.Op, req Request, opts ...creative.Option) (any, error) {
	sh, err := shapeOf(op)
	if err != nil {
		return nil, err
	}
	out := reflect.ValueOf(c).MethodByName(sh.method).CallSlice([]reflect.Value{
		reflect.ValueOf(ctx), reflect.ValueOf(req), reflect.ValueOf(opts),
	})
	err, _ = out[1].Interface().(error)
	return out[0].Interface(), err
}
