package sqlledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/creativegen/creative-go/batch"
)

// Claim makes the attempt c asks for, in one transaction: a first
// attempt's job row is made if new, else the row is locked and its last
// attempt read; the claim is judged (c.Allowed), a claim of a gone run
// taken over marks that run gone, the budget's share is taken, and the
// attempt is made only while c.Run is not gone.
func (l *Ledger) Claim(ctx context.Context, c *batch.Claim) (batch.ClaimResult, error) {
	if l.claims != nil && c.Attempt == 1 && c.Allowed(nil, false) && c.Share.MaxCalls <= 0 && c.Share.MaxSpend <= 0 &&
		l.claims.do(ctx, batchRow{c.Job, []any{c.Job, nullString(c.ID), c.Line, c.Op, c.Stem, jsonText(c.Fields, c.Fields == nil),
			string(c.Kind), c.Run, c.Worker, jsonText(c.URLs, c.URLs == nil)}}) == nil {
		return batch.ClaimResult{Claimed: true}, nil // in a batch (Dialect.Batch)
	}
	var res batch.ClaimResult
	err := l.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res = batch.ClaimResult{}
		var made int64
		if c.Attempt == 1 { // a new job's row is made as claimed by its first attempt
			var err error
			if made, err = l.exec(ctx, tx, "newJob", c.Job, nullString(c.ID), c.Line, c.Op, c.Stem, jsonText(c.Fields, c.Fields == nil)); err != nil {
				return err
			}
		}
		if made == 0 {
			if err := l.lock(ctx, tx, c.Job); err != nil {
				return err
			}
			var last batch.Last
			switch err := new(rowJSON).scan(l.row(ctx, tx, "lastOne", c.Job), &last); {
			case errors.Is(err, sql.ErrNoRows): // no attempt yet
			case err != nil:
				return err
			case last.Attempt == c.Attempt && last.Run == c.Run:
				res.Claimed = true // an earlier try of this claim landed
				return nil
			default:
				if last.Live {
					if held, err := l.d.Probe(ctx, tx, last.Run); err == nil && !held {
						last.Live = false
					}
				}
				res.Last, res.Live = &last.Entry, last.Live
			}
		}
		if !c.Allowed(res.Last, res.Live) {
			return nil
		}
		if res.Last != nil && res.Last.State == batch.Claimed {
			if _, err := l.exec(ctx, tx, "markGone", res.Last.Run); err != nil {
				return err
			}
		}
		n, err := l.exec(ctx, tx, "claim", c.Job, c.Attempt, string(c.Kind), c.Run, c.Worker,
			jsonText(c.URLs, c.URLs == nil), c.Run)
		if err != nil {
			return err
		}
		if n == 0 {
			return batch.ErrLeaseLost
		}
		if c.Kind == batch.KindCall {
			if err := l.spend(ctx, tx, c.Share); err != nil {
				return err
			}
		}
		if made == 0 {
			_, err = l.exec(ctx, tx, "claimJob", c.Attempt, nullString(c.ID), c.Line, c.Op, c.Stem,
				jsonText(c.Fields, c.Fields == nil), c.Job)
		}
		res = batch.ClaimResult{Claimed: err == nil}
		return err
	})
	if err != nil {
		return batch.ClaimResult{}, fmt.Errorf("sqlledger: claiming job %s: %w", c.Job, err)
	}
	return res, nil
}

// lock locks the row of job where the engine locks rows
// (Dialect.ForUpdate).
func (l *Ledger) lock(ctx context.Context, tx *sql.Tx, job string) error {
	if l.d.ForUpdate == "" {
		return nil
	}
	_, err := l.exec(ctx, tx, "lockJob", job)
	return err
}

// spend takes share s of the budget in tx, or answers ErrBudgetSpent.
func (l *Ledger) spend(ctx context.Context, tx *sql.Tx, s batch.Share) error {
	for _, c := range []struct {
		cap, what   string
		amount, max int64
	}{{"calls", strconv.FormatInt(s.MaxCalls, 10) + " calls", s.Calls, s.MaxCalls},
		{"spend", strconv.FormatFloat(float64(s.MaxSpend)/1e6, 'f', -1, 64) + " in prices", s.Spend, s.MaxSpend}} {
		if c.max <= 0 || c.amount <= 0 {
			continue
		}
		n, err := l.exec(ctx, tx, "spend", c.amount, c.max, c.cap, c.amount, c.max)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: a call would pass the cap of %s", batch.ErrBudgetSpent, c.what)
		}
	}
	return nil
}

// Take takes a share of the budget for a call sent again. A try whose
// commit landed and whose answer was lost is taken twice: the cap counts
// more than was sent, never less.
func (l *Ledger) Take(ctx context.Context, run string, s batch.Share) error {
	if err := l.write(ctx, func(ctx context.Context, tx *sql.Tx) error { return l.spend(ctx, tx, s) }); err != nil {
		return fmt.Errorf("sqlledger: %w", err)
	}
	return nil
}

// Record writes the answer or the end of an attempt, fenced: only while
// the attempt is its job's last and its run is not gone.
func (l *Ledger) Record(ctx context.Context, a *batch.Entry) error {
	if l.records != nil && l.records.do(ctx, batchRow{a.Job, append(recordArgs(a), a.Run)}) == nil {
		return nil // in a batch (Dialect.Batch)
	}
	err := l.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := l.lock(ctx, tx, a.Job); err != nil {
			return err
		}
		var run, state, errText string
		var lost, gone, n int
		err := l.row(ctx, tx, "ownAttempt", a.Attempt, a.Job).Scan(&run, &state, &lost, &errText, &n, &gone)
		switch {
		case errors.Is(err, sql.ErrNoRows) || err == nil && run != a.Run:
			return batch.ErrFenced
		case err != nil:
			return err
		case batch.State(state) == a.State && (lost != 0) == a.Lost && errText == a.Error:
			return nil // an earlier try of this record landed
		case n != a.Attempt || gone != 0 || state != string(batch.Claimed) && state != string(batch.Answered):
			return batch.ErrFenced
		}
		args := recordArgs(a)
		if _, err := l.exec(ctx, tx, "record", args...); err != nil {
			return err
		}
		_, err = l.exec(ctx, tx, "recordJob", args[0], args[1], a.Job)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlledger: recording job %s: %w", a.Job, err)
	}
	return nil
}

// recordArgs are the values of the statement "record" of a, its job's
// state and lost first.
func recordArgs(a *batch.Entry) []any {
	lost := 0
	if a.Lost {
		lost = 1
	}
	return []any{string(a.State), lost, jsonText(a.URLs, a.URLs == nil), nullString(a.Text), jsonText(a.Files, a.Files == nil),
		nullString(a.Error), a.Requests, nullString(a.RequestID), a.Seconds, a.Job, a.Attempt}
}
