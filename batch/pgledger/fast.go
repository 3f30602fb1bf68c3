package pgledger

import (
	"context"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/sqlledger"
)

// A Ledger is the batch.Ledger in a PostgreSQL database: sqlledger's, with
// the two writes of every job sent in batches. Claims of jobs the ledger
// has never seen, and records of a run's own attempts that are still
// their jobs' last, go as one statement for all the goroutines that ask at
// once (its own transaction: one round trip). What that statement does
// not take, and any error of it, goes sqlledger's way, one job a
// transaction, which reads back what a batch whose answer was lost wrote
// and applies every rule.
type Ledger struct {
	*sqlledger.Ledger
	gone    string // the SQL condition that run r is gone
	claims  *group[*batch.Claim]
	records *group[*batch.Entry]
}

var _ batch.Ledger = (*Ledger)(nil)

// Batches: how many may be in flight at once, and their size.
const (
	slots     = 8
	batchSize = 128
)

func newLedger(l *sqlledger.Ledger, d sqlledger.Dialect) *Ledger {
	fl := &Ledger{Ledger: l,
		gone: strings.ReplaceAll("(r.gone <> 0 OR r.ended IS NOT NULL OR "+d.Stale+")", "NOW", d.Now)}
	fl.claims = newGroup(slots, batchSize, fl.claimNew)
	fl.records = newGroup(slots, batchSize, fl.recordOwn)
	return fl
}

// Claim claims c, in a batch when c is the first attempt of a job the
// ledger may never have seen and takes nothing of a capped budget.
func (l *Ledger) Claim(ctx context.Context, c *batch.Claim) (batch.ClaimResult, error) {
	if c.Attempt == 1 && c.Allowed(nil, false) && c.Share.MaxCalls <= 0 && c.Share.MaxSpend <= 0 &&
		l.claims.do(ctx, c) {
		return batch.ClaimResult{Claimed: true}, nil
	}
	return l.Ledger.Claim(ctx, c)
}

// Record records a, in a batch when it is a stage of its run's own attempt
// that is still its job's last.
func (l *Ledger) Record(ctx context.Context, a *batch.Entry) error {
	if l.records.do(ctx, a) {
		return nil
	}
	return l.Ledger.Record(ctx, a)
}

// claimNewSQL makes the first attempt of each job that has no row, by a
// run that is not gone, and returns those it made.
const claimNewSQL = `WITH u AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
		AS u(job, id, line, op, stem, fields, kind, run, worker, urls)
), ok AS (
	SELECT u.* FROM u WHERE EXISTS (SELECT 1 FROM runs r WHERE r.token = u.run AND NOT GONE)
), j AS (
	INSERT INTO jobs (job, id, line, op, stem, fields, attempt, state)
	SELECT job, id, line, op, stem, fields, 1, 'claimed' FROM ok
	ON CONFLICT (job) DO NOTHING RETURNING job
)
INSERT INTO attempts (job, n, kind, run, worker, state, urls, claimed)
SELECT ok.job, 1, ok.kind, ok.run, ok.worker, 'claimed', ok.urls, NOW FROM ok JOIN j USING (job)
RETURNING job`

// recordOwnSQL writes each stage whose attempt is its job's last, made by
// the run that records it, not ended, by a run that is not gone (the
// job's row locked as sqlledger's Record locks it), and returns those it
// wrote.
const recordOwnSQL = `WITH u AS (
	SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::text[], $9::text[], $10::int[], $11::text[], $12::float8[])
		AS u(job, n, run, state, lost, urls, text, files, error, requests, request_id, seconds)
), ok AS (
	SELECT u.* FROM u
	JOIN jobs j ON j.job = u.job AND j.attempt = u.n
	JOIN attempts a ON a.job = u.job AND a.n = u.n AND a.run = u.run AND a.state IN ('claimed', 'answered')
	JOIN runs r ON r.token = u.run AND NOT GONE
	FOR UPDATE OF j
), jj AS (
	UPDATE jobs j SET state = ok.state, lost = ok.lost FROM ok WHERE j.job = ok.job
)
UPDATE attempts a SET state = ok.state, lost = ok.lost, urls = ok.urls, text = ok.text, files = ok.files,
	error = ok.error, requests = ok.requests, request_id = ok.request_id, ended = NOW, seconds = ok.seconds
FROM ok WHERE a.job = ok.job AND a.n = ok.n
RETURNING a.job`

// claimNew makes the statement that claims cs (see group.prepare).
func (l *Ledger) claimNew(cs []*batch.Claim) func(context.Context) ([]bool, error) {
	var job, id, op, stem, fields, kind, run, worker, urls []*string
	var line []int64
	first := firsts(len(cs), func(i int) string { return cs[i].Job })
	for i, c := range cs {
		if !first[i] {
			continue // the one-at-a-time way decides the second
		}
		job, id, op, stem = append(job, ptr(c.Job)), append(id, nullable(c.ID)), append(op, ptr(c.Op)), append(stem, ptr(c.Stem))
		line = append(line, int64(c.Line))
		fields = append(fields, jsonText(c.Fields, c.Fields == nil))
		kind, run, worker = append(kind, ptr(string(c.Kind))), append(run, ptr(c.Run)), append(worker, ptr(c.Worker))
		urls = append(urls, jsonText(c.URLs, c.URLs == nil))
	}
	args := []any{job, id, line, op, stem, fields, kind, run, worker, urls}
	return l.sendBatch(claimNewSQL, args, jobsOf(len(cs), func(i int) string { return cs[i].Job }), first)
}

// recordOwn makes the statement that records es (see group.prepare).
func (l *Ledger) recordOwn(es []*batch.Entry) func(context.Context) ([]bool, error) {
	var job, run, state, urls, text, files, errText, reqID []*string
	var n, lost, requests []int32
	var seconds []float64
	first := firsts(len(es), func(i int) string { return es[i].Job })
	for i, e := range es {
		if !first[i] {
			continue
		}
		job, run, state = append(job, ptr(e.Job)), append(run, ptr(e.Run)), append(state, ptr(string(e.State)))
		n, requests = append(n, int32(e.Attempt)), append(requests, int32(e.Requests))
		lost = append(lost, map[bool]int32{false: 0, true: 1}[e.Lost])
		urls, files = append(urls, jsonText(e.URLs, e.URLs == nil)), append(files, jsonText(e.Files, e.Files == nil))
		text, errText, reqID = append(text, nullable(e.Text)), append(errText, nullable(e.Error)), append(reqID, nullable(e.RequestID))
		seconds = append(seconds, e.Seconds)
	}
	args := []any{job, n, run, state, lost, urls, text, files, errText, requests, reqID, seconds}
	return l.sendBatch(recordOwnSQL, args, jobsOf(len(es), func(i int) string { return es[i].Job }), first)
}

// sendBatch returns what runs q with args and says, for each of jobs,
// whether q returned it (and it was the first of its job in the batch).
// Everything it reads was copied before: a caller that stopped waiting may
// change its request meanwhile.
func (l *Ledger) sendBatch(q string, args []any, jobs []string, first []bool) func(context.Context) ([]bool, error) {
	q = l.bind(q)
	return func(ctx context.Context) ([]bool, error) {
		got, err := l.returned(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		ok := make([]bool, len(jobs))
		for i, j := range jobs {
			ok[i] = first[i] && got[j]
		}
		return ok, nil
	}
}

// jobsOf copies the jobs of n requests.
func jobsOf(n int, job func(int) string) []string {
	js := make([]string, n)
	for i := range n {
		js[i] = job(i)
	}
	return js
}

// returned runs q and collects the jobs it returns.
func (l *Ledger) returned(ctx context.Context, q string, args ...any) (map[string]bool, error) {
	rows, err := l.DB().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var j string
		if err := rows.Scan(&j); err != nil {
			return nil, err
		}
		got[j] = true
	}
	return got, rows.Err()
}

func (l *Ledger) bind(q string) string {
	return strings.ReplaceAll(strings.ReplaceAll(q, "GONE", l.gone), "NOW", now)
}

// firsts marks the first of n requests for each job: a job twice in one
// batch goes once, and the second the one-at-a-time way.
func firsts(n int, job func(int) string) []bool {
	seen := make(map[string]bool, n)
	first := make([]bool, n)
	for i := range n {
		first[i] = !seen[job(i)]
		seen[job(i)] = true
	}
	return first
}

func ptr(s string) *string { return &s }

// nullable is s, or NULL for "", as sqlledger writes them.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// jsonText is v as JSON, or NULL for a nil map or slice, as sqlledger
// writes them.
func jsonText(v any, isNil bool) *string {
	if isNil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil // fields of JSON values and strings always encode
	}
	s := string(b)
	return &s
}
