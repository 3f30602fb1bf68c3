package creativetest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"strings"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
)

// A test starts the fake service, takes a client wired to it and calls the
// SDK as the code under test would; no key and no network are needed. In a
// test, creativetest.Start(t) does the same and closes the Server when the
// test ends.
func ExampleNewServer() {
	srv := creativetest.NewServer()
	defer srv.Close()
	c := srv.Client()

	music, err := c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "jazz", Duration: 2})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.HasPrefix(string(music), srv.URL+"/files/"))
	fmt.Println(srv.Count("audio/text-to-music"))
	// Output:
	// true
	// 1
}

// Fail makes the next calls of an operation fail: here a 503 asking to
// retry after a minute, once. InstantRetryAfter makes the client retry at
// once instead of waiting the minute out: the call succeeds within its 30 s
// timeout (without InstantRetryAfter, the client would return the 503 at
// once, since the wait asked for ends after the deadline), and Count says
// the service was called twice.
func ExampleServer_Fail() {
	srv := creativetest.NewServer()
	defer srv.Close()
	srv.Fail("image/generate-qr", creativetest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "60"})
	c := srv.Client(creativetest.InstantRetryAfter(), creative.WithTimeout(30*time.Second))

	qr, err := c.GenerateQR(context.Background(), creative.GenerateQRRequest{URL: "https://example.com", Prompt: "flowers"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(qr.ContentType(), srv.Count("image/generate-qr"))
	// Output: image/png 2
}

// A fault that outlasts the client's retries ends the call with an
// *APIError that says how many attempts were made and carries the request
// id the Server gave the last answer.
func ExampleServer_Fail_exhaustedRetries() {
	srv := creativetest.NewServer()
	defer srv.Close()
	srv.Fail("image/up-scale", creativetest.Fault{Times: 3, Status: http.StatusServiceUnavailable, Message: "upstream is down"})
	c := srv.Client(creative.WithMaxRetries(2))

	_, err := c.UpScale(context.Background(), creative.UpScaleRequest{URL: "https://example.com/cat.png"})
	var apiErr *creative.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Attempts, errors.Is(err, creative.ErrServer), apiErr.RequestID)
	}
	fmt.Println(srv.Count("image/up-scale"))
	// Output:
	// 503 3 true req-3
	// 3
}

// Requests shows what arrived, for assertions on the wire: the operation,
// the JSON body as sent, the status answered. The access key is not kept.
func ExampleServer_Requests() {
	srv := creativetest.NewServer()
	defer srv.Close()
	srv.Fail("audio/text-to-music", creativetest.Fault{Status: http.StatusServiceUnavailable})
	c := srv.Client()

	if _, err := c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "calm piano"}); err != nil {
		log.Fatal(err)
	}
	for _, r := range srv.Requests() {
		fmt.Println(r.Operation, r.Status, string(r.JSON), r.Header.Get("X-Access-Key") == "")
	}
	// Output:
	// audio/text-to-music 503 {"prompt":"calm piano"} true
	// audio/text-to-music 200 {"prompt":"calm piano"} true
}

// Every answer of the Server carries an X-Request-Id, so code that logs or
// reports request ids can be tested: WithResponseInto captures the last
// answer's headers.
func ExampleServer_Client_requestID() {
	srv := creativetest.NewServer()
	defer srv.Close()
	var resp *http.Response
	c := srv.Client(creative.WithResponseInto(&resp))

	if _, err := c.GenerateQR(context.Background(), creative.GenerateQRRequest{URL: "https://example.com", Prompt: "p"}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.StatusCode, resp.Header.Get("X-Request-Id"))
	// Output: 200 req-1
}
