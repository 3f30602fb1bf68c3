package ops

import (
	"math"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Content is the canonical content of a request of the operation named op
// whose wire-named fields, brought to one form by Canonical, are canon (a
// file field given as "sha256:" and the hex SHA-256 of its bytes): op
// added under "op", as JSON with sorted keys. Batch identifies a job by it
// and a cassette matches a recorded request by it. canon is changed.
//
// Its bytes are json.Marshal's with json.Deterministic: a job's identity
// in a ledger written before depends on them. Values a decoded JSON object
// holds (strings, float64s, bools, nil, []any, map[string]any) are written
// here without reflection, byte for byte as Marshal writes them (the
// test holds the two to it); anything else goes to Marshal.
func Content(op string, canon map[string]any) (string, error) {
	canon["op"] = op
	if b, ok := appendCanonical(make([]byte, 0, 256), canon); ok {
		return string(b), nil
	}
	b, err := json.Marshal(canon, json.Deterministic(true))
	return string(b), err
}

// appendCanonical appends v to b as json.Marshal with Deterministic would
// write it, where v is made only of what a decoded JSON value holds; ok
// is false for anything else (another type, a string that is not UTF-8, a
// number JSON has not), which the caller gives to Marshal.
func appendCanonical(b []byte, v any) (_ []byte, ok bool) {
	var err error
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, v), true
	case string:
		b, err = jsontext.AppendQuote(b, v)
		return b, err == nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return b, false
		}
		return jsontext.AppendFloat(b, v, 64), true
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendCanonical(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = jsontext.AppendQuote(b, k); err != nil {
				return b, false
			}
			if b, ok = appendCanonical(append(b, ':'), v[k]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}
