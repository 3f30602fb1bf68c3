// Command tracing shows OpenTelemetry spans for every attempt of a
// creative-go call, through creative.WithMiddleware, printed by the stdout
// exporter. It runs against the SDK's built-in fake service, so it needs no
// key and no network:
//
//	cd examples/tracing && go run .
//
// The fake fails the first attempt with a 503, so the call is retried and
// its span has two attempt spans under it, each with its status code, the
// answer's request id when there is one, and the W3C traceparent header
// that carried the trace to the service.
//
// This example is a module of its own so that OpenTelemetry stays out of
// the SDK's go.mod.
//
// Middleware runs once per attempt, after the rate limiter and the
// client-wide pause, and sees the request exactly as it goes out. If you
// already trace HTTP with otelhttp, you can give the Client an instrumented
// transport instead:
//
//	c, err := creative.New(creative.WithHTTPClient(&http.Client{
//		Transport: otelhttp.NewTransport(http.DefaultTransport),
//	}))
//
// otelhttp then makes a span per round trip (redirects included) with its
// own naming; the middleware below makes exactly one per attempt.
//
// For spans and metrics in the OpenTelemetry GenAI conventions (a span per
// call, one per attempt with its pay-once verdict, durations, calls by
// verdict, cost), use the module github.com/creativegen/creative-go/otel
// (docs/telemetry.md) instead.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
)

// Tracing returns middleware that wraps each attempt in a client span, a
// child of the span in the call's context, and passes the trace on in the
// request's traceparent header. The span ends when the SDK has read and
// closed the answer's body.
func Tracing(tracer trace.Tracer, propagator propagation.TextMapPropagator) creative.Middleware {
	return func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
		ctx, span := tracer.Start(req.Context(), "creative "+req.Method+" "+req.URL.Path,
			trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(
				semconv.HTTPRequestMethodKey.String(req.Method),
				semconv.URLFull(req.URL.String()), // the key travels in a header, never in the URL
				semconv.ServerAddress(req.URL.Hostname()),
			))
		req = req.WithContext(ctx)
		propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))

		resp, err := next(req)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.End()
			return nil, err
		}
		span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
		if id := requestID(resp.Header); id != "" {
			span.SetAttributes(attribute.String("creative.request_id", id))
		}
		if resp.StatusCode >= 400 {
			span.SetStatus(codes.Error, resp.Status)
		}
		resp.Body = &endOnClose{ReadCloser: resp.Body, span: span}
		return resp, nil
	}
}

// requestID reads the headers that usually carry a request id, as
// creative.APIError does.
func requestID(h http.Header) string {
	for _, k := range []string{"X-Request-Id", "X-Amzn-Requestid", "X-Amz-Cf-Id", "Cf-Ray"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// endOnClose ends an attempt's span when its body is closed.
type endOnClose struct {
	io.ReadCloser
	span trace.Span
	once sync.Once
}

func (b *endOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.span.End() })
	return err
}

func main() {
	log.SetFlags(0)
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(out io.Writer) error {
	ctx := context.Background()

	// Spans go to out as they end, one pretty-printed JSON object each.
	exporter, err := stdouttrace.New(stdouttrace.WithWriter(out), stdouttrace.WithPrettyPrint())
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSyncer(exporter),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("tracing-example"))),
	)
	defer func() { _ = tp.Shutdown(ctx) }()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	tracer := tp.Tracer("github.com/creativegen/creative-go/examples/tracing")

	// The fake service, which fails the first attempt so there is a retry
	// to see. With a real service: creative.New(creative.WithMiddleware(...)).
	srv := creativetest.NewServer()
	defer srv.Close()
	srv.Fail("image/generate-qr", creativetest.Fault{Status: http.StatusServiceUnavailable, Message: "warming up"})
	c := srv.Client(creative.WithMiddleware(Tracing(tracer, otel.GetTextMapPropagator())))
	defer c.CloseIdleConnections()

	ctx, span := tracer.Start(ctx, "make a QR code")
	qr, err := c.GenerateQR(ctx, creative.GenerateQRRequest{URL: "https://example.com", Prompt: "spring flowers"})
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	if err != nil {
		return err
	}

	traceID := span.SpanContext().TraceID()
	fmt.Fprintf(out, "\nThe call returned a %d-byte %s in trace %s.\n", len(qr.Data), qr.ContentType(), traceID)
	for i, r := range srv.Requests() {
		fmt.Fprintf(out, "attempt %d: the service answered %d and saw traceparent %s\n", i+1, r.Status, r.Header.Get("Traceparent"))
	}
	return nil
}
