package sqlitestore

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/creativegen/creative-go/batch"
)

// columns are the columns of objects that a record of the ledger or a
// heartbeat fills, from its key and its JSON, as its row is written, in
// the order rowArgs gives them; NULL in every other row.
const columns = "stage, attempt, line, id, op, kind, state, lost, requests, request_id, error, worker, run, time, pid, last"

// nColumns is how many columns holds.
const nColumns = 16

// rowArgs returns the arguments of a row's insert: its key, its bytes
// (nil for an output, whose bytes are its file) and what columns hold.
//
// A record is a row whose key is a record's of the ledger,
// ledger/<3 hex>/<job: 32 hex>.<attempt>[.answered|[.<info>].end].json,
// and whose bytes are a JSON object: its stage comes from the key, read by
// batch.RecordStage (and its job, a column of its own, from the key too),
// the rest from the JSON. A heartbeat is a row under ledger/runs/ whose
// bytes are a JSON object: its worker, run, time and pid. A value
// is what SQLite's json_extract gives for it: a string as TEXT, a whole
// number as INTEGER, true and false as 1 and 0, null or a missing field as
// NULL.
func rowArgs(key string, data []byte) []any {
	args := make([]any, 2, 2+nColumns)
	args[0], args[1] = key, data
	if data == nil {
		return append(args, make([]any, nColumns)...)
	}
	stage := batch.RecordStage(key)
	heartbeat := stage == "" && strings.HasPrefix(key, "ledger/runs/") && strings.HasSuffix(key, ".json")
	var f fields
	if stage == "" && !heartbeat || json.Unmarshal(data, &f) != nil {
		return append(args, make([]any, nColumns)...)
	}
	if heartbeat {
		return append(args, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, f.Worker.v, f.Run.v, f.Time.v, f.PID.v, nil)
	}
	// A record is written as its job's last; the triggers see to the
	// record it follows, or to itself when a later one is there.
	return append(args, stage, f.Attempt.v, f.Line.v, f.ID.v, f.Op.v, f.Kind.v, f.State.v, f.Lost.v,
		f.Requests.v, f.RequestID.v, f.Error.v, f.Worker.v, f.Run.v, f.Time.v, nil, int64(1))
}

// fields are the fields of a record or a heartbeat that have columns.
type fields struct {
	Attempt   value `json:"attempt"`
	Line      value `json:"line"`
	ID        value `json:"id"`
	Op        value `json:"op"`
	Kind      value `json:"kind"`
	State     value `json:"state"`
	Lost      value `json:"lost"`
	Requests  value `json:"requests"`
	RequestID value `json:"requestId"`
	Error     value `json:"error"`
	Worker    value `json:"worker"`
	Run       value `json:"run"`
	Time      value `json:"time"`
	PID       value `json:"pid"`
}

// A value is a JSON value as SQLite's json_extract gives it.
type value struct{ v any }

func (x *value) UnmarshalJSON(b []byte) error {
	switch b[0] {
	case '"':
		var s string
		err := json.Unmarshal(b, &s)
		x.v = s
		return err
	case 't':
		x.v = int64(1)
	case 'f':
		x.v = int64(0)
	case 'n':
		x.v = nil
	case '{', '[':
		var buf bytes.Buffer
		err := json.Compact(&buf, b)
		x.v = buf.String()
		return err
	default:
		if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			x.v = n
			return nil
		}
		f, err := strconv.ParseFloat(string(b), 64)
		x.v = f
		return err
	}
	return nil
}
