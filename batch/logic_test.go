package batch

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/ops"
)

// What a run does with a job, by its last attempt: the rules a rerun
// follows, whatever the Store.
func TestWhatARunDoesWithEachState(t *testing.T) {
	call := func(s State) *record { return &record{Record: Record{State: s}, Kind: KindCall} }
	download := &record{Record: Record{State: Claimed}, Kind: KindDownload}
	lost := &record{Record: Record{State: Answered, Lost: true}}
	for _, tc := range []struct {
		name string
		last *record
		live bool // the claim's run still beats
		o    Options
		want action
	}{
		{"never claimed: sent", nil, false, Options{}, actCall},
		{"failed: sent again", call(Failed), false, Options{}, actCall},
		{"refused: sent again", call(Refused), false, Options{}, actCall},
		{"done: its files are checked", call(Done), false, Options{}, actCheck},
		{"answered: downloaded, not paid again", call(Answered), false, Options{}, actDownload},
		{"answered, links dead: left", lost, false, Options{}, actLeave},
		{"answered, links dead, RepayLost: paid again", lost, false, Options{RepayLost: true}, actCall},
		{"unknown: left", call(Unknown), false, Options{}, actLeave},
		{"unknown, ResendUnknown: sent again", call(Unknown), false, Options{ResendUnknown: true}, actCall},
		{"claimed by a run that is gone: left", call(Claimed), false, Options{}, actLeave},
		{"claimed by a run that is gone, ResendUnknown: sent again", call(Claimed), false, Options{ResendUnknown: true}, actCall},
		{"claimed by a live run: its worker's", call(Claimed), true, Options{}, actElsewhere},
		{"claimed by a live run, ResendUnknown: still its worker's", call(Claimed), true, Options{ResendUnknown: true}, actElsewhere},
		{"a download whose worker is gone: downloaded, free", download, false, Options{}, actDownload},
		{"a download on a live run: its worker's", download, true, Options{}, actElsewhere},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, decide(tc.last, &tc.o, tc.live))
		})
	}
}

// A job's files are named by its id, or by its line and a mark of its
// identity, then the operation, numbered when there are several.
func TestOutputNames(t *testing.T) {
	op, _ := ops.Lookup(ops.TextToImage)
	key := "3fa9c1e0d2b4a6f8091a2b3c4d5e6f70"
	for _, tc := range []struct {
		job  Job
		i, n int
		want string
	}{
		{Job{Line: 3}, 0, 1, "000003-text-to-image-3fa9c1.png"},
		{Job{Line: 3}, 1, 2, "000003-text-to-image-3fa9c1-2.png"},
		{Job{Line: 1234567}, 0, 1, "1234567-text-to-image-3fa9c1.png"},
		{Job{ID: "fox", Line: 3}, 0, 1, "fox-text-to-image.png"},
		{Job{ID: "fox", Line: 3}, 0, 3, "fox-text-to-image-1.png"},
	} {
		tk := &task{job: tc.job, op: op, key: key}
		assert.Equal(t, tc.want, fileName(tk.stem(), tc.i, tc.n, ".png"))
	}
}

// A summary counts each job, ended or left alone, by its last attempt.
func TestASummaryCountsEachJobLeftByItsLastAttempt(t *testing.T) {
	var sum Summary
	for _, r := range []Record{{State: Answered, Lost: true}, {State: Claimed}, {State: Unknown}, {State: Unknown},
		{State: Done}, {State: Failed}, {State: Refused}, {State: Refused}, {State: Answered}} {
		sum.tally(&record{Record: r})
	}
	assert.Equal(t, Summary{Lost: 1, Claimed: 1, Unknown: 2, Done: 1, Failed: 1, Refused: 2, Waiting: 1}, sum)
}

// A job's fields are checked against the table before anything else: each
// refusal names the field.
func TestAJobsFieldsAreCheckedAgainstTheTable(t *testing.T) {
	c := &checker{files: &files{fsys: nil}}
	for _, tc := range []struct {
		job   Job
		field string
		want  string
	}{
		{Job{}, "op", "must name the operation"},
		{Job{Op: "image/text-to-imag"}, "op", `did you mean "image/text-to-image"?`},
		{Job{Op: "image/remove-bg"}, "op", `did you mean "image/remove-background"?`},
		{Job{Op: ops.TextToImage, ID: "../up"}, "id", "must be letters"},
		{Job{Op: ops.TextToImage, ID: "123"}, "id", "not digits only"},
		{Job{Op: ops.TextToImage, Fields: map[string]any{"colour": "red"}}, "colour", "takes no such field"},
		{Job{Op: ops.TextToImage, Fields: map[string]any{"prompt": 3}}, "prompt", "must be a string"},
		{Job{Op: ops.TextToImage, Fields: map[string]any{"numberOfResults": "2"}}, "numberOfResults", `must be a number, got "2"`},
		{Job{Op: ops.TextToImage, Fields: map[string]any{"numberOfResults": []any{strings.Repeat("two ", 20)}}}, "numberOfResults", `must be a number, got ["two two two two two two two two two...`},
		{Job{Op: ops.TextToImage, Fields: map[string]any{"styleId": "no such style"}}, "styleId", "unknown style"},
		{Job{Op: ops.TextToMusic, Fields: map[string]any{"duration": 0}}, "duration", "is 0: leave it out"},
		{Job{Op: ops.InfiniteZoom, Fields: map[string]any{"numberOfIteration": nil}}, "numberOfIteration", "is null: leave it out"},
		{Job{Op: ops.WriterTool, Fields: map[string]any{"inputs": "text"}}, "inputs", "must be an array"},
	} {
		_, err := c.check(tc.job)
		var le *LineError
		require.True(t, errors.As(err, &le), "%+v: %v", tc.job, err)
		assert.Equal(t, tc.field, le.Field, "%+v", tc.job)
		assert.Contains(t, le.Err.Error(), tc.want, "%+v", tc.job)
	}

}

// Jobs whose requests the SDK sends alike are one job, whatever the line
// left out: a rerun of either pays nothing twice.
func TestJobsSentAlikeAreOneJob(t *testing.T) {
	c := &checker{files: &files{fsys: nil}}
	letter := map[string]any{"inputs": []any{map[string]any{"jobRole": "r", "jobSkills": "s"}}, "language": "en", "useCase": "CoverLetter", "tone": "warm"}
	with := func(m map[string]any, k string, v any) map[string]any {
		m = maps.Clone(m)
		m[k] = v
		return m
	}
	for _, group := range [][]Job{
		{
			{Op: ops.TextToImage, Fields: map[string]any{"prompt": "p"}},
			{Op: ops.TextToImage, Fields: map[string]any{"prompt": "p", "numberOfResults": 1}},
			{Op: ops.TextToImage, Fields: map[string]any{"prompt": "p", "numberOfResults": 0}},
			{Op: ops.TextToImage, Fields: map[string]any{"prompt": "p", "numberOfResults": 1.0}},
		},
		{
			{Op: ops.WriterTool, Fields: letter},
			{Op: ops.WriterTool, Fields: with(letter, "number", 0)},
			{Op: ops.WriterTool, Fields: with(letter, "number", 1)},
		},
	} {
		var contents []string
		for _, j := range group {
			task, err := c.check(j)
			require.NoError(t, err, "%+v", j)
			contents = append(contents, task.content)
		}
		for i := range contents {
			assert.Equal(t, contents[0], contents[i], "%+v", group[i])
		}
	}
	// A Go program may give the ids' constants: a style as a constant is
	// the job of the style as a string.
	g, err := c.check(Job{Op: ops.TextToImage, Fields: map[string]any{"prompt": "p", "styleId": ids.StyleAnime}})
	require.NoError(t, err)
	h, err := c.check(Job{Op: ops.TextToImage, Fields: map[string]any{"prompt": "p", "styleId": "anime"}})
	require.NoError(t, err)
	assert.Equal(t, h.content, g.content)

	// What the SDK sends differently is another job.
	a, err := c.check(Job{Op: ops.TextToImage, Fields: map[string]any{"prompt": "p"}})
	require.NoError(t, err)
	b, err := c.check(Job{Op: ops.TextToImage, Fields: map[string]any{"prompt": "p", "numberOfResults": 2}})
	require.NoError(t, err)
	assert.NotEqual(t, a.content, b.content)
	d, err := c.check(Job{Op: ops.WriterTool, Fields: with(letter, "action", "other")})
	require.NoError(t, err)
	e, err := c.check(Job{Op: ops.WriterTool, Fields: letter})
	require.NoError(t, err)
	assert.NotEqual(t, d.content, e.content)
	// A cover letter's action written out is another job than one left
	// out, as ledgers have always told them: the same form either way
	// would change the identity of one of them, and send it again.
	w, err := c.check(Job{Op: ops.WriterTool, Fields: with(letter, "action", "generate_writenow")})
	require.NoError(t, err)
	assert.NotEqual(t, w.content, e.content)
}

// An attempt reads as one flat JSON object, as the object ledger of
// earlier versions wrote its records: those are read so when an earlier
// ledger is brought to the schema.
func TestARecordIsOneFlatJSONObject(t *testing.T) {
	old := `{"job":"3fa9c1e0d2b4a6f8091a2b3c4d5e6f70","line":3,"op":"image/text-to-image","attempt":1,"kind":"call","state":"done","stem":"000003-text-to-image-3fa9c1","files":["000003-text-to-image-3fa9c1.png"],"run":"0123","time":"2026-11-01T10:00:00Z"}`
	var r record
	require.NoError(t, json.Unmarshal([]byte(old), &r))
	assert.Equal(t, KindCall, r.Kind)
	assert.Equal(t, "000003-text-to-image-3fa9c1", r.Stem)
	assert.Equal(t, Done, r.State)
	assert.Equal(t, []string{"000003-text-to-image-3fa9c1.png"}, r.Files)
	var back map[string]any
	b, err := json.Marshal(&r)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &back))
	for _, k := range []string{"job", "kind", "stem", "state", "files", "run", "time"} {
		assert.Contains(t, back, k, "a top-level member")
	}
}
