package creativeotel_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/creativetest"
	creativeotel "github.com/creativegen/creative-go/otel"
)

// One call whose first attempt the service refuses (503): the call's span
// has an attempt span for each attempt, each with its verdict. A program
// gives its own providers (an OTLP exporter, say); here the spans are kept
// in memory and printed as a tree.
func Example() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tel, err := creativeotel.New(creativeotel.WithTracerProvider(tp), creativeotel.WithMeterProvider(mp),
		creativeotel.WithPrices(map[string]float64{"image/generate-qr": 0.02}))
	if err != nil {
		panic(err)
	}

	srv := creativetest.NewServer()
	defer srv.Close()
	srv.Fail("image/generate-qr", creativetest.Fault{Status: http.StatusServiceUnavailable, Message: "warming up"})
	c := srv.Client(tel.ClientOption(), creative.WithRetryWait(time.Millisecond, 2*time.Millisecond))
	defer c.CloseIdleConnections()

	if _, err := c.GenerateQR(context.Background(), creative.GenerateQRRequest{URL: "https://example.com", Prompt: "spring flowers"}); err != nil {
		panic(err)
	}
	printTree(os.Stdout, spans.Ended())
	// Output:
	// generate_content image/generate-qr [gen_ai.operation.name=generate_content gen_ai.output.type=image creative.operation=image/generate-qr http.response.status_code=200 creative.verdict=answered creative.attempts=2]
	//   attempt [http.request.resend_count=0 http.response.status_code=503 creative.verdict=refused creative.retry=true creative.retry_reason=refused (HTTP 503) error.type=503]
	//   attempt [http.request.resend_count=1 http.response.status_code=200 creative.verdict=answered creative.retry=false]
}

// A small batch: the run's span (the program's own) holds a call span for
// each job, and BatchMetrics counts the jobs, those maybe paid and the
// spending against the cap.
func Example_batch() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	prices := map[string]float64{"image/generate-qr": 0.02, "audio/text-to-music": 0.05, "text/writer-tool": 0.01}
	tel, err := creativeotel.New(creativeotel.WithTracerProvider(tp), creativeotel.WithMeterProvider(mp), creativeotel.WithPrices(prices))
	if err != nil {
		panic(err)
	}
	budget := batch.Budget{MaxSpend: 1, Prices: prices}
	progress, err := tel.NewBatchMetrics(budget)
	if err != nil {
		panic(err)
	}
	defer progress.Close()

	srv := creativetest.NewServer()
	defer srv.Close()
	srv.Fail("image/generate-qr", creativetest.Fault{Status: http.StatusTooManyRequests})
	srv.Fail("audio/text-to-music", creativetest.Fault{Status: http.StatusBadGateway})
	c := srv.Client(tel.ClientOption(), creative.WithRetryWait(time.Millisecond, 2*time.Millisecond))
	defer c.CloseIdleConnections()
	r, err := batch.New(c, ledgertest.NewMemory(), ledgertest.NewFiles(), batch.Options{Concurrency: 1, OnEvent: progress.OnEvent, Budget: budget})
	if err != nil {
		panic(err)
	}
	ctx, run := tp.Tracer("example").Start(context.Background(), "batch run")
	checked, err := r.Check(ctx, batch.Values(slices.Values([]batch.Job{
		{Op: "image/generate-qr", ID: "qr", Fields: map[string]any{"url": "https://example.com", "prompt": "flowers"}},
		{Op: "audio/text-to-music", ID: "music", Fields: map[string]any{"prompt": "calm piano"}},
		{Op: "text/writer-tool", ID: "letter", Fields: map[string]any{"useCase": "CoverLetter", "action": "generate_writenow", "language": "English", "tone": "formal", "number": 1,
			"inputs": []any{map[string]any{"jobRole": "Engineer", "jobSkills": "Go"}}}},
	})))
	if err != nil {
		panic(err)
	}
	sum, err := r.Run(ctx, checked)
	run.End()
	progress.Summary(sum)
	fmt.Printf("done %d, maybe paid %d, err %v\n", sum.Done, sum.Unknown, err)
	printTree(os.Stdout, spans.Ended())
	// Output:
	// done 2, maybe paid 1, err <nil>
	// batch run []
	//   generate_content image/generate-qr [gen_ai.operation.name=generate_content gen_ai.output.type=image creative.operation=image/generate-qr http.response.status_code=200 creative.verdict=answered creative.attempts=2]
	//     attempt [http.request.resend_count=0 http.response.status_code=429 creative.verdict=refused creative.retry=true creative.retry_reason=refused (HTTP 429) error.type=429]
	//     attempt [http.request.resend_count=1 http.response.status_code=200 creative.verdict=answered creative.retry=false]
	//   generate_content audio/text-to-music [gen_ai.operation.name=generate_content gen_ai.output.type=music creative.operation=audio/text-to-music http.response.status_code=502 creative.verdict=unknown creative.attempts=1 error.type=outcome_unknown]
	//     attempt [http.request.resend_count=0 http.response.status_code=502 creative.verdict=unknown creative.retry=false creative.retry_reason=outcome unknown: not sent again, the service may have done the work error.type=outcome_unknown]
	//   generate_content text/writer-tool [gen_ai.operation.name=generate_content gen_ai.output.type=text creative.operation=text/writer-tool http.response.status_code=200 creative.verdict=answered creative.attempts=1]
	//     attempt [http.request.resend_count=0 http.response.status_code=200 creative.verdict=answered creative.retry=false]
}
