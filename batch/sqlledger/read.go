package sqlledger

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/creativegen/creative-go/batch"
)

// Status counts the jobs by state.
func (l *Ledger) Status(ctx context.Context) (batch.Status, error) {
	st := batch.Status{States: map[batch.State]int{}}
	err := l.sweep(ctx)
	if err == nil {
		err = l.each(ctx, l.q["status"], nil, func(rows *sql.Rows) error {
			var state string
			var lost, n int
			err := rows.Scan(&state, &lost, &n)
			st.Jobs += n
			st.States[batch.State(state)] += n
			st.Lost += n * lost
			return err
		})
	}
	if err == nil {
		err = l.db.QueryRowContext(ctx, l.q["inFlight"]).Scan(&st.InFlight)
	}
	if err == nil {
		err = l.each(ctx, l.q["budget"], nil, func(rows *sql.Rows) error {
			var c string
			var spent, lim int64
			err := rows.Scan(&c, &spent, &lim)
			if c == "calls" {
				st.Budget.Calls, st.Budget.CallsLimit = spent, lim
			} else {
				st.Budget.Spent, st.Budget.SpendLimit = float64(spent)/1e6, float64(lim)/1e6
			}
			return err
		})
	}
	if err != nil {
		return st, fmt.Errorf("sqlledger: %w", err)
	}
	return st, nil
}

// Version is the Dialect's version of the jobs and their attempts (see
// batch.Versioned), or "" where the engine has none.
func (l *Ledger) Version(ctx context.Context) (v string, err error) {
	if l.d.Version != "" {
		err = l.db.QueryRowContext(ctx, l.d.Version).Scan(&v)
	}
	return v, err
}

// each runs q and calls f for each row, until f fails.
func (l *Ledger) each(ctx context.Context, q string, args []any, f func(*sql.Rows) error) error {
	rows, err := l.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for err == nil && rows.Next() {
		err = f(rows)
	}
	return cmp.Or(err, rows.Err())
}

// Jobs yields every job's last attempt, a page at a time (Dialect.Page
// rows, read after the last key of the page before), the next page read
// while this one is handed on: memory follows two pages, never the
// ledger.
func (l *Ledger) Jobs(ctx context.Context, maybePaid bool) iter.Seq2[*batch.Entry, error] {
	q := l.q["jobs"]
	if maybePaid {
		q = l.q["maybePaid"]
	}
	return func(yield func(*batch.Entry, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type rows struct {
			got []batch.Last
			err error
		}
		next := make(chan rows, 1)
		read := func(after string) {
			got, err := l.query(ctx, l.page, q, after, l.page)
			next <- rows{got, err}
		}
		go read("")
		for {
			r := <-next
			if r.err != nil {
				yield(nil, r.err)
				return
			}
			more := len(r.got) == l.page
			if more {
				go read(r.got[len(r.got)-1].Job)
			}
			for i := range r.got {
				if !yield(&r.got[i].Entry, nil) {
					return
				}
			}
			if !more {
				return
			}
		}
	}
}

// Last returns the last attempts of jobs, in one query.
func (l *Ledger) Last(ctx context.Context, jobs []string) ([]batch.Last, error) {
	if len(jobs) > batch.MaxLast {
		return nil, fmt.Errorf("sqlledger: %d jobs asked at once, more than %d", len(jobs), batch.MaxLast)
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	args := make([]any, len(jobs))
	for i, j := range jobs {
		args[i] = j
	}
	q := l.d.bind(queries["last"] + strings.Repeat("?, ", len(jobs)-1) + "?)")
	return l.query(ctx, len(jobs), q, args...)
}

// query reads the entries q selects, at most n.
func (l *Ledger) query(ctx context.Context, n int, q string, args ...any) ([]batch.Last, error) {
	got := make([]batch.Last, 0, n)
	var js rowJSON
	err := l.each(ctx, q, args, func(rows *sql.Rows) error {
		got = append(got, batch.Last{})
		return js.scan(rows, &got[len(got)-1])
	})
	if err != nil {
		return nil, fmt.Errorf("sqlledger: %w", err)
	}
	return got, nil
}

// rowJSON is what scan reads a row's entryCols into, kept from row to
// row: the JSON columns (fields, URLs, files) as bytes, decoded from them.
type rowJSON struct {
	id, text, errText, reqID sql.NullString
	ms                       int64
	secs                     sql.NullFloat64
	lost, live               int
	raw                      [3][]byte
	dst                      []any
}

// scan reads the entryCols of a row into e.
func (js *rowJSON) scan(row interface{ Scan(...any) error }, e *batch.Last) error {
	js.dst = append(js.dst[:0], &e.Job, &js.id, &e.Line, &e.Op, &e.Stem, &js.raw[0], &e.Attempt, &e.Kind,
		&e.Run, &e.Worker, &e.State, &js.lost, &js.raw[1], &js.text, &js.raw[2], &js.errText, &e.Requests, &js.reqID, &js.ms,
		&js.secs, &js.live)
	if err := row.Scan(js.dst...); err != nil {
		return err
	}
	e.ID, e.Text, e.Error, e.RequestID = js.id.String, js.text.String, js.errText.String, js.reqID.String
	e.Lost, e.Live, e.Seconds = js.lost != 0, js.live != 0, js.secs.Float64
	e.Time = time.UnixMilli(js.ms).UTC()
	for i, dst := range []any{&e.Fields, &e.URLs, &e.Files} {
		if js.raw[i] != nil {
			if err := json.Unmarshal(js.raw[i], dst); err != nil {
				return err
			}
		}
	}
	return nil
}
