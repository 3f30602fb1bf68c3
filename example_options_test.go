package creative_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"golang.org/x/time/rate"
)

// The options of New work on one call too, overriding the Client's for
// that call only.
func ExampleOption_perCall() {
	srv := creativetest.NewServer()
	defer srv.Close()
	c := srv.Client(creative.WithMaxRetries(0)) // the Client never retries...
	srv.Fail("audio/text-to-music", creativetest.Fault{Times: 2, Status: 503})

	// ...but this call may retry three times, within 30 s in all, each
	// attempt bounded to 10 s until its answer's headers arrive.
	u, err := c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "calm piano"},
		creative.WithMaxRetries(3),
		creative.WithTimeout(30*time.Second),
		creative.WithRequestTimeout(10*time.Second),
		creative.WithHeader("X-Tenant", "acme"),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("got a URL:", u != "")
	for _, r := range srv.Requests() {
		fmt.Println(r.Operation, r.Status, r.Header.Get("X-Tenant"))
	}
	// Output:
	// got a URL: true
	// audio/text-to-music 503 acme
	// audio/text-to-music 503 acme
	// audio/text-to-music 200 acme
}

// Middleware sees every attempt, retries included: here, one line per
// attempt. A Client's middleware wraps a call's.
func ExampleWithMiddleware() {
	srv := creativetest.NewServer()
	defer srv.Close()
	srv.Fail("image/generate-qr", creativetest.Fault{Status: 503})

	attempt := func(name string) creative.Middleware {
		return func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
			fmt.Println(name, "sends", req.Method, req.URL.Path)
			resp, err := next(req)
			if err != nil {
				return nil, err
			}
			fmt.Println(name, "got", resp.Status)
			return resp, nil
		}
	}
	c := srv.Client(creative.WithMiddleware(attempt("client")))
	_, err := c.GenerateQR(context.Background(), creative.GenerateQRRequest{URL: "https://example.com", Prompt: "spring"},
		creative.WithMiddleware(attempt("  call")))
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// client sends POST /image/v1/generate-qr
	//   call sends POST /image/v1/generate-qr
	//   call got 503 Service Unavailable
	// client got 503 Service Unavailable
	// client sends POST /image/v1/generate-qr
	//   call sends POST /image/v1/generate-qr
	//   call got 200 OK
	// client got 200 OK
}

// WithResponseInto hands over the last attempt's response: its status and
// headers (its body has been read and closed).
func ExampleWithResponseInto() {
	srv := creativetest.NewServer()
	defer srv.Close()
	var resp *http.Response
	_, err := srv.Client().GenerateQR(context.Background(), creative.GenerateQRRequest{URL: "https://example.com", Prompt: "p"},
		creative.WithResponseInto(&resp))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	n, _ := io.Copy(io.Discard, resp.Body)
	fmt.Println("body left to read:", n)
	// Output:
	// 200 application/json
	// body left to read: 0
}

// An APIError carries the answer's request id (X-Request-Id,
// X-Amzn-RequestId, X-Amz-Cf-Id or Cf-Ray), and its message says it, so a
// log line is enough for support.
func ExampleAPIError_requestID() {
	srv := creativetest.NewServer()
	defer srv.Close()
	srv.Handle("image/generate-qr", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-7f3a")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"success":false,"message":"url: not reachable"}`)
	})
	_, err := srv.Client().GenerateQR(context.Background(), creative.GenerateQRRequest{URL: "https://example.com", Prompt: "p"})
	var apiErr *creative.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.RequestID)
	}
	fmt.Println(err)
	// Output:
	// req-7f3a
	// creative: image/generate-qr: HTTP 400: url: not reachable (request id req-7f3a)
}

// WithRateLimiter makes every attempt of every call of the Client, retries
// included, wait for a token: here of a limiter of 100 a second with bursts
// of 1, so 11 calls at once take at least 100 ms.
func ExampleWithRateLimiter() {
	srv := creativetest.NewServer()
	defer srv.Close()
	c := srv.Client(creative.WithRateLimiter(rate.NewLimiter(100, 1)))

	start := time.Now()
	var wg sync.WaitGroup
	for range 11 {
		wg.Go(func() {
			if _, err := c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "p", Duration: 1}); err != nil {
				log.Print(err)
			}
		})
	}
	wg.Wait()
	fmt.Println(srv.Count("audio/text-to-music"), "calls, at least 100 ms:", time.Since(start) >= 100*time.Millisecond)
	// Output: 11 calls, at least 100 ms: true
}

// A 502 may come after the service did the work: by default the call is
// not sent again and its error matches ErrOutcomeUnknown. WithRetryMayPayAgain
// sends it again, at the price of maybe paying again.
func ExampleWithRetryMayPayAgain() {
	srv := creativetest.NewServer()
	defer srv.Close()
	c := srv.Client()

	srv.Fail("audio/text-to-music", creativetest.Fault{Times: 1, Status: http.StatusBadGateway})
	_, err := c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "calm piano"})
	fmt.Println(errors.Is(err, creative.ErrOutcomeUnknown), srv.Count("audio/text-to-music"))

	srv.Fail("audio/text-to-music", creativetest.Fault{Times: 1, Status: http.StatusBadGateway})
	u, err := c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "calm piano"},
		creative.WithRetryMayPayAgain())
	fmt.Println(err == nil && u != "", srv.Count("audio/text-to-music"))
	// Output:
	// true 1
	// true 3
}
