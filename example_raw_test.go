package creative_test

import (
	"context"
	"fmt"
	"strings"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
)

// Execute calls an endpoint by its path, with the Client's base URL, key,
// retries and bounds: here one the SDK wraps too, against the fake service.
// The body is any value (encoded as JSON), the answer decoded into res.
func ExampleClient_Execute() {
	srv := creativetest.NewServer()
	defer srv.Close()
	c := srv.Client()

	var out struct {
		Success bool   `json:"success"`
		Data    string `json:"data"`
	}
	err := c.Execute(context.Background(), "POST", "/audio/v1/text-to-music",
		map[string]any{"prompt": "calm piano", "duration": 8}, &out)
	fmt.Println(err, out.Success, strings.HasPrefix(out.Data, "http"))

	// A path that would leave the base URL is refused, nothing sent.
	err = c.Get(context.Background(), "https://elsewhere.example/x", nil)
	fmt.Println(err)
	// Output:
	// <nil> true true
	// creative: GET https://elsewhere.example/x: path must be a path under the base URL, not a URL of its own: the access key goes only to the base URL
}

// WithJSONSet sends a field the request type does not have yet, and
// WithRawAnswerInto keeps the answer as it came, to read a field the
// result type does not have.
func ExampleWithJSONSet() {
	srv := creativetest.NewServer()
	defer srv.Close()
	c := srv.Client()

	var raw creative.RawAnswer
	_, err := c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "calm piano"},
		creative.WithJSONSet("mix.reverb", 0.3), creative.WithRawAnswerInto(&raw))
	if err != nil {
		panic(err)
	}
	sent := srv.Requests()[0].JSON
	fmt.Println(string(sent))
	msg, _ := raw.Get("message")
	fmt.Println(string(msg))
	// Output:
	// {"prompt":"calm piano","mix":{"reverb":0.3}}
	// "audio/text-to-music: done"
}
