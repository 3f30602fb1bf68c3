package creative_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
)

// The writer tool's answers carry more than the spec shows: each choice has
// finish_reason and logprobs beside text, index and word_count, and the text
// object more beside its choices. What the spec does not show is skipped,
// and what it shows arrives typed.
func TestTheWriterKeepsWhatTheSpecShowsOfARicherAnswer(t *testing.T) {
	srv := creativetest.NewServer()
	t.Cleanup(srv.Close)
	var sent map[string]any
	srv.Handle(creativetest.OpWriterTool, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &sent)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"success":true,"message":"Process completed successfully","data":{
			"language":"English","useCase":"CoverLetter","word_count":7,
			"text":{
				"id":"cmpl-8x","object":"text_completion","created":1716000000,"model":"m-1",
				"choices":[
					{"text":"Dear team,\nI write Go.","index":0,"logprobs":null,"finish_reason":"stop","word_count":5},
					{"finish_reason":"length","logprobs":{"tokens":["Hello"," there"],"token_logprobs":[-0.1,-0.2],"top_logprobs":[{"Hello":-0.1}],"text_offset":[0,5]},
					 "message":{"role":"assistant","content":"ignored"},"text":"Hello there","index":1,"word_count":2,"extra":[1,{"a":null}]}
				],
				"usage":{"prompt_tokens":31,"completion_tokens":12,"total_tokens":43}
			},
			"credits":3
		}}`)
	})

	res, err := srv.Client().CoverLetter(context.Background(), creative.CoverLetterRequest{
		JobRole: "Backend engineer", JobSkills: "Go, SQL", Language: "English", Tone: "formal", Number: 2,
	})
	require.NoError(t, err)
	assert.Equal(t, &creative.WriterResult{
		Language:  "English",
		UseCase:   "CoverLetter",
		WordCount: 7,
		Choices: []creative.WriterChoice{
			{Text: "Dear team,\nI write Go.", Index: 0, WordCount: 5},
			{Text: "Hello there", Index: 1, WordCount: 2},
		},
	}, res)
	assert.Equal(t, "CoverLetter", sent["useCase"], "the request reached the handler")
}

// A writer that echoes the access key in what it writes, or in the
// language it names, gives it to a caller who prints and saves the text:
// the key is redacted there too, in any form the redactor knows.
func TestTheWriterTextNeverHoldsTheAccessKey(t *testing.T) {
	srv := creativetest.NewServer()
	t.Cleanup(srv.Close)
	key := srv.AccessKey
	srv.Handle(creativetest.OpWriterTool, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		data, _ := json.Marshal(map[string]any{
			"language": "English " + key, "useCase": "CoverLetter/" + hex.EncodeToString([]byte(key)), "word_count": 4,
			"text": map[string]any{"choices": []map[string]any{{"text": "Dear team, my key is " + key + ".", "index": 0, "word_count": 4}}},
		})
		_, _ = io.WriteString(w, `{"success":true,"message":"ok","data":`+string(data)+`}`)
	})

	res, err := srv.Client().CoverLetter(context.Background(), creative.CoverLetterRequest{
		JobRole: "Backend engineer", JobSkills: "Go, SQL", Language: "English", Tone: "formal",
	})
	require.NoError(t, err)
	got := fmt.Sprintf("%+v", res)
	assert.NotContains(t, got, key)
	assert.NotContains(t, got, hex.EncodeToString([]byte(key)))
	assert.Equal(t, "Dear team, my key is [redacted].", res.Choices[0].Text)
	assert.Equal(t, "English [redacted]", res.Language)
}
