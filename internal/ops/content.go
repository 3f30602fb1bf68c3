package ops

import "github.com/go-json-experiment/json"

// Content is the canonical content of a request of the operation named op
// whose wire-named fields, brought to one form by Canonical, are canon (a
// file field given as "sha256:" and the hex SHA-256 of its bytes): op
// added under "op", as JSON with sorted keys. Batch identifies a job by it
// and a cassette matches a recorded request by it. canon is changed.
func Content(op string, canon map[string]any) (string, error) {
	canon["op"] = op
	b, err := json.Marshal(canon, json.Deterministic(true))
	return string(b), err
}
